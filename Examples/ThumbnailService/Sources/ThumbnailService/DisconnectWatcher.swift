import Hummingbird
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Cancels a request's work when its client goes away.
///
/// Hummingbird 2 does not cancel a route handler when the client
/// disconnects: the handler runs to its end and its response is written to
/// a closed socket. For a thumbnail service that is a transfer, a decode and
/// an encode for nobody. This watcher sits in each connection's pipeline
/// (`HTTP1Channel.Configuration(additionalChannelHandlers:)`) and, when the
/// client goes away, cancels the work that
/// ``ServiceContext/cancellingOnDisconnect(_:)`` runs for it.
///
/// "Goes away" is either a FIN from the client (`ChannelEvent.inputClosed`:
/// Hummingbird allows remote half-closure, so the channel itself stays
/// open until the response is written) or the channel closing (a reset).
/// An HTTP/1.1 client that half-closes on purpose after sending its
/// request is rare, and is taken as gone too: nginx and imgproxy do the same.
final class DisconnectWatcher: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPRequestPart

    private struct State {
        var gone = false
        var nextID = 0
        var onGone: [Int: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .inputClosed { clientWentAway() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        clientWentAway()
        context.fireChannelInactive()
    }

    private func clientWentAway() {
        let callbacks = state.withLock { state in
            state.gone = true
            defer { state.onGone = [:] }
            return Array(state.onGone.values)
        }
        for cancel in callbacks { cancel() }
    }

    /// Runs `operation` in a task of its own, cancelled when the client goes
    /// away (at once if it already has) or when the calling task is cancelled.
    func cancellingOnDisconnect<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task(operation: operation)
        let id = state.withLock { state -> Int? in
            guard !state.gone else { return nil }
            state.nextID += 1
            state.onGone[state.nextID] = { task.cancel() }
            return state.nextID
        }
        if id == nil { task.cancel() }
        defer { if let id { _ = state.withLock { $0.onGone.removeValue(forKey: id) } } }
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }
}

/// The service's request context: Hummingbird's basic one, plus the
/// connection's channel, where the ``DisconnectWatcher`` is.
struct ServiceContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Runs `operation`, cancelled when this request's client goes away
    /// (see ``DisconnectWatcher``).
    func cancellingOnDisconnect<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        // One hop to the channel's event loop to find the connection's watcher.
        guard let watcher = try? await channel.pipeline.handler(type: DisconnectWatcher.self).get() else {
            // No watcher: a server set up without one (run as is), or a
            // connection already closed (its pipeline emptied).
            guard channel.isActive else { throw CancellationError() }
            return try await operation()
        }
        return try await watcher.cancellingOnDisconnect(operation)
    }
}
