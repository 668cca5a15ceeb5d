@testable import AsyncImageKit
import XCTest

/// ``RouteTable``: the text of `/proc/net/route` and `/proc/net/ipv6_route`
/// read, and the rule that says whether a route leads beyond this machine,
/// on fixtures taken from real machines (a container with a default route,
/// a new network namespace, a laptop whose Wi-Fi went, a VPN).
final class RouteTableTests: XCTestCase {
    private static let header =
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT                                                       \n"

    /// A container: a default route through eth0, and its subnet.
    private static let containerIPv4 =
        header
        + "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0                                                                               \n"
        + "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0                                                                               \n"

    private static let containerIPv6 = """
        fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
        fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0
        00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000004 00000000 80200001       lo
        fd000000000000000000000000000002 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000004 00000000 80200001     eth0
        ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000003 00000000 00000001     eth0
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo

        """

    /// `unshare -n`, loopback up: no IPv4 route at all; IPv6 only the
    /// host's own `::1` and the "unreachable" default.
    private static let namespaceIPv6 = """
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
        00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo

        """

    private static let running = RouteTable.InterfaceFlags(isUp: true, isRunning: true, isLoopback: false)
    private static let loopback = RouteTable.InterfaceFlags(isUp: true, isRunning: true, isLoopback: true)

    /// With no interfaces given, none can be asked (no socket): judged by
    /// name; else one not given cannot be read (no such interface).
    private func reaches(_ ipv4: String?, _ ipv6: String?, _ interfaces: [String: RouteTable.InterfaceFlags] = [:]) -> Bool {
        RouteTable.reachesBeyondLoopback(ipv4: ipv4, ipv6: ipv6) { name in
            guard !interfaces.isEmpty else { return .unknown }
            return interfaces[name].map { .flags($0) } ?? .unreadable
        }
    }

    func testTheFilesAreRead() {
        let ipv4 = RouteTable.ipv4(Self.containerIPv4)
        XCTAssertEqual(ipv4.count, 2)
        XCTAssertEqual(ipv4[0], .init(interface: "eth0", destination: IPAddress("0.0.0.0")!, prefixLength: 0, flags: 3))
        XCTAssertEqual(ipv4[1], .init(interface: "eth0", destination: IPAddress("192.0.2.0")!, prefixLength: 24, flags: 1))
        let ipv6 = RouteTable.ipv6(Self.containerIPv6)
        XCTAssertEqual(ipv6.count, 7)
        XCTAssertEqual(ipv6[0], .init(interface: "eth0", destination: IPAddress("fd00::")!, prefixLength: 64, flags: 1))
        XCTAssertEqual(ipv6[3], .init(interface: "lo", destination: IPAddress("::1")!, prefixLength: 128, flags: 0x8020_0001))
        XCTAssertEqual(ipv6[6].flags, 0x0020_0200)
        // Damaged lines are skipped, the rest read.
        let damaged = Self.header + "eth0\tZZ\t0\t0003\n" + "short\n" + Self.containerIPv4.split(separator: "\n")[1] + "\n"
        XCTAssertEqual(RouteTable.ipv4(damaged).count, 1)
        XCTAssertEqual(RouteTable.ipv6("0000 40 x\n" + Self.containerIPv6).count, 7)
        XCTAssertEqual(RouteTable.ipv4(""), [])
    }

    func testADefaultRouteThroughARunningInterfaceIsReachable() {
        XCTAssertTrue(reaches(Self.containerIPv4, Self.containerIPv6, ["eth0": Self.running, "lo": Self.loopback]))
        XCTAssertTrue(reaches(Self.containerIPv4, nil), "IPv6 off: IPv4 alone")
        XCTAssertTrue(reaches(nil, Self.containerIPv6), "IPv6 alone (its default through fd00::1)")
        XCTAssertTrue(reaches(Self.containerIPv4, Self.containerIPv6), "interfaces unknown: by name")
    }

    /// A new network namespace: nothing beyond loopback (the IPv4 file is
    /// empty there while loopback is down, a header when it is up).
    func testANamespaceWithOnlyLoopbackIsUnreachable() {
        XCTAssertFalse(reaches("", Self.namespaceIPv6, ["lo": Self.loopback]))
        XCTAssertFalse(reaches(Self.header, Self.namespaceIPv6, ["lo": Self.loopback]))
        XCTAssertFalse(reaches(Self.header, ""))
    }

    /// Routes through an interface without a carrier (a cable pulled, a
    /// Wi-Fi that lost its network, a bridge with no port), or down, or
    /// loopback, do not count.
    func testRoutesThroughInterfacesThatAreNotRunningDoNotCount() {
        let noCarrier = RouteTable.InterfaceFlags(isUp: true, isRunning: false, isLoopback: false)
        let down = RouteTable.InterfaceFlags(0x1002)  // IFF_BROADCAST | IFF_MULTICAST: not up
        XCTAssertFalse(reaches(Self.containerIPv4, Self.containerIPv6, ["eth0": noCarrier, "lo": Self.loopback]))
        XCTAssertFalse(reaches(Self.containerIPv4, nil, ["eth0": down]))
        XCTAssertFalse(reaches(Self.containerIPv4, nil, ["eth0": Self.loopback]), "a loopback interface by its flags")
        XCTAssertEqual(RouteTable.InterfaceFlags(0x1043), Self.running)  // UP, BROADCAST, RUNNING, MULTICAST
        XCTAssertEqual(RouteTable.InterfaceFlags(0x49), Self.loopback)  // UP, LOOPBACK, RUNNING
    }

    /// Only link-local, multicast, loopback or reject routes: no network.
    /// A narrower route (a LAN, a VPN's networks) is enough.
    func testWhereARouteLeadsDecides() {
        let interfaces = ["wlan0": Self.running, "tun0": Self.running]
        func ipv4(_ lines: [(String, String, String, String)]) -> String {
            Self.header + lines.map { "\($0.0)\t\($0.1)\t00000000\t\($0.2)\t0\t0\t0\t\($0.3)\t0\t0\t0\n" }.joined()
        }
        let linkLocal = ipv4([("wlan0", "0000FEA9", "0001", "0000FFFF"), ("wlan0", "000000E0", "0001", "000000F0")])
        XCTAssertFalse(reaches(linkLocal, nil, interfaces), "169.254/16 and 224/4 only")
        // As the kernel prints them (`ip route add unreachable|prohibit ...`):
        // no device, RTF_REJECT.
        let rejected = ipv4([("*", "00000000", "0201", "00000000"), ("*", "0000010A", "0201", "0000FFFF")])
        XCTAssertFalse(reaches(rejected, nil, interfaces), "an unreachable default, a prohibited 10.1/16")
        let notUp = ipv4([("wlan0", "00000000", "0002", "00000000")])
        XCTAssertFalse(reaches(notUp, nil, interfaces), "not RTF_UP")
        let vpn = ipv4([("tun0", "0000000A", "0001", "000000FF")])
        XCTAssertTrue(reaches(vpn, nil, interfaces), "10/8 through a VPN")
        let linkLocalIPv6 =
            "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001    wlan0\n"
        XCTAssertFalse(reaches(Self.header, linkLocalIPv6, interfaces), "fe80::/64 is on every running interface")
        let global =
            "20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001    wlan0\n"
        XCTAssertTrue(reaches(Self.header, global, interfaces))
    }

    /// `ip route add blackhole default`: printed with no device (`*`) and
    /// only RTF_UP (0001), as an ordinary route (checked on Linux 6.x in
    /// `unshare -rn`; IPv6 prints it on `lo` with RTF_REJECT). It leads
    /// nowhere, interfaces known or not; so does a route through an
    /// interface whose flags cannot be read, unless none can be (no socket).
    func testBlackholeRoutesAndUnreadableInterfacesLeadNowhere() {
        let blackhole =
            Self.header
            + "*\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0                                                                                  \n"
        let routes = RouteTable.ipv4(blackhole)
        XCTAssertEqual(routes, [.init(interface: "*", destination: IPAddress("0.0.0.0")!, prefixLength: 0, flags: 1)])
        XCTAssertFalse(reaches(blackhole, Self.namespaceIPv6, ["lo": Self.loopback]))
        XCTAssertFalse(reaches(blackhole, nil), "no socket: still nowhere")
        let ipv6Blackhole =
            "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 00000400 00000001 00000000 00200200       lo\n"
        XCTAssertFalse(reaches(Self.header, ipv6Blackhole, ["lo": Self.loopback]))
        // eth0 gone since the file was read: its flags cannot be read.
        XCTAssertFalse(reaches(Self.containerIPv4, nil, ["lo": Self.loopback]))
        XCTAssertTrue(reaches(Self.containerIPv4, nil), "no socket: judged by its name")
    }

    /// Neither file readable: reachable (a wrong "reachable" costs one
    /// transfer; a wrong "unreachable", every request).
    func testUnreadableFilesMeanReachable() {
        XCTAssertTrue(reaches(nil, nil))
        XCTAssertFalse(reaches("", nil))
    }

    /// The routes that count are the ones returned (what the watcher
    /// compares: another network while reachable is news too).
    func testTheRoutesThatCountAreReturned() {
        let routes = RouteTable.routesBeyondLoopback(ipv4: Self.containerIPv4, ipv6: Self.containerIPv6) { _ in
            .flags(Self.running)
        }
        XCTAssertEqual(
            routes?.map { "\($0.interface) \($0.destination)/\($0.prefixLength)" }.sorted(),
            ["eth0 0.0.0.0/0", "eth0 192.0.2.0/24", "eth0 ::/0", "eth0 fd00::/64"])
        XCTAssertNil(RouteTable.routesBeyondLoopback(ipv4: nil, ipv6: nil) { _ in .unknown })
    }

    /// The watcher's first routes, what it compares each change with, are
    /// read by the first `observe`, after its netlink socket is bound and
    /// before it returns (not later, on its thread): a loader that reads
    /// `isReachable` after registering cannot miss a change in between.
    func testTheWatchersFirstRoutesAreReadBeforeObserveReturns() throws {
        let caller = pthread_self()
        let reads = Locked<[Bool]>([])  // each read: on the observing thread?
        let reachability = SystemNetworkReachability {
            reads.withLock { $0.append(pthread_equal(pthread_self(), caller) != 0) }
            return nil
        }
        let observation = reachability.observe { _ in }
        defer { observation.cancel() }
        let onTheCaller = reads.withLock { $0.first }
        if onTheCaller == nil {
            // Read later on the thread, or never: no netlink socket here.
            _ = waitUntil(upTo: 2) { !reads.withLock { $0.isEmpty } }
            guard !reads.withLock({ $0.isEmpty }) else { throw XCTSkip("no netlink socket here") }
        }
        XCTAssertEqual(reads.withLock { $0 }, [true])
    }
}
