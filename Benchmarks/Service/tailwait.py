#!/usr/bin/env python3
"""Where our service's time goes, per stage, from the /metrics saved after each
of its passes (LoaderMetrics' timers, Prometheus text): for each phase and
concurrency, pooled over the runs, the count, mean and p99 (the upper bound of
the histogram bucket holding the 99th percentile) of the queue wait, the disk
read (hit and miss), the transfer, the decode (decoding, processing and the
store, to the delivery) and the whole request.

    Benchmarks/Service/tailwait.py RESULTS_DIR

The loader's timers cover the requests that went through its engine; answers
served as stored bytes (EncodedImage.isStoredEncoding) read the disk without
an event and are not in them.
"""
import collections
import glob
import os
import re
import sys

LINE = re.compile(r'^(asyncimage_[a-z_]+?)_(bucket|sum|count)(\{[^}]*\})? ([0-9.e+-]+|\+Inf)$')
STAGES = [
    ("queue wait", "asyncimage_queue_wait_seconds", ""),
    ("disk read, hit", "asyncimage_disk_read_seconds", 'hit="true"'),
    ("disk read, miss", "asyncimage_disk_read_seconds", 'hit="false"'),
    ("transfer", "asyncimage_transfer_seconds", ""),
    ("decode", "asyncimage_decode_seconds", ""),
    ("request", "asyncimage_request_seconds", 'outcome="success"'),
]


def parse(path):
    """{(name, labels without le): {"sum": s, "count": n, "buckets": {le: n}}}"""
    out = collections.defaultdict(lambda: {"sum": 0.0, "count": 0, "buckets": {}})
    for line in open(path):
        m = LINE.match(line.strip())
        if not m:
            continue
        name, kind, labels, value = m.groups()
        labels = (labels or "{}")[1:-1]
        le = None
        parts = [p for p in labels.split(",") if p]
        rest = []
        for p in parts:
            if p.startswith("le="):
                le = p[4:-1]
            else:
                rest.append(p)
        key = (name, ",".join(rest))
        if kind == "bucket":
            out[key]["buckets"][float("inf") if le == "+Inf" else float(le)] = float(value)
        else:
            out[key][kind] = float(value)
    return out


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else "."
    groups = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(results, "ours-c*-r*-*.metrics.txt"))):
        m = re.search(r"ours-c(\d+)-r\d+-(cold|warm)\.metrics\.txt$", path)
        if m:
            groups[(int(m.group(1)), m.group(2))].append(parse(path))
    if not groups:
        print("no ours-*.metrics.txt in", results)
        return
    print("| concurrency | phase | stage | count | mean ms | p99 ms (bucket bound) |")
    print("|---|---|---|---|---|---|")
    for (conc, phase) in sorted(groups, key=lambda k: (k[0], k[1] != "cold")):
        # /metrics is cumulative over a server's life: a warm pass's file holds
        # its cold pass too, so warm figures are the difference.
        runs = groups[(conc, phase)]
        colds = groups.get((conc, "cold"), []) if phase == "warm" else []
        for label, name, labels in STAGES:
            total = {"sum": 0.0, "count": 0.0, "buckets": collections.Counter()}
            for i, run in enumerate(runs):
                h = run.get((name, labels))
                if not h:
                    continue
                base = colds[i].get((name, labels)) if i < len(colds) else None
                total["sum"] += h["sum"] - (base["sum"] if base else 0)
                total["count"] += h["count"] - (base["count"] if base else 0)
                for le, n in h["buckets"].items():
                    total["buckets"][le] += n - (base["buckets"].get(le, 0) if base else 0)
            n = total["count"]
            if n <= 0:
                continue
            p99 = next((le for le in sorted(total["buckets"]) if total["buckets"][le] >= 0.99 * n), float("inf"))
            p99s = "over 10 s" if p99 == float("inf") else f"{p99 * 1000:.0f}"
            print(f"| {conc} | {phase} | {label} | {int(n)} | {total['sum'] / n * 1000:.1f} | {p99s} |")


if __name__ == "__main__":
    main()
