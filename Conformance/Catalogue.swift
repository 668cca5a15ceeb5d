import Foundation

/// One of the suite's tests, as Scripts/catalogue.mjs describes it.
struct SuiteTest: Decodable, Sendable {
    let id: String
    let name: String
    let suite: String
    /// nil, `required`, `optimal` or `check`.
    let kind: String?
    let browserOnly: Bool
    let browserSkip: Bool
    let cdnOnly: Bool
    let dependsOn: [String]
    /// Each request's method (GET when the test names none).
    let methods: [String]
    /// The fetch `cache` modes its requests ask for.
    let cacheModes: [String]
    /// Whether a request expects interim (1xx) responses.
    let interimResponses: Bool

    /// Required as the suite's test-engine/lib/results.mjs counts it: a
    /// failure is a conformance failure (⛔️) when `kind` is absent or
    /// `required`; `optimal` failures are warnings, `check`s are yes/no.
    var isRequired: Bool { kind == nil || kind == "required" }

    /// `required`, `optimal` or `check`, for the report.
    var kindLabel: String { kind ?? "required" }

    /// Why the browser-mode run leaves this test out, or nil when it applies.
    ///
    /// The data API only does GET, and node's fetch has no cache for a fetch
    /// cache mode to steer (it would only add request headers); tests for
    /// shared caches and CDNs judge behaviour a private cache must not have.
    var browserModeExclusion: String? {
        if browserSkip { return "shared caches only" }
        if cdnOnly { return "CDN only" }
        if let method = methods.first(where: { $0 != "GET" }) { return "method \(method)" }
        if let mode = cacheModes.first { return "fetch cache mode \(mode)" }
        return nil
    }

    /// Why the shared figure (the suite's cli.mjs) leaves this test out, or nil.
    var sharedModeExclusion: String? {
        if browserOnly { return "browsers only" }
        if let method = methods.first(where: { $0 != "GET" }) { return "method \(method)" }
        if let mode = cacheModes.first { return "fetch cache mode \(mode)" }
        if interimResponses { return "interim responses (the client needs the npm package undici)" }
        return nil
    }
}

/// A test's result as the suite's client records it: `true`, or a list
/// (`[error name, message]`) saying what failed.
enum SuiteResult: Decodable, Sendable, Equatable {
    case passed
    case failed([String])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            self = flag ? .passed : .failed(["false"])
        } else if let list = try? container.decode([String].self) {
            self = .failed(list)
        } else {
            self = .failed(["unrecognised result"])
        }
    }

    /// A pass, as results.mjs counts one for a required or optimal test
    /// (and a "yes" for a check): exactly `true`.
    var isPass: Bool { self == .passed }

    /// "Name: message", the suite's words.
    var reason: String {
        switch self {
        case .passed: return ""
        case .failed(let list): return list.joined(separator: ": ")
        }
    }
}

/// Reads the suite's catalogue and its published results.
enum Catalogue {
    /// Every test of the suite, in the suite's order.
    static func load(_ location: SuiteLocation) throws -> [SuiteTest] {
        let data = try ChildProcess.output(
            of: location.node, ["--no-warnings", location.script("catalogue.mjs"), location.directory.path],
            seconds: 60)
        return try JSONDecoder().decode([SuiteTest].self, from: data)
    }

    /// results/NAME.json: test id to result.
    static func published(_ name: String, in location: SuiteLocation) throws -> [String: SuiteResult] {
        let file = location.directory.appendingPathComponent("results/\(name).json")
        return try JSONDecoder().decode([String: SuiteResult].self, from: Data(contentsOf: file))
    }

    /// The browsers whose published results the browser-mode figure is compared with.
    static let browsers = ["chrome", "firefox", "safari"]
    /// The proxies and CDNs whose published results the shared figure is compared with.
    static let sharedCaches = ["nginx", "squid", "varnish", "apache", "caddy", "haproxy", "trafficserver", "fastly"]
}
