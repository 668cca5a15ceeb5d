#!/usr/bin/env python3
"""Fallback origin for the sources when nginx is not installed: a threaded
HTTP/1.1 keep-alive file server on 127.0.0.1 (standard library only), files
sent with sendfile, Content-Length and Cache-Control: max-age=3600.

    python3 origin.py DIR PORT

nginx (Debian's package) is preferred by `run`: it costs less CPU, which
here is taken from the services under test.
"""

import http.server
import os
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."

    def log_message(self, *args):
        pass

    def do_GET(self, head=False):
        name = os.path.basename(self.path.split("?", 1)[0])
        path = os.path.join(self.root, name)
        try:
            f = open(path, "rb")
        except OSError:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg" if name.endswith(".jpg") else "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("Cache-Control", "max-age=3600")
            self.end_headers()
            if not head:
                self.wfile.flush()
                self.connection.sendfile(f)

    def do_HEAD(self):
        self.do_GET(head=True)


def main():
    root, port = sys.argv[1], int(sys.argv[2])
    Handler.root = os.path.abspath(root)
    http.server.ThreadingHTTPServer.request_queue_size = 256  # the listen backlog, set before bind
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
