#!/usr/bin/env python3
"""Load generator for the thumbnail service benchmark (standard library only).

Subcommands:

  urls   writes the request list (TSV: source, variant, URL) for one server:
         COUNT requests over S sources of a sources.py manifest, each source
         requested COUNT/S times in a few thumbnail variants, in a
         deterministic order in which each source's first request comes at a
         spread-out time (see `plan`).
  run    replays a request list at a fixed concurrency over HTTP/1.1
         keep-alive connections (one per concurrent client, asyncio
         protocols, no HTTP library), records every request, samples the
         server's memory, and prints and writes the summary (JSON).
  fetch  GET one URL into a file (the /metrics and /budget hooks); exit 1 on
         anything but a 200, printing nothing.

Every figure is defined in README.md beside this file.
"""

import argparse
import asyncio
import hashlib
import hmac
import json
import math
import os
import random
import resource
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request

try:  # optional: halves the load generator's CPU per request
    import uvloop
except ImportError:
    uvloop = None

# ---------------------------------------------------------------- the plan

# The thumbnail variants of one source, in the proportion they are asked
# for: a grid of 256x256 fits for most, a larger fit, and center-cropped
# fills (no smart cropping). Cycled when COUNT/S is not 10.
VARIANTS = [
    ("fit", 256, 256), ("fit", 256, 256), ("fit", 256, 256), ("fit", 256, 256),
    ("fit", 256, 256), ("fit", 256, 256), ("fit", 256, 256),
    ("fit", 640, 640),
    ("fill", 300, 200), ("fill", 300, 200),
]


def plan(names, count, seed, gap=8, spread=0.8):
    """[(source, mode, w, h)] in request order.

    Each source gets count/len(names) requests (the remainder to the first
    sources) in the VARIANTS mix, its first request's variant drawn at
    random. The sources are shuffled, and their first requests are placed
    evenly over the first `spread` of the list (one every
    spread*count/S positions), so first fetches are spread over the run,
    not bunched at its start. Every other position takes a repeat, drawn at
    random from the requests left of the sources whose first request is at
    least `gap` positions back (at concurrency 8 a repeat seldom overlaps its
    source's first fetch; at 32 some do, as in real traffic). When there is
    none, the next first request comes early: the list opens with `gap`
    first fetches, then keeps to the even spacing.
    """
    rnd = random.Random(seed)
    order = list(names)
    rnd.shuffle(order)
    s = len(order)
    per, extra = divmod(count, s)
    pending = []  # per source, in order: its requests, first one first
    for j, name in enumerate(order):
        k = per + (1 if j < extra else 0)
        variants = [VARIANTS[i % len(VARIANTS)] for i in range(k)]
        rnd.shuffle(variants)
        if variants:
            pending.append((name, variants))
    spacing = spread * count / max(1, len(pending))
    out = []
    introduced = []  # (position, name, remaining variants)
    eligible = []  # (name, variant) of sources introduced >= gap positions ago
    next_first = 0
    while len(out) < count and (next_first < len(pending) or eligible or introduced):
        pos = len(out)
        while introduced and introduced[0][0] <= pos - gap:
            _, name, rest = introduced.pop(0)
            eligible.extend((name, v) for v in rest)
        due = next_first < len(pending) and next_first <= pos / spacing
        while introduced and not introduced[0][2]:
            introduced.pop(0)
        if due or (not eligible and next_first < len(pending)):
            name, variants = pending[next_first]
            next_first += 1
            out.append((name,) + variants[0])
            introduced.append((pos, name, variants[1:]))
        elif eligible:
            i = rnd.randrange(len(eligible))
            eligible[i], eligible[-1] = eligible[-1], eligible[i]
            name, v = eligible.pop()
            out.append((name,) + v)
        else:
            # The last sources' repeats, not yet `gap` back: sooner.
            name, rest = introduced[0][1], introduced[0][2]
            out.append((name,) + rest.pop(0))
    return out


DEFAULT_OURS_TEMPLATE = "{base}/thumb?url={url}&w={w}&h={h}&mode={mode}&sig={sig}"
DEFAULT_OURS_SIGN = "url={url}&w={w}&h={h}&mode={mode}"


def thumbor_url(base, src, mode, w, h):
    # Unsafe (unsigned) URLs: a signed one would only add an HMAC-SHA1 per
    # request on thumbor's side. fit -> fit-in; fill -> resize and crop
    # (centered: smart cropping is off).
    if mode == "fit":
        return f"{base}/unsafe/fit-in/{w}x{h}/{src}"
    return f"{base}/unsafe/{w}x{h}/{src}"


def ours_url(base, src, mode, w, h, key, template, sign_template):
    fields = dict(base=base, url=urllib.parse.quote(src, safe=""), raw_url=src, w=w, h=h, mode=mode)
    canonical = sign_template.format(**fields)
    fields["sig"] = hmac.new(key.encode(), canonical.encode(), hashlib.sha256).hexdigest()
    return template.format(**fields)


def cmd_urls(args):
    with open(args.manifest) as f:
        names = [e["name"] for e in json.load(f)["files"]]
    if args.sources < len(names):
        # Spread over the whole set (every k-th), so a quick run still spans 1-12 MP.
        step = len(names) / args.sources
        names = [names[int(i * step)] for i in range(args.sources)]
    origin = args.origin.rstrip("/")
    base = args.base.rstrip("/")
    lines = []
    for name, mode, w, h in plan(names, args.count, args.seed):
        src = f"{origin}/{name}"
        if args.target == "thumbor":
            url = thumbor_url(base, src, mode, w, h)
        else:
            url = ours_url(base, src, mode, w, h, args.key, args.template, args.sign_template)
        lines.append(f"{name}\t{mode}:{w}x{h}\t{url}\n")
    with open(args.out, "w") as f:
        f.writelines(lines)
    print(f"{len(lines)} requests over {len(names)} sources -> {args.out}")
    return 0


# ------------------------------------------------------ the server's memory

def proc_children(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids.extend(int(x) for x in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return kids


def proc_tree(root):
    seen, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo.extend(proc_children(p))
    return seen


def status_kb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def cpu_ticks(pid):
    """utime+stime of a process (its live threads), in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12])
    except (OSError, ValueError, IndexError):
        return 0


class RSSSampler(threading.Thread):
    """Sums VmRSS over the server's process tree every `interval` s (the tree
    re-read every second), keeping the peak and a series. Resident pages
    shared by forked workers count once per process (as `ps` would)."""

    def __init__(self, pid, interval=0.05):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.stop_event = threading.Event()
        self.peak_kb, self.series, self.tree = 0, [], proc_tree(pid)
        self.t0 = time.monotonic()

    def sample(self):
        return sum(status_kb(p, "VmRSS:") for p in self.tree)

    def run(self):
        last_tree = time.monotonic()
        while not self.stop_event.is_set():
            now = time.monotonic()
            if now - last_tree >= 1.0:
                self.tree, last_tree = proc_tree(self.pid), now
            kb = self.sample()
            self.peak_kb = max(self.peak_kb, kb)
            self.series.append((round(now - self.t0, 3), kb))
            self.stop_event.wait(self.interval)

    def stop(self):
        self.stop_event.set()
        self.join()
        kb = self.sample()
        self.peak_kb = max(self.peak_kb, kb)


# ------------------------------------------------------------- the client

class HTTPConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one request in flight at a time.
    Parses the status line and headers, then counts the body (Content-Length
    or chunked) without keeping it, but for its first bytes."""

    def __init__(self, loop):
        self.loop = loop
        self.transport = None
        self.closed = False
        self.waiter = None
        self.reset()

    def reset(self):
        self.head = bytearray()
        self.status = 0
        self.remaining = None  # body bytes still to come (Content-Length)
        self.chunked = False
        self.chunk_buf = bytearray()
        self.chunk_left = 0
        self.body_len = 0
        self.prefix = b""
        self.keep_alive = True
        self.t_first = None

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc):
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError(f"connection closed: {exc}"))

    def request(self, raw):
        self.reset()
        self.waiter = self.loop.create_future()
        self.transport.write(raw)
        return self.waiter

    def finish(self):
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((self.status, self.body_len, self.prefix, self.keep_alive, self.t_first))

    def take_body(self, data):
        if len(self.prefix) < 4:
            self.prefix = (self.prefix + bytes(data[:4]))[:4]
        self.body_len += len(data)

    def data_received(self, data):
        if self.t_first is None:
            self.t_first = time.perf_counter()
        if self.status == 0:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = bytes(self.head[:end]).split(b"\r\n")
            rest = bytes(self.head[end + 4:])
            parts = lines[0].split(b" ", 2)
            try:
                self.status = int(parts[1])
            except (IndexError, ValueError):
                self.status = -1
            length = None
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                value = value.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding" and b"chunked" in value:
                    self.chunked = True
                elif name == b"connection" and value == b"close":
                    self.keep_alive = False
            if parts[0] == b"HTTP/1.0":
                self.keep_alive = False
            if not self.chunked:
                self.remaining = length if length is not None else (0 if self.status in (204, 304) else None)
                if self.remaining is None:
                    self.keep_alive = False  # body runs to the connection's end
                    self.remaining = 1 << 62
            data = rest
        if self.chunked:
            self.chunked_data(data)
            return
        if data:
            take = data[: self.remaining]
            self.take_body(take)
            self.remaining -= len(take)
        if self.remaining == 0:
            self.finish()

    def chunked_data(self, data):
        buf = self.chunk_buf
        buf += data
        while True:
            if self.chunk_left > 0:
                take = buf[: self.chunk_left]
                self.take_body(take)
                self.chunk_left -= len(take)
                del buf[: len(take)]
                if self.chunk_left > 0:
                    return
                self.chunk_left = -2  # its CRLF
            if self.chunk_left == -2:
                if len(buf) < 2:
                    return
                del buf[:2]
                self.chunk_left = 0
            end = buf.find(b"\r\n")
            if end < 0:
                return
            size = int(bytes(buf[:end]).split(b";")[0], 16)
            del buf[: end + 2]
            if size == 0:
                # Trailers end with an empty line; assume none.
                self.finish()
                return
            self.chunk_left = size


def percentile(sorted_values, p):
    """Nearest rank: the smallest value with at least p% of values at or below it."""
    if not sorted_values:
        return None
    k = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[k - 1]


def latency_stats(values):
    v = sorted(values)
    if not v:
        return dict(n=0)
    p50, p99 = percentile(v, 50), percentile(v, 99)
    return dict(n=len(v), p50_ms=round(p50 * 1e3, 3), p90_ms=round(percentile(v, 90) * 1e3, 3),
                p99_ms=round(p99 * 1e3, 3), max_ms=round(v[-1] * 1e3, 3),
                mean_ms=round(sum(v) / len(v) * 1e3, 3), p99_over_p50=round(p99 / p50, 2) if p50 else None)


async def replay(entries, host, port, concurrency, timeout):
    loop = asyncio.get_running_loop()
    records = [None] * len(entries)
    next_index = 0
    seen_sources = set()
    first_flags = []
    for source, _, _ in entries:
        first_flags.append(source not in seen_sources)
        seen_sources.add(source)
    host_header = f"{host}:{port}".encode()
    raws = [b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host_header +
            b"\r\nUser-Agent: svcbench-loadgen\r\nAccept: image/jpeg,*/*\r\n\r\n" for _, _, path in entries]
    connects = 0

    async def connect():
        nonlocal connects
        connects += 1
        _, proto = await loop.create_connection(lambda: HTTPConnection(loop), host, port)
        return proto

    # The connections are opened before the clock starts (a client's
    # keep-alive pool, warm); a reconnect after a close counts in its request.
    pool = []
    for _ in range(concurrency):
        try:
            pool.append(await connect())
        except OSError:
            pool.append(None)
    t_origin = time.perf_counter()

    async def worker(wid):
        nonlocal next_index
        conn = pool[wid]
        while next_index < len(entries):
            i = next_index
            next_index += 1
            t0 = time.perf_counter()
            status, nbytes, prefix, t_first, error = 0, 0, b"", None, None
            for attempt in (1, 2):
                reused = conn is not None and not conn.closed
                try:
                    if not reused:
                        conn = await connect()
                    status, nbytes, prefix, keep, t_first = await asyncio.wait_for(conn.request(raws[i]), timeout)
                    if not keep:
                        conn.transport.close()
                        conn = None
                    error = None
                    break
                except (OSError, ConnectionError, asyncio.TimeoutError, ValueError) as e:
                    error = type(e).__name__ + (f": {e}" if str(e) else "")
                    idle_close = reused and isinstance(e, ConnectionError) and conn.t_first is None
                    if conn is not None and conn.transport is not None:
                        conn.transport.close()
                    conn = None
                    # A kept-alive connection the server closed while idle: once
                    # more on a new one, as HTTP clients do. Anything else counts.
                    if not idle_close:
                        break
            t1 = time.perf_counter()
            records[i] = (i, round(t0 - t_origin, 6), round(t1 - t0, 6),
                          round(t_first - t0, 6) if t_first else None, status, nbytes,
                          prefix[:2] == b"\xff\xd8", first_flags[i], wid, error)
        if conn is not None and conn.transport is not None:
            conn.transport.close()

    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return records, time.perf_counter() - t_origin, connects


def tree_cpu_s(pids):
    return sum(cpu_ticks(p) for p in pids) / os.sysconf("SC_CLK_TCK")


def cmd_run(args):
    entries = []
    with open(args.urls) as f:
        for line in f:
            source, variant, url = line.rstrip("\n").split("\t")
            entries.append((source, variant, url))
    if args.limit:
        entries = entries[: args.limit]
    u = urllib.parse.urlsplit(entries[0][2])
    host, port = u.hostname, u.port or 80
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("loadgen: only loopback targets")
    paths = []
    for source, variant, url in entries:
        p = urllib.parse.urlsplit(url)
        paths.append((source, variant, p.path + ("?" + p.query if p.query else "")))

    sampler = None
    idle_kb = None
    tree_before = []
    cpu_before = 0.0
    if args.pid:
        tree_before = proc_tree(args.pid)
        idle_kb = sum(status_kb(p, "VmRSS:") for p in tree_before)
        cpu_before = tree_cpu_s(tree_before)
        sampler = RSSSampler(args.pid, args.rss_interval)
        sampler.start()

    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    runner = asyncio.run
    if args.loop == "uvloop" or (args.loop == "auto" and uvloop is not None):
        if uvloop is None:
            sys.exit("loadgen: uvloop is not installed")
        runner = uvloop.run
    records, wall, connects = runner(replay(paths, host, port, args.concurrency, args.timeout))
    ru1 = resource.getrusage(resource.RUSAGE_SELF)

    server = {}
    if sampler:
        sampler.stop()
        tree = proc_tree(args.pid)
        server = dict(
            pid=args.pid, processes=len(tree),
            idle_rss_kb=idle_kb, peak_rss_kb=sampler.peak_kb,
            hwm_sum_kb=sum(status_kb(p, "VmHWM:") for p in tree),
            cpu_s=round(tree_cpu_s(tree) - cpu_before, 3) if set(tree) == set(tree_before) else None,
        )
        if server["cpu_s"] is not None:
            server["cpu_ms_per_request"] = round(server["cpu_s"] * 1e3 / len(records), 2)

    lg_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    ok = [r for r in records if r[4] == 200 and r[9] is None]
    errors = [r for r in records if not (r[4] == 200 and r[9] is None)]
    lat_all = [r[2] for r in records]
    lat_first = [r[2] for r in records if r[7]]
    error_kinds = {}
    for r in errors:
        k = r[9] or f"HTTP {r[4]}"
        error_kinds[k] = error_kinds.get(k, 0) + 1
    summary = dict(
        label=args.label, server_name=args.server_name, phase=args.phase, run=args.run_index,
        concurrency=args.concurrency, requests=len(records), sources=len({e[0] for e in entries}),
        wall_s=round(wall, 3), req_per_s=round(len(records) / wall, 2),
        all=latency_stats(lat_all), first=latency_stats(lat_first),
        ok=len(ok), errors=len(errors), error_kinds=error_kinds,
        non_jpeg_200=sum(1 for r in ok if not r[6]),
        body_bytes=sum(r[5] for r in records), connections=connects,
        server=server,
        loadgen=dict(loop="uvloop" if runner is not asyncio.run else "asyncio", cpu_s=round(lg_cpu, 3), cpu_pct_of_one_core=round(100 * lg_cpu / wall, 1),
                     cpu_us_per_request=round(lg_cpu * 1e6 / len(records), 1),
                     max_rss_kb=ru1.ru_maxrss),
    )
    out = dict(summary=summary,
               fields=["index", "start_s", "latency_s", "ttfb_s", "status", "bytes", "jpeg", "first", "worker", "error"],
               records=records,
               variants=[e[1] for e in entries], sources_by_request=[e[0] for e in entries],
               rss_series_kb=sampler.series if sampler else [])
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, separators=(",", ":"))
    print(one_line(summary))
    return 0


def one_line(s):
    a, fst = s["all"], s["first"]
    srv = s.get("server") or {}
    mb = lambda kb: f"{kb / 1024:.0f}" if kb is not None else "-"
    return (f"{s['label'] or ''} c={s['concurrency']} {s['requests']} req {s['req_per_s']:.1f} req/s  "
            f"all p50 {a.get('p50_ms', 0):.1f} p99 {a.get('p99_ms', 0):.1f} ms (x{a.get('p99_over_p50')})  "
            f"first p50 {fst.get('p50_ms', 0):.1f} p99 {fst.get('p99_ms', 0):.1f} ms  "
            f"errors {s['errors']}  peak RSS {mb(srv.get('peak_rss_kb'))} MB (idle {mb(srv.get('idle_rss_kb'))})  "
            f"server CPU {srv.get('cpu_ms_per_request', '-')} ms/req  "
            f"loadgen CPU {s['loadgen']['cpu_s']:.2f} s ({s['loadgen']['cpu_pct_of_one_core']}% of a core, "
            f"{s['loadgen']['cpu_us_per_request']:.0f} us/req)")


def cmd_fetch(args):
    try:
        with urllib.request.urlopen(args.url, timeout=args.timeout) as r:
            if r.status != 200:
                return 1
            data = r.read()
    except Exception:
        return 1
    with open(args.out, "wb") as f:
        f.write(data)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    u = sub.add_parser("urls", help="write the request list for one server")
    u.add_argument("--manifest", required=True)
    u.add_argument("--origin", required=True, help="http://127.0.0.1:PORT of the origin")
    u.add_argument("--target", choices=["thumbor", "ours"], required=True)
    u.add_argument("--base", required=True, help="http://127.0.0.1:PORT of the service")
    u.add_argument("--count", type=int, default=2000)
    u.add_argument("--sources", type=int, default=200)
    u.add_argument("--seed", type=int, default=9)
    u.add_argument("--key", default=os.environ.get("THUMB_KEY", ""))
    u.add_argument("--template", default=os.environ.get("OURS_URL_TEMPLATE") or DEFAULT_OURS_TEMPLATE)
    u.add_argument("--sign-template", default=os.environ.get("OURS_SIGN_TEMPLATE") or DEFAULT_OURS_SIGN)
    u.add_argument("--out", required=True)

    r = sub.add_parser("run", help="replay a request list")
    r.add_argument("--urls", required=True)
    r.add_argument("--concurrency", type=int, required=True)
    r.add_argument("--pid", type=int, help="the server's pid: its process tree's memory and CPU are measured")
    r.add_argument("--timeout", type=float, default=120.0, help="per request, s")
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--rss-interval", type=float, default=0.05)
    r.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto",
                   help="event loop: uvloop when installed (auto), else asyncio's")
    r.add_argument("--label", default="")
    r.add_argument("--server-name", default="")
    r.add_argument("--phase", default="")
    r.add_argument("--run-index", type=int, default=0)
    r.add_argument("--out")

    fe = sub.add_parser("fetch", help="GET a URL into a file (exit 1 unless 200)")
    fe.add_argument("url")
    fe.add_argument("out")
    fe.add_argument("--timeout", type=float, default=10.0)

    args = ap.parse_args()
    return {"urls": cmd_urls, "run": cmd_run, "fetch": cmd_fetch}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
