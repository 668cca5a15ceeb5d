#!/usr/bin/env python3
"""A stand-in for the Swift thumbnail service, to test the harness before the
service exists (`run --standin`). It speaks the service's protocol, and
nothing here is measured for the issue:

    GET /thumb?url=<percent-encoded>&w=W&h=H&mode=fit|fill&sig=<hex>
        sig = HMAC-SHA256(THUMB_KEY, "url=...&w=...&h=...&mode=...") over the
        query as sent, up to "&sig=" -> 403 when wrong.
    GET /metrics   plain text counters and where time went (queue, transfer, decode)
    GET /budget    JSON: the memory budget terms the benchmark prints

    python standin.py --port P --cache-dir D   (needs Pillow)

Threaded (one thread per connection), decodes limited to 2 at a time,
Pillow's draft mode (DCT scaling) then a Lanczos resize, JPEG quality 85;
thumbnails cached on disk under --cache-dir.
"""

import argparse
import hashlib
import hmac
import http.client
import http.server
import io
import json
import os
import threading
import time
import urllib.parse

from PIL import Image, ImageOps

DECODERS = 2
decode_slots = threading.Semaphore(DECODERS)
lock = threading.Lock()
metrics = dict(requests=0, cache_hits=0, fetches=0, errors=0, queue_s=0.0, transfer_s=0.0, decode_s=0.0,
               largest_decode_buffer=0)
local = threading.local()


def fetch(url):
    u = urllib.parse.urlsplit(url)
    conn = getattr(local, "conn", None)
    for attempt in range(2):
        if conn is None:
            conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
            local.conn = conn
        try:
            conn.request("GET", u.path)
            r = conn.getresponse()
            data = r.read()
            return r.status, data
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = local.conn = None
    raise OSError("fetch failed")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    key = b""
    cache_dir = "."

    def log_message(self, *args):
        pass

    def reply(self, status, body, ctype="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/metrics":
            with lock:
                body = "".join(f"standin_{k} {v}\n" for k, v in metrics.items())
            return self.reply(200, body.encode())
        if path == "/budget":
            body = json.dumps(dict(budget_bytes=64 << 20, decoders=DECODERS,
                                   largest_decode_buffer_bytes=metrics["largest_decode_buffer"]))
            return self.reply(200, body.encode(), "application/json")
        if path != "/thumb":
            return self.reply(404, b"not found\n")
        with lock:
            metrics["requests"] += 1
        signed, _, sig = query.rpartition("&sig=")
        want = hmac.new(self.key, signed.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, sig):
            return self.reply(403, b"bad signature\n")
        q = urllib.parse.parse_qs(signed)
        url, w, h, mode = q["url"][0], int(q["w"][0]), int(q["h"][0]), q["mode"][0]
        cached = os.path.join(self.cache_dir, hashlib.sha256(signed.encode()).hexdigest() + ".jpg")
        try:
            with open(cached, "rb") as f:
                body = f.read()
            with lock:
                metrics["cache_hits"] += 1
            return self.reply(200, body, "image/jpeg")
        except OSError:
            pass
        t0 = time.monotonic()
        try:
            status, data = fetch(url)
        except OSError:
            status, data = 502, b""
        t1 = time.monotonic()
        if status != 200:
            with lock:
                metrics["errors"] += 1
            return self.reply(502, b"origin failed\n")
        decode_slots.acquire()
        t2 = time.monotonic()
        try:
            im = Image.open(io.BytesIO(data))
            im.draft("RGB", (w, h))
            im = ImageOps.exif_transpose(im)
            with lock:
                metrics["largest_decode_buffer"] = max(metrics["largest_decode_buffer"], im.width * im.height * 3)
            if mode == "fit":
                im.thumbnail((w, h), Image.LANCZOS)
            else:
                im = ImageOps.fit(im, (w, h), Image.LANCZOS)
            out = io.BytesIO()
            im.convert("RGB").save(out, "JPEG", quality=85)
            body = out.getvalue()
        finally:
            decode_slots.release()
        t3 = time.monotonic()
        with lock:
            metrics["fetches"] += 1
            metrics["transfer_s"] += t1 - t0
            metrics["queue_s"] += t2 - t1
            metrics["decode_s"] += t3 - t2
        tmp = f"{cached}.{threading.get_ident()}"
        with open(tmp, "wb") as f:
            f.write(body)
        os.replace(tmp, cached)
        self.reply(200, body, "image/jpeg")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cache-dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.cache_dir, exist_ok=True)
    Handler.key = os.environ.get("THUMB_KEY", "").encode()
    Handler.cache_dir = args.cache_dir
    http.server.ThreadingHTTPServer.request_queue_size = 256  # the listen backlog, set before bind
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
