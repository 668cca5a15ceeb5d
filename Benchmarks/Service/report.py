#!/usr/bin/env python3
"""Summarises a results folder of Benchmarks/Service/run: prints the table,
writes results.json and summary.md (for BENCHMARKS.md) into the folder.

    python3 report.py RESULTS_DIR

Per server, concurrency and phase (cold, warm), over the runs:
- req/s: the median run, and every run's;
- p50 and p99 of all requests: the median over the runs of each run's own;
- p50 and p99 of first fetches: pooled, all runs' first fetches together
  (one run has only S of them, too few for a p99 of its own);
- p99/p50: of all requests (the median run's ratio) and of the pooled first
  fetches;
- peak RSS: the largest of the runs (the sampled sum over the server's
  process tree), and the median; idle RSS: the median, before the cold runs;
- errors: the sum over the runs (non-200 answers, connection failures and
  timeouts); server CPU per request and the load generator's CPU: medians.
The memory-budget hook: where our service answered GET /budget, its terms
are printed beside our idle and peak RSS (see README.md).
"""

import glob
import json
import math
import os
import statistics
import sys


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    k = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[k - 1]


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, digits=1):
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


BUDGET_KEYS = [  # (label, accepted keys) of GET /budget
    ("documented budget", ["budget_bytes", "memory_budget_bytes", "budget"]),
    ("decoders", ["decoders", "decoder_count", "max_concurrent_decodes"]),
    ("largest admitted decode buffer", ["largest_decode_buffer_bytes", "max_decode_buffer_bytes",
                                        "largest_admitted_decode_buffer_bytes"]),
]


def budget_terms(doc):
    terms = {}
    for label, keys in BUDGET_KEYS:
        for k in keys:
            if isinstance(doc.get(k), (int, float)):
                terms[label] = doc[k]
                break
    return terms


def main():
    folder = sys.argv[1]
    meta = {}
    if os.path.exists(os.path.join(folder, "meta.json")):
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
    groups = {}
    for path in sorted(glob.glob(os.path.join(folder, "*-c*-r*-*.json"))):
        if path.endswith(".budget.json"):
            continue
        with open(path) as f:
            doc = json.load(f)
        s = doc["summary"]
        idx = doc["fields"].index
        first_lat = [r[idx("latency_s")] for r in doc["records"] if r[idx("first")]]
        all_lat = [r[idx("latency_s")] for r in doc["records"]]
        key = (s["server_name"], s["concurrency"], s["phase"])
        groups.setdefault(key, []).append((s, first_lat, all_lat, path))

    rows = []
    for (server, c, phase), runs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        runs.sort(key=lambda x: x[0]["run"])
        ss = [x[0] for x in runs]
        pooled_first = sorted(v for x in runs for v in x[1])
        pooled_all = sorted(v for x in runs for v in x[2])
        fp50, fp99 = percentile(pooled_first, 50), percentile(pooled_first, 99)
        srv = [s.get("server") or {} for s in ss]
        peak = [x.get("peak_rss_kb") for x in srv if x.get("peak_rss_kb") is not None]
        rows.append(dict(
            server=server, concurrency=c, phase=phase, runs=len(ss),
            req_per_s=med([s["req_per_s"] for s in ss]), req_per_s_runs=[s["req_per_s"] for s in ss],
            p50_ms=med([s["all"].get("p50_ms") for s in ss]), p99_ms=med([s["all"].get("p99_ms") for s in ss]),
            p99_over_p50=med([s["all"].get("p99_over_p50") for s in ss]),
            pooled_all_p50_ms=round(percentile(pooled_all, 50) * 1e3, 3) if pooled_all else None,
            pooled_all_p99_ms=round(percentile(pooled_all, 99) * 1e3, 3) if pooled_all else None,
            first_n=len(pooled_first),
            first_p50_ms=round(fp50 * 1e3, 3) if fp50 else None, first_p99_ms=round(fp99 * 1e3, 3) if fp99 else None,
            first_p99_over_p50=round(fp99 / fp50, 2) if fp50 else None,
            peak_rss_mb_max=max(peak) / 1024 if peak else None, peak_rss_mb_median=med(peak) / 1024 if peak else None,
            idle_rss_mb=(med([x.get("idle_rss_kb") for x in srv]) or 0) / 1024 if srv and srv[0] else None,
            hwm_sum_mb_max=max((x.get("hwm_sum_kb") or 0) for x in srv) / 1024 if srv else None,
            errors=sum(s["errors"] for s in ss), non_jpeg_200=sum(s["non_jpeg_200"] for s in ss),
            server_cpu_ms_per_req=med([x.get("cpu_ms_per_request") for x in srv]),
            loadgen_cpu_pct=med([s["loadgen"]["cpu_pct_of_one_core"] for s in ss]),
            loadgen_us_per_req=med([s["loadgen"]["cpu_us_per_request"] for s in ss]),
            files=[os.path.basename(x[3]) for x in runs],
        ))

    # The memory-budget hook: the last /budget our service served per concurrency.
    budgets = {}
    for row in rows:
        if row["server"] != "ours":
            continue
        files = sorted(glob.glob(os.path.join(folder, f"ours-c{row['concurrency']}-r*-*.budget.json")))
        if not files:
            continue
        try:
            with open(files[-1]) as f:
                terms = budget_terms(json.load(f))
        except (OSError, ValueError):
            continue
        if len(terms) == len(BUDGET_KEYS):
            budgets.setdefault(row["concurrency"], terms)

    header = (f"{'c':>3} {'phase':<5} {'server':<8} {'runs':>4} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'p99/p50':>7} {'1st p50':>8} {'1st p99':>8} {'1st x':>6} {'peak MB':>8} {'idle MB':>7} "
              f"{'err':>4} {'CPU ms/req':>10} {'lg CPU%':>7}")
    print()
    print(f"{meta.get('requests', '?')} requests over {meta.get('sources', '?')} sources; "
          f"first-fetch percentiles pooled over the runs; origin: {meta.get('origin', '?')}")
    print(header)
    for r in rows:
        print(f"{r['concurrency']:>3} {r['phase']:<5} {r['server']:<8} {r['runs']:>4} {fmt(r['req_per_s']):>8} "
              f"{fmt(r['p50_ms']):>8} {fmt(r['p99_ms']):>8} {fmt(r['p99_over_p50'], 2):>7} "
              f"{fmt(r['first_p50_ms']):>8} {fmt(r['first_p99_ms']):>8} {fmt(r['first_p99_over_p50'], 2):>6} "
              f"{fmt(r['peak_rss_mb_max'], 0):>8} {fmt(r['idle_rss_mb'], 0):>7} {r['errors']:>4} "
              f"{fmt(r['server_cpu_ms_per_req'], 2):>10} {fmt(r['loadgen_cpu_pct']):>7}")
    for r in rows:
        if len(r["req_per_s_runs"]) > 1:
            print(f"  c={r['concurrency']} {r['phase']} {r['server']}: req/s by run "
                  + ", ".join(f"{v:.1f}" for v in r["req_per_s_runs"]))

    budget_lines = []
    for c, terms in sorted(budgets.items()):
        ours_rows = [r for r in rows if r["server"] == "ours" and r["concurrency"] == c]
        idle = med([r["idle_rss_mb"] for r in ours_rows if r["phase"] == "cold"])
        peak = max((r["peak_rss_mb_max"] or 0) for r in ours_rows)
        b = terms["documented budget"] / 2**20
        n = terms["decoders"]
        buf = terms["largest admitted decode buffer"] / 2**20
        bound = b + n * buf + (idle or 0)
        budget_lines.append(
            f"c={c}: budget {b:.1f} MB + decoders {n} x largest admitted decode buffer {buf:.1f} MB "
            f"+ idle RSS {fmt(idle)} MB = {bound:.1f} MB; peak RSS {peak:.1f} MB: "
            f"{'within' if peak <= bound else 'OVER'}")
    if budget_lines:
        print("\nmemory budget (GET /budget):")
        for line in budget_lines:
            print("  " + line)
    metrics = sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "*.metrics.txt")))
    if metrics:
        print(f"\n/metrics saved after each of our runs: {len(metrics)} files ({metrics[0]} ...)")

    ratios = []
    for c in sorted({r["concurrency"] for r in rows}):
        for phase in ("cold", "warm"):
            o = next((r for r in rows if (r["server"], r["concurrency"], r["phase"]) == ("ours", c, phase)), None)
            t = next((r for r in rows if (r["server"], r["concurrency"], r["phase"]) == ("thumbor", c, phase)), None)
            if o and t and t["req_per_s"] and o["p99_ms"]:
                ratios.append(dict(concurrency=c, phase=phase,
                                   req_per_s=round(o["req_per_s"] / t["req_per_s"], 2),
                                   p99=round(o["p99_ms"] / t["p99_ms"], 2),
                                   first_p99=round(o["first_p99_ms"] / t["first_p99_ms"], 2)
                                   if o["first_p99_ms"] and t["first_p99_ms"] else None,
                                   peak_rss=round(o["peak_rss_mb_max"] / t["peak_rss_mb_max"], 2)
                                   if o["peak_rss_mb_max"] and t["peak_rss_mb_max"] else None))
    if ratios:
        print("\nours / thumbor (req/s: higher is better; p99 and RSS: lower is better):")
        for x in ratios:
            print(f"  c={x['concurrency']} {x['phase']}: req/s x{x['req_per_s']}, p99 x{x['p99']}, "
                  f"first-fetch p99 x{x['first_p99']}, peak RSS x{x['peak_rss']}")

    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows, ours_over_thumbor=ratios, budget=budget_lines), f, indent=1)

    md = []
    if "standin.py" in (meta.get("ours_cmd") or ""):
        md.append("(A harness test: \"ours\" is standin.py, a Python stand-in, not the service.)\n")
    md.append(f"**Service benchmark** ({meta.get('date', '')}, commit {meta.get('commit', '?')}): "
              f"{meta.get('requests')} requests over {meta.get('sources')} JPEG sources of 1-12 MP "
              f"from {meta.get('origin')} on 127.0.0.1, {meta.get('runs')} runs per row, servers alternating, "
              f"each run cold (restarted, caches emptied) then warm (same requests, same server). "
              f"thumbor {meta.get('thumbor')}. Latency percentiles of all requests: the median of the runs'; "
              f"of first fetches: pooled over the runs. Peak RSS: the largest run's, summed over the "
              f"server's processes.\n")
    md.append("| c | phase | server | req/s (median) | p50 ms | p99 ms | p99/p50 | first p50 ms | first p99 ms "
              "| first p99/p50 | peak RSS MB | idle RSS MB | errors | server CPU ms/req |")
    md.append("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        md.append(f"| {r['concurrency']} | {r['phase']} | {r['server']} | {fmt(r['req_per_s'])} | {fmt(r['p50_ms'])} "
                  f"| {fmt(r['p99_ms'])} | {fmt(r['p99_over_p50'], 2)} | {fmt(r['first_p50_ms'])} "
                  f"| {fmt(r['first_p99_ms'])} | {fmt(r['first_p99_over_p50'], 2)} | {fmt(r['peak_rss_mb_max'], 0)} "
                  f"| {fmt(r['idle_rss_mb'], 0)} | {r['errors']} | {fmt(r['server_cpu_ms_per_req'], 2)} |")
    md.append("")
    md.append("req/s by run: " + "; ".join(
        f"c={r['concurrency']} {r['phase']} {r['server']}: " + ", ".join(f"{v:.1f}" for v in r["req_per_s_runs"])
        for r in rows))
    if ratios:
        md.append("")
        md.append("| c | phase | ours/thumbor req/s | p99 | first-fetch p99 | peak RSS |")
        md.append("|---:|---|---:|---:|---:|---:|")
        for x in ratios:
            md.append(f"| {x['concurrency']} | {x['phase']} | {x['req_per_s']} | {x['p99']} | {x['first_p99']} "
                      f"| {x['peak_rss']} |")
    if budget_lines:
        md.append("")
        md.append("Memory budget: " + "; ".join(budget_lines))
    lg = med([r["loadgen_cpu_pct"] for r in rows])
    lg_max = max((r["loadgen_cpu_pct"] or 0) for r in rows) if rows else None
    md.append("")
    md.append(f"Load generator's own CPU: median {fmt(lg)}% of one core over the rows, "
              f"{fmt(lg_max)}% in the busiest ({fmt(med([r['loadgen_us_per_req'] for r in rows]), 0)} us per "
              f"request, median).")
    with open(os.path.join(folder, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"\nwrote {os.path.join(folder, 'results.json')} and summary.md")


if __name__ == "__main__":
    main()
