import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 address, as a ``URLPolicy`` sees it: the address a
/// transfer is about to connect to, after DNS, or a URL's literal host.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// What kind of address it is (IANA's special-purpose registries).
    public enum Scope: String, Sendable, Hashable {
        /// Routable on the internet.
        case global
        /// This host: `127.0.0.0/8`, `::1`.
        case loopback
        /// A private network: `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`,
        /// carrier-grade NAT `100.64.0.0/10`, unique-local `fc00::/7`.
        case `private`
        /// Link-local: `169.254.0.0/16` (where cloud metadata services
        /// answer), `fe80::/10`.
        case linkLocal = "link-local"
        /// Multicast: `224.0.0.0/4`, `ff00::/8`.
        case multicast
        /// "No address" or "this network": `0.0.0.0/8`, `::`.
        case unspecified
        /// Reserved, documentation, benchmarking and broadcast ranges
        /// (`240.0.0.0/4`, `192.0.2.0/24`, `198.18.0.0/15`, `2001:db8::/32`,
        /// and the like): never a public server.
        case reserved
    }

    /// The address in network order: 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// An address from its bytes (4 or 16 of them), or nil.
    init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// An address from its text (`"127.0.0.1"`, `"::1"`, `"[::1]"` as in a
    /// URL's host), or nil for anything else, host names included.
    public init?(_ text: String) {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        // A zone (`fe80::1%eth0`) names an interface, not an address.
        if let percent = text.firstIndex(of: "%") { text = String(text[..<percent]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self.bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        return nil
    }

    /// Whether it is an IPv4 address.
    public var isIPv4: Bool { bytes.count == 4 }

    /// The IPv4 address an IPv6 address stands for (IPv4-mapped
    /// `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, or the deprecated
    /// IPv4-compatible `::a.b.c.d`), which is where a connection to it goes.
    var embeddedIPv4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        let head = bytes[0..<12]
        let mapped = head.elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF])
        let nat64 = head.elementsEqual([0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0])
        let compatible = head.allSatisfy { $0 == 0 } && bytes[12..<16].contains { $0 != 0 } && !isIPv6Loopback
        guard mapped || nat64 || compatible else { return nil }
        return IPAddress(bytes: Array(bytes[12..<16]))
    }

    private var isIPv6Loopback: Bool { bytes.count == 16 && bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1 }

    /// What kind of address it is. An IPv6 address that stands for an IPv4
    /// one (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, or the
    /// deprecated IPv4-compatible `::a.b.c.d`) has that address's scope.
    public var scope: Scope {
        if let v4 = embeddedIPv4 { return v4.scope }
        return isIPv4 ? Self.scope4(bytes) : Self.scope6(bytes)
    }

    /// Whether it is ``Scope/global``: a public address.
    public var isGlobal: Bool { scope == .global }

    private static func scope4(_ b: [UInt8]) -> Scope {
        switch (b[0], b[1], b[2]) {
        case (0, _, _): return .unspecified
        case (127, _, _): return .loopback
        case (10, _, _), (172, 16...31, _), (192, 168, _): return .private
        case (100, 64...127, _): return .private  // carrier-grade NAT
        case (169, 254, _): return .linkLocal
        case (224...239, _, _): return .multicast
        case (240...255, _, _): return .reserved  // 240/4 and the broadcast address
        case (192, 0, 0), (192, 0, 2), (198, 51, 100), (203, 0, 113), (198, 18...19, _): return .reserved
        default: return .global
        }
    }

    private static func scope6(_ b: [UInt8]) -> Scope {
        if b.allSatisfy({ $0 == 0 }) { return .unspecified }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return .loopback }
        if b[0] == 0xFF { return .multicast }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return .linkLocal }
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return .private }  // site-local (deprecated)
        if b[0] & 0xFE == 0xFC { return .private }  // unique-local fc00::/7
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return .reserved }  // documentation
        if b[0] == 0x01 && b[1..<8].allSatisfy({ $0 == 0 }) { return .reserved }  // discard-only 100::/64
        // Global unicast is 2000::/3; the rest of the space is unassigned.
        return b[0] & 0xE0 == 0x20 ? .global : .reserved
    }

    /// The usual text: `"127.0.0.1"`, `"::1"`.
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = isIPv4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return bytes.map { String($0) }.joined(separator: ".") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
