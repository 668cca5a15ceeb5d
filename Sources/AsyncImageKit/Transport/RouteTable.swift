import Foundation

/// The kernel's routes as `/proc/net/route` (IPv4) and `/proc/net/ipv6_route`
/// print them, and the one rule ``SystemNetworkReachability`` reads them
/// with: pure functions of the files' text, tested on fixtures.
///
/// The rule: the network is reachable when some route leads beyond this
/// machine, that is a route that
/// - is up (`RTF_UP`) and not a reject route (`RTF_REJECT`: "unreachable",
///   "prohibit", "blackhole"), nor one of this host's own addresses
///   (IPv6 `RTF_LOCAL`);
/// - goes through an interface that is not the loopback one and is running
///   (`IFF_UP` and `IFF_RUNNING`: it has a carrier, so an unplugged cable, a
///   Wi-Fi that lost its network or an empty bridge does not count). The
///   interface `*` (no device: an IPv4 `blackhole` route, printed with the
///   flags of an ordinary one) leads nowhere, and so does one whose flags
///   cannot be read (gone since the file was read); only when the flags
///   cannot be asked at all (no socket) is an interface judged by its name;
/// - leads to unicast addresses beyond this host and its link: not
///   loopback (`127.0.0.0/8`, `::1`), link-local (`169.254.0.0/16`,
///   `fe80::/10`: every running interface has `fe80::/64`, connected or
///   not) or multicast (`224.0.0.0/4`, `ff00::/8`).
///
/// A default route counts, and so does any narrower one (a host that
/// reaches only its LAN, or only a VPN's networks, is not offline).
/// `/proc/net/route` shows the main table only: routes held only in other
/// tables (policy routing) are not seen. When neither file can be read,
/// the answer is "reachable": a guess that is wrong that way costs one
/// failed transfer, the other way every request.
enum RouteTable {
    /// One route.
    struct Route: Sendable, Hashable {
        var interface: String
        var destination: IPAddress
        var prefixLength: Int
        /// `RTF_*` flags, as the file prints them.
        var flags: UInt32
    }

    /// What `SIOCGIFFLAGS` says of an interface.
    struct InterfaceFlags: Sendable, Equatable {
        var isUp: Bool
        var isRunning: Bool
        var isLoopback: Bool

        /// From the `IFF_*` bits.
        init(_ bits: Int32) {
            isUp = bits & 0x1 != 0  // IFF_UP
            isLoopback = bits & 0x8 != 0  // IFF_LOOPBACK
            isRunning = bits & 0x40 != 0  // IFF_RUNNING
        }

        init(isUp: Bool, isRunning: Bool, isLoopback: Bool) {
            (self.isUp, self.isRunning, self.isLoopback) = (isUp, isRunning, isLoopback)
        }
    }

    static let up: UInt32 = 0x0001  // RTF_UP
    static let reject: UInt32 = 0x0200  // RTF_REJECT
    static let local: UInt32 = 0x8000_0000  // RTF_LOCAL (IPv6)

    /// The routes of a `/proc/net/route` text (a header line, then one
    /// tab-separated line per route: `Iface Destination Gateway Flags
    /// RefCnt Use Metric Mask ...`, addresses as hex of the kernel's
    /// network-order word printed in host order). Lines it cannot read
    /// are skipped.
    static func ipv4(_ text: String) -> [Route] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard fields.count >= 8, fields[0] != "Iface", let destination = UInt32(fields[1], radix: 16),
                let flags = UInt32(fields[3], radix: 16), let mask = UInt32(fields[7], radix: 16),
                let address = IPAddress(bytes: withUnsafeBytes(of: destination) { Array($0) })
            else { return nil }
            return Route(
                interface: String(fields[0]), destination: address, prefixLength: mask.nonzeroBitCount, flags: flags)
        }
    }

    /// The routes of a `/proc/net/ipv6_route` text (one line per route:
    /// destination, its prefix length, source, its prefix length, next
    /// hop, metric, reference count, use count, flags, interface; all hex
    /// but the interface). Lines it cannot read are skipped.
    static func ipv6(_ text: String) -> [Route] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard fields.count >= 10, fields[0].utf8.count == 32, let length = Int(fields[1], radix: 16),
                let flags = UInt32(fields[8], radix: 16)
            else { return nil }
            var bytes: [UInt8] = []
            var hex = Substring(fields[0])
            while !hex.isEmpty {
                guard let byte = UInt8(hex.prefix(2), radix: 16) else { return nil }
                bytes.append(byte)
                hex = hex.dropFirst(2)
            }
            guard let address = IPAddress(bytes: bytes) else { return nil }
            return Route(interface: String(fields[9]), destination: address, prefixLength: length, flags: flags)
        }
    }

    /// What is known of an interface.
    enum Interface: Sendable, Equatable {
        /// Its `SIOCGIFFLAGS`.
        case flags(InterfaceFlags)
        /// Its flags could not be read (no such interface): it leads nowhere.
        case unreadable
        /// Nothing could be asked (no socket): judged by its name.
        case unknown
    }

    /// Whether `route` leads beyond this machine (the rule above);
    /// `interface` tells what is known of an interface.
    static func leadsBeyondLoopback(_ route: Route, interface: (String) -> Interface) -> Bool {
        guard route.flags & up != 0, route.flags & reject == 0, route.flags & local == 0 else { return false }
        // No device (a blackhole route), or the loopback one.
        guard route.interface != "*" else { return false }
        switch interface(route.interface) {
        case .flags(let flags):
            guard flags.isUp, flags.isRunning, !flags.isLoopback else { return false }
        case .unreadable:
            return false
        case .unknown:
            if route.interface == "lo" { return false }
        }
        // A route to the default (prefix 0) covers every scope; a narrower
        // one is judged by where it leads.
        guard route.prefixLength > 0 else { return true }
        switch route.destination.scope {
        case .loopback, .linkLocal, .multicast: return false
        default: return true
        }
    }

    /// The routes of these texts that lead beyond this machine (nil: the
    /// file could not be read; both nil: nil, nothing is known).
    static func routesBeyondLoopback(
        ipv4: String?, ipv6: String?, interface: (String) -> Interface
    ) -> Set<Route>? {
        guard ipv4 != nil || ipv6 != nil else { return nil }
        let routes = (ipv4.map(Self.ipv4) ?? []) + (ipv6.map(Self.ipv6) ?? [])
        return Set(routes.filter { leadsBeyondLoopback($0, interface: interface) })
    }

    /// Whether the network is reachable by the routes of these texts (nil:
    /// the file could not be read; both nil: reachable).
    static func reachesBeyondLoopback(ipv4: String?, ipv6: String?, interface: (String) -> Interface) -> Bool {
        routesBeyondLoopback(ipv4: ipv4, ipv6: ipv6, interface: interface).map { !$0.isEmpty } ?? true
    }
}
