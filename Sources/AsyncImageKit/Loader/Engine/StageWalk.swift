import Foundation

/// The engine's promise of shape: a request goes down through the stages
/// once and its image comes back up once, in the order the graph in
/// ``AsyncImageLoader`` draws. Debug builds note each stage a request's
/// URL passes, for the test that holds the engine to the graph
/// (EngineWalkTests); release builds note nothing.
enum StageWalk {
    enum Stage: String, Sendable {
        case requests, jobs, transfers, httpCache, network, decode, stores, delivery
    }

    enum Direction: String, Sendable {
        case down, up
    }

    #if DEBUG
    /// The steps noted per URL, for the URLs a test watches.
    private static let watched = Locked<[String: [String]]>([:])

    /// Starts noting the steps of requests for `url`.
    static func watch(_ url: URL) { watched.withLock { $0[url.absoluteString] = [] } }

    /// The steps noted for `url` ("requests down", ...), and stops watching it.
    static func steps(of url: URL) -> [String] {
        watched.withLock { $0.removeValue(forKey: url.absoluteString) ?? [] }
    }

    static func note(_ stage: Stage, _ direction: Direction, _ url: URL) {
        watched.withLock { table in
            guard !table.isEmpty, table[url.absoluteString] != nil else { return }
            table[url.absoluteString]?.append("\(stage.rawValue) \(direction.rawValue)")
        }
    }
    #else
    @inline(__always) static func note(_ stage: Stage, _ direction: Direction, _ url: URL) {}
    #endif
}
