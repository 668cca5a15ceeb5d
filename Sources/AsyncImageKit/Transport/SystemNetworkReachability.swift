import CCurl  // <sys/socket.h>'s SOCK_* constants, which the Glibc module does not export
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The kernel's word on whether the network can be reached: the default
/// ``NetworkReachability`` of every ``AsyncImageLoader``
/// (``AsyncImageLoader/Configuration/reachability``).
///
/// - **Reachable** when a route leads beyond this machine: up, not a
///   reject route, through a running interface other than loopback (it has
///   a carrier), to somewhere other than loopback, link-local or multicast
///   addresses. A blackhole route (interface `*`) leads nowhere. A default route counts, and so does a narrower one (a host
///   that reaches only its LAN, or a VPN's networks, is not offline). Read
///   from `/proc/net/route` and `/proc/net/ipv6_route` (the main table) and
///   the interfaces' flags (`SIOCGIFFLAGS`), in this process's network
///   namespace; when neither file can be read, reachable.
/// - **Watched** with a netlink socket (`NETLINK_ROUTE`, subscribed to
///   link, address and route changes, IPv4 and IPv6) on one thread of its
///   own, started by the first ``observe(_:)`` and asleep in `poll()`
///   until the kernel reports a change: an idle process stays idle. After
///   a change it waits until the kernel has been quiet for 100 ms (at most
///   a second), so a route deleted and added back during a DHCP renewal
///   is no change, then reads the routes again and calls the handlers if
///   the answer changed, or if it stays "reachable" through other routes
///   (another network: a loader that a transfer took offline tries
///   again). The routes each change is compared with are read by the first
///   ``observe(_:)``, after the socket is bound and before it returns, so a
///   caller that then reads ``isReachable`` misses no change. Where no
///   netlink socket can be opened (a sandbox that forbids it), nothing is
///   watched: handlers are never called, and ``isReachable`` still answers.
///   Handlers run on that one thread, for every observer: a loader only
///   changes its status there, and runs the rest on a queue of its own.
/// - **A guess**: a route does not prove that a server answers (a Wi-Fi
///   with a captive portal, a firewall), and no route does not prove that
///   none exists (policy routing tables, which `/proc/net/route` does not
///   show). The loader corrects a wrong word either way from its own
///   transfers (see ``AsyncImageLoader/networkStatus``).
public final class SystemNetworkReachability: NetworkReachability {
    /// The process's instance (its thread, once started, runs for the
    /// process's life).
    public static let shared = SystemNetworkReachability()

    /// Its handlers and its thread.
    let watcher: Watcher

    /// An instance whose watcher reads the routes with `readRoutes` (tests).
    init(readRoutes: @escaping @Sendable () -> Set<RouteTable.Route>?) {
        watcher = Watcher(readRoutes: readRoutes)
    }

    /// An instance with a watcher of its own (stopped when it is released).
    public init() {
        watcher = Watcher(readRoutes: { SystemNetworkReachability.readRoutes() })
    }

    deinit { watcher.stop() }

    /// Whether a route leads beyond this machine now (the routes are read
    /// at each call: a few small files, microseconds).
    public var isReachable: Bool { Self.readRoutes().map { !$0.isEmpty } ?? true }

    /// Calls `handler` with the new answer each time the routes change it,
    /// on this instance's watcher thread.
    public func observe(_ handler: @escaping @Sendable (_ isReachable: Bool) -> Void) -> ReachabilityObservation {
        let id = watcher.add(handler)
        return ReachabilityObservation { [watcher] in watcher.remove(id) }
    }

    /// The routes beyond loopback (``RouteTable``'s rule) of this
    /// namespace's files and interfaces; nil when neither file can be read.
    static func readRoutes() -> Set<RouteTable.Route>? {
        let ipv4 = try? String(contentsOfFile: "/proc/net/route", encoding: .utf8)
        let ipv6 = try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8)
        let probe = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { if probe >= 0 { close(probe) } }
        var known: [String: RouteTable.Interface] = [:]
        return RouteTable.routesBeyondLoopback(ipv4: ipv4, ipv6: ipv6) { name in
            if let interface = known[name] { return interface }
            let interface: RouteTable.Interface
            if probe < 0 {
                interface = .unknown
            } else {
                interface = interfaceFlags(name, socket: probe).map { .flags($0) } ?? .unreadable
            }
            known[name] = interface
            return interface
        }
    }

    /// `SIOCGIFFLAGS` of the interface `name`, or nil (no such interface, or no socket).
    private static func interfaceFlags(_ name: String, socket: Int32) -> RouteTable.InterfaceFlags? {
        var request = ifreq()
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count < Int(IFNAMSIZ) else { return nil }
        withUnsafeMutableBytes(of: &request.ifr_ifrn.ifrn_name) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        guard ioctl(socket, UInt(SIOCGIFFLAGS), &request) == 0 else { return nil }
        return RouteTable.InterfaceFlags(Int32(request.ifr_ifru.ifru_flags))
    }

    /// The handlers, and the thread that tells them.
    final class Watcher: Sendable {
        private struct State {
            var handlers: [UInt64: @Sendable (Bool) -> Void] = [:]
            var nextID: UInt64 = 0
            var started = false
            /// The write end of the pipe that stops the thread (-1: none).
            var stopWriter: Int32 = -1
            var stopped = false
            /// The thread is running (tests).
            var watching = false
        }

        private let state = Locked(State())
        /// The routes beyond loopback now (``SystemNetworkReachability/readRoutes()``).
        private let readRoutes: @Sendable () -> Set<RouteTable.Route>?

        init(readRoutes: @escaping @Sendable () -> Set<RouteTable.Route>?) {
            self.readRoutes = readRoutes
        }

        /// Whether the thread runs now (tests).
        var isWatching: Bool { state.withLock { $0.watching } }

        /// Registers `handler`; the first one starts the thread.
        func add(_ handler: @escaping @Sendable (Bool) -> Void) -> UInt64 {
            let (id, start) = state.withLock { state -> (UInt64, Bool) in
                state.nextID += 1
                state.handlers[state.nextID] = handler
                defer { state.started = true }
                return (state.nextID, !state.started && !state.stopped)
            }
            if start { self.start() }
            return id
        }

        func remove(_ id: UInt64) {
            let handler = state.withLock { $0.handlers.removeValue(forKey: id) }
            withExtendedLifetime(handler) {}  // released outside the lock
        }

        /// Stops the thread (it closes its descriptors on its way out).
        func stop() {
            let writer = state.withLock { state -> Int32 in
                defer { (state.stopped, state.stopWriter) = (true, -1) }
                return state.stopWriter
            }
            if writer >= 0 { close(writer) }  // the thread sees POLLHUP
        }

        private func start() {
            // NETLINK_ROUTE (0); RTMGRP_LINK, RTMGRP_IPV4_IFADDR,
            // RTMGRP_IPV4_ROUTE, RTMGRP_IPV6_IFADDR, RTMGRP_IPV6_ROUTE.
            let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400
            let socketType = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
            let netlink = socket(AF_NETLINK, socketType, 0)
            guard netlink >= 0 else { return }
            // struct sockaddr_nl: family, padding, port id (0: the kernel's
            // choice), groups; written out, as Glibc does not import it.
            var address = [UInt8](repeating: 0, count: 12)
            address.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: UInt16(AF_NETLINK), toByteOffset: 0, as: UInt16.self)
                raw.storeBytes(of: groups, toByteOffset: 8, as: UInt32.self)
            }
            let bound = address.withUnsafeBytes { raw in
                bind(netlink, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            var pipeEnds: [Int32] = [-1, -1]
            guard bound == 0, pipe(&pipeEnds) == 0 else {
                close(netlink)
                return
            }
            pipeEnds.forEach { _ = fcntl($0, F_SETFD, FD_CLOEXEC) }
            let go = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.stopWriter = pipeEnds[1]
                return true
            }
            guard go else {
                (pipeEnds + [netlink]).forEach { close($0) }
                return
            }
            let stopReader = pipeEnds[0]
            // The routes it compares with, read here, after the socket is
            // bound (a change from now on is reported) and before the first
            // `observe` returns: a caller that reads `isReachable` then
            // cannot miss a change made between its read and this one.
            let first = readRoutes()
            let thread = Thread { [self] in self.watch(netlink, stopReader: stopReader, from: first) }
            thread.name = "AsyncImageKit.reachability"
            thread.start()
        }

        /// The thread: asleep in `poll()` until the kernel reports a change
        /// or ``stop()`` closes the pipe.
        private func watch(_ netlink: Int32, stopReader: Int32, from first: Set<RouteTable.Route>?) {
            state.withLock { $0.watching = true }
            defer {
                close(netlink)
                close(stopReader)
                state.withLock { $0.watching = false }
            }
            var last = first
            var descriptors = [
                pollfd(fd: netlink, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopReader, events: Int16(POLLIN), revents: 0),
            ]
            var scratch = [UInt8](repeating: 0, count: 16384)
            /// Reads every message waiting (their content does not matter:
            /// the routes are read again). An overrun (`ENOBUFS`) lost some,
            /// which is a change as well.
            func drain() {
                while true {
                    let count = recv(netlink, &scratch, scratch.count, Int32(MSG_DONTWAIT))
                    if count > 0 || (count < 0 && (errno == EINTR || errno == ENOBUFS)) { continue }
                    return
                }
            }
            /// Waits for `timeout` ms; false when stopped (or the poll broke).
            func wait(_ timeout: Int32) -> (stopped: Bool, changed: Bool) {
                while true {
                    descriptors[0].revents = 0
                    descriptors[1].revents = 0
                    let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
                    if ready < 0 {
                        if errno == EINTR { continue }
                        return (true, false)
                    }
                    if descriptors[1].revents != 0 { return (true, false) }
                    if descriptors[0].revents & Int16(POLLNVAL) != 0 { return (true, false) }
                    return (false, descriptors[0].revents != 0)
                }
            }
            while true {
                let (stopped, changed) = wait(-1)
                if stopped { return }
                guard changed else { continue }
                drain()
                // Quiet for 100 ms, or a second since the first message.
                let settleEnd = ProcessInfo.processInfo.systemUptime + 1
                while ProcessInfo.processInfo.systemUptime < settleEnd {
                    let (stopped, more) = wait(100)
                    if stopped { return }
                    if !more { break }
                    drain()
                }
                let now = readRoutes()
                guard now != last else { continue }
                last = now
                let reachable = now.map { !$0.isEmpty } ?? true
                let handlers = state.withLock { Array($0.handlers.values) }
                handlers.forEach { $0(reachable) }
            }
        }
    }
}
