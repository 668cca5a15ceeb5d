#!/usr/bin/env python3
"""Opens many idle connections to a service on 127.0.0.1 and measures it meanwhile.

The attack an outside tester made on the example service: connections that
send nothing, enough to take every descriptor the service has. While they
are held this client asks for one path on a new connection (how long the
answer takes), reads the service's CPU time from /proc/PID/stat (does it
spin?), counts the flood's connections the service has closed, and
optionally waits for it to close them all (its header timeout).

    idle-flood.py --port 8080 --pid 1234 --connections 2000 --hold 5 [--wait-closed 15]

Prints one JSON object. Loopback only; every wait is bounded. Needs a
descriptor limit above the connection count: the soft limit is raised to
the hard one, and the hard one too when run as root.
"""
import argparse, errno, json, os, resource, select, socket, sys, time


def cpu_seconds(pid):
    """utime + stime of pid, in seconds (fields 14 and 15 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def probe(port, path, timeout):
    """GET path on a new connection: (status or None, seconds)."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(max(0.01, timeout - (time.monotonic() - start)))
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None
    except OSError:
        status = None
    return status, time.monotonic() - start


def closed_count(socks):
    """How many of socks the peer has closed (EOF or reset), without blocking."""
    poller = select.poll()
    for s in socks:
        poller.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
    ready = {fd for fd, _ in poller.poll(0)}
    closed = 0
    for s in socks:
        if s.fileno() not in ready:
            continue
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    return closed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the service's process, for its CPU time")
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--hold", type=float, default=5, help="seconds to hold them while measuring CPU")
    parser.add_argument("--path", default="/healthz", help="what the other client asks for")
    parser.add_argument("--probe-port", type=int, help="where the other client asks (default --port)")
    parser.add_argument("--wait-closed", type=float, default=0,
                        help="then wait up to this many seconds for the service to close them all")
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.connections + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            if hard == resource.RLIM_INFINITY or hard >= want:
                resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            else:
                resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))  # root only
        except (ValueError, OSError):
            sys.exit(f"idle-flood: the descriptor limit ({soft}, hard {hard}) is below {want}")

    result = {"connections": args.connections}
    cpu0 = cpu_seconds(args.pid)
    start = time.monotonic()
    socks, refused = [], 0
    for _ in range(args.connections):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)  # a service that stops accepting fills its backlog: connect then waits
        try:
            s.connect(("127.0.0.1", args.port))
            socks.append(s)
        except OSError:
            refused += 1
            s.close()
        if time.monotonic() - start > 60:
            break
    result["opened"] = len(socks)
    result["failed_to_connect"] = refused
    result["open_seconds"] = round(time.monotonic() - start, 3)
    result["cpu_while_opening"] = round(cpu_seconds(args.pid) - cpu0, 3)

    # The other client, while they are held.
    status, seconds = probe(args.probe_port or args.port, args.path, timeout=5)
    result["probe_status"] = status
    result["probe_seconds"] = round(seconds, 3)

    # The service's CPU over the hold (ticks of 10 ms: 0.01 s resolution).
    cpu1 = cpu_seconds(args.pid)
    held = time.monotonic()
    time.sleep(args.hold)
    result["cpu_while_held"] = round(cpu_seconds(args.pid) - cpu1, 3)
    result["held_seconds"] = round(time.monotonic() - held, 3)
    result["closed_by_service_after_hold"] = closed_count(socks)
    status, seconds = probe(args.probe_port or args.port, args.path, timeout=5)
    result["probe_after_hold_status"] = status
    result["probe_after_hold_seconds"] = round(seconds, 3)

    if args.wait_closed > 0:
        deadline = time.monotonic() + args.wait_closed
        closed = closed_count(socks)
        while closed < len(socks) and time.monotonic() < deadline:
            time.sleep(0.2)
            closed = closed_count(socks)
        result["closed_by_service_at_end"] = closed
        result["seconds_since_opened_at_end"] = round(time.monotonic() - start, 3)
    for s in socks:
        s.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
