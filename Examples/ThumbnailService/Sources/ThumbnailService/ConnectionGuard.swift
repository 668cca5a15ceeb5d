import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTPTypes
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The connection limits of one listener: how long a connection may take to
/// send a request head, how long it may sit idle between requests, and how
/// many connections may be open at once.
///
/// Hummingbird 2.28 has none of these by default (`HTTP1Channel`'s
/// `idleTimeout` is off, `availableConnectionsDelegate` is nil), so a
/// client that opens connections and sends nothing holds one descriptor
/// each for ever: 1,050 of them took every descriptor under a 1,024 limit.
struct ConnectionLimits: Sendable {
    /// From a connection's accept, or from a request's first byte after an
    /// idle wait, to the end of its request head.
    var headerTimeout: TimeAmount
    /// From the end of a response to the next request's first byte; also
    /// how long a client may read nothing of a response being written.
    var idleTimeout: TimeAmount
    /// Open connections at most; see ``ConnectionLimiter``.
    var maxConnections: Int
}

/// Counts one listener's open connections and, at the limit, makes room.
///
/// A new connection beyond ``ConnectionLimits/maxConnections`` is accepted,
/// then the connection that has waited longest for a request head (one that
/// never sent a request, or a keep-alive connection between requests) is
/// closed to make room for it, as nginx does with its reusable connections
/// when `worker_connections` run out. Only when every open connection has a
/// request in progress is the new one closed at once instead. Either way the
/// service keeps accepting, keeps answering new clients while a flood of idle
/// connections is held, and never waits on a full descriptor table: the
/// limit is kept below the descriptor limit (``DescriptorLimit``).
///
/// Shared by the connections of one listener, which run on different event
/// loops: its state is under a lock, held for a few dictionary operations.
final class ConnectionLimiter: Sendable {
    let limits: ConnectionLimits
    let name: String
    private let logger: Logger

    private struct State {
        /// ``ConnectionLimits/maxConnections``, lowered for a while when descriptors run out.
        var limit: Int
        /// Until when `limit` is lowered.
        var loweredUntil = NIODeadline.distantPast
        var nextID = 0
        /// Every open connection (accepted, not yet inactive), by id.
        var open: [Int: any Channel] = [:]
        /// The connections waiting for a request head, by id: when they began to wait.
        var waiting: [Int: NIODeadline] = [:]
        /// Connections asked to close to make room, not yet inactive.
        var closing: Set<Int> = []
    }

    private let state: Mutex<State>
    private let openGauge: Gauge
    private let shedCounter: Counter
    private let headerTimeoutCounter: Counter
    private let idleTimeoutCounter: Counter
    private let readingTimeoutCounter: Counter

    init(name: String, limits: ConnectionLimits, logger: Logger) {
        self.name = name
        self.limits = limits
        self.logger = logger
        state = Mutex(State(limit: limits.maxConnections))
        let dimensions = [("listener", name)]
        openGauge = Gauge(label: "thumbnail_connections_open", dimensions: dimensions)
        shedCounter = Counter(label: "thumbnail_connections_shed_total", dimensions: dimensions)
        headerTimeoutCounter = Counter(label: "thumbnail_connections_header_timeout_total", dimensions: dimensions)
        idleTimeoutCounter = Counter(label: "thumbnail_connections_idle_timeout_total", dimensions: dimensions)
        readingTimeoutCounter = Counter(label: "thumbnail_connections_send_timeout_total", dimensions: dimensions)
    }

    /// Registers a new connection (waiting for its first request head) and
    /// returns its id, or nil when it must be closed at once (the limit is
    /// reached and every other connection has a request in progress).
    func opened(_ channel: any Channel) -> Int? {
        let (id, victim, count) = state.withLock { state -> (Int?, (any Channel)?, Int) in
            var victim: (any Channel)?
            if state.limit < limits.maxConnections, state.loweredUntil < .now() {
                state.limit = limits.maxConnections  // tried again; lowered again if descriptors still run out
            }
            if state.open.count - state.closing.count >= state.limit {
                // Make room: the connection that has waited longest for a head.
                guard let oldest = state.waiting.min(by: { $0.value < $1.value })?.key else {
                    return (nil, nil, state.open.count)
                }
                state.waiting[oldest] = nil
                state.closing.insert(oldest)
                victim = state.open[oldest]
            }
            state.nextID += 1
            state.open[state.nextID] = channel
            state.waiting[state.nextID] = .now()
            return (state.nextID, victim, state.open.count)
        }
        if let victim {
            shedCounter.increment()
            victim.close(promise: nil)
        } else if id == nil {
            shedCounter.increment()
            logger.debug("\(name): \(count) connections, all busy: a new one closed")
        }
        openGauge.record(count)
        return id
    }

    /// A request head arrived on `id`: it is no longer one that may be closed to make room.
    func busy(_ id: Int) {
        _ = state.withLock { $0.waiting.removeValue(forKey: id) }
    }

    /// `id` answered its requests and waits for the next one.
    func waiting(_ id: Int) {
        state.withLock { state in
            if state.open[id] != nil, !state.closing.contains(id) { state.waiting[id] = .now() }
        }
    }

    func closed(_ id: Int) {
        let count = state.withLock { state in
            state.open[id] = nil
            state.waiting[id] = nil
            state.closing.remove(id)
            return state.open.count
        }
        openGauge.record(count)
    }

    /// Descriptors ran out (`accept` failed with `EMFILE` or `ENFILE`) although
    /// this listener was under its limit: something else holds descriptors
    /// (or the limit was lowered under the running process). For `period`
    /// the limit is `margin` below the connections open now, and the oldest
    /// waiting connections are closed to get there, so that the connections
    /// waiting in the kernel's backlog can be accepted (each one then makes
    /// room as at the limit). Then the configured limit is tried again: a
    /// shortage that has passed costs nothing more, one that lasts costs one
    /// more pause. Returns the new limit and the connections closed.
    func descriptorsRanOut(margin: Int = 32, period: TimeAmount = .seconds(30)) -> (limit: Int, closed: Int) {
        let (limit, victims) = state.withLock { state -> (Int, [any Channel]) in
            state.loweredUntil = .now() + period
            state.limit = max(1, min(state.limit, state.open.count - state.closing.count - margin))
            let excess = state.open.count - state.closing.count - state.limit
            guard excess > 0 else { return (state.limit, []) }
            let oldest = state.waiting.sorted { $0.value < $1.value }.prefix(excess).map(\.key)
            for id in oldest {
                state.waiting[id] = nil
                state.closing.insert(id)
            }
            return (state.limit, oldest.compactMap { state.open[$0] })
        }
        for victim in victims {
            shedCounter.increment()
            victim.close(promise: nil)
        }
        return (limit, victims.count)
    }

    func timedOut(_ deadline: ConnectionGuard.Deadline) {
        switch deadline {
        case .head: headerTimeoutCounter.increment()
        case .idle: idleTimeoutCounter.increment()
        case .reading: readingTimeoutCounter.increment()
        }
    }
}

/// The first handler of each connection's pipeline (before the HTTP decoder,
/// so that it sees the raw bytes): enforces the header and idle timeouts and
/// registers the connection with its listener's ``ConnectionLimiter``.
///
/// A connection is in one of three phases:
/// - waiting for a request head: from its accept, or from the first byte
///   that follows an idle wait; closed after the header timeout. Bytes that
///   trickle in do not extend it (a slowloris sending a byte a second is
///   closed like a silent client).
/// - busy: a head arrived. No timer while the response is being made (the
///   request has the loader's own `--timeout`), but one while the client
///   reads none of it: the channel unwritable (NIO's buffer over its high
///   watermark, the socket's full) for the idle timeout closes it, as
///   nginx's `send_timeout` does. Without it a client that pipelines
///   requests and never reads held its connection for ever.
/// - idle: its responses are written and no byte of a next request has
///   come; closed after the idle timeout.
///
/// ``RequestBoundaryObserver``, after the HTTP decoder, tells it where
/// request heads and responses end.
final class ConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum Phase {
        case new
        case awaitingHead
        case busy(requests: Int)
        case idle
        case closed
    }

    /// What a timer waits for; it closes the connection if that is still so when it fires.
    enum Deadline {
        case head, idle, reading
    }

    private let limiter: ConnectionLimiter
    private var phase = Phase.new
    private var id: Int?
    private var timer: (deadline: Deadline, task: Scheduled<Void>)?

    init(limiter: ConnectionLimiter) {
        self.limiter = limiter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard case .new = phase else { return }
        guard let id = limiter.opened(context.channel) else {
            phase = .closed
            context.close(promise: nil)
            return
        }
        self.id = id
        phase = .awaitingHead
        schedule(.head, context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .idle = phase {
            // The first byte of the next request: its head must now arrive in time.
            phase = .awaitingHead
            schedule(.head, context)
        }
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if case .busy = phase { watchReading(context) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
    }

    private func finish() {
        cancelTimer()
        phase = .closed
        if let id { limiter.closed(id) }
        id = nil
    }

    /// Called by ``RequestBoundaryObserver`` when the decoder produced a request head.
    func requestHeadArrived(_ context: ChannelHandlerContext) {
        switch phase {
        case .awaitingHead, .idle, .new:
            cancelTimer()
            phase = .busy(requests: 1)
            if let id { limiter.busy(id) }
            watchReading(context)
        case .busy(let requests):
            phase = .busy(requests: requests + 1)  // pipelined
        case .closed:
            break
        }
    }

    /// Called by ``RequestBoundaryObserver`` when a response's end was written.
    func responseEnded(_ context: ChannelHandlerContext) {
        guard case .busy(let requests) = phase else { return }
        if requests > 1 {
            phase = .busy(requests: requests - 1)
            return
        }
        phase = .idle
        if let id { limiter.waiting(id) }
        schedule(.idle, context)
    }

    /// While busy: a timer runs exactly while the client reads nothing of what is written.
    private func watchReading(_ context: ChannelHandlerContext) {
        if context.channel.isWritable {
            if timer?.deadline == .reading { cancelTimer() }
        } else if timer?.deadline != .reading {
            schedule(.reading, context)
        }
    }

    private func cancelTimer() {
        timer?.task.cancel()
        timer = nil
    }

    private func schedule(_ deadline: Deadline, _ context: ChannelHandlerContext) {
        cancelTimer()
        let channel = context.channel
        let limiter = self.limiter
        // The handler is used on the channel's event loop only.
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let delay = deadline == .head ? limiter.limits.headerTimeout : limiter.limits.idleTimeout
        let task = context.eventLoop.scheduleTask(in: delay) {
            let handler = loopBound.value
            handler.timer = nil
            let expired: Bool
            switch (deadline, handler.phase) {
            case (.head, .awaitingHead), (.idle, .idle): expired = true
            case (.reading, .busy): expired = !channel.isWritable
            default: expired = false  // a head arrived or a response ended meanwhile
            }
            if expired {
                limiter.timedOut(deadline)
                channel.close(promise: nil)
            }
        }
        timer = (deadline, task)
    }
}

@available(*, unavailable)
extension ConnectionGuard: Sendable {}

/// Sits after the HTTP decoder and tells the connection's ``ConnectionGuard``
/// where request heads arrive and where responses end.
final class RequestBoundaryObserver: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var connectionGuard: ConnectionGuard?

    func handlerAdded(context: ChannelHandlerContext) {
        // Both are added by GuardedHTTP1Channel's setup, on this event loop.
        connectionGuard = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { connectionGuard?.requestHeadArrived(context) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { connectionGuard?.responseEnded(context) }
        context.write(data, promise: promise)
    }
}

@available(*, unavailable)
extension RequestBoundaryObserver: Sendable {}

/// Hummingbird's HTTP/1 channel with a ``ConnectionGuard`` in front of its
/// HTTP decoder: the guard must see raw bytes (a head's first byte), which
/// `HTTP1Channel.Configuration.additionalChannelHandlers` (placed after the
/// decoder) never see.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let limiter: ConnectionLimiter

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(limiter: limiter), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 with the service's connection limits: ``GuardedHTTP1Channel``,
    /// `extraHandlers` after the decoder (such as ``DisconnectWatcher``).
    static func guardedHTTP1(
        limiter: ConnectionLimiter,
        extraHandlers: @escaping @Sendable () -> [any RemovableChannelHandler] = { [] }
    ) -> HTTPServerBuilder {
        .init { responder in
            GuardedHTTP1Channel(
                inner: HTTP1Channel(
                    responder: responder,
                    configuration: .init(additionalChannelHandlers: [RequestBoundaryObserver()] + extraHandlers())),
                limiter: limiter)
        }
    }
}

/// Stops a listener's accept loop from spinning when descriptors run out.
///
/// On Linux a connection that `accept` cannot take for want of a descriptor
/// (`EMFILE`, `ENFILE`) stays in the backlog, so the listening socket stays
/// readable. NIO 2.101 keeps the server channel registered for reads after
/// such an error (its `readPending` is cleared only by a successful
/// accept), so the `AcceptBackoffHandler` that `ServerBootstrap` installs
/// never gets a read to delay: the event loop called `accept4` about 11,600
/// times a second and used 88% of a core (measured: see README.md). This
/// handler, first in the server channel's pipeline, turns `autoRead` off on
/// such an error (which unregisters the socket from epoll), turns it back
/// on after `pause`, and has the public listener's ``ConnectionLimiter``
/// close its oldest waiting connections and keep below the count at which
/// descriptors ran out for 30 s, so that the backlog can then be accepted.
final class AcceptPause: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let drain: ConnectionLimiter
    private let logger: Logger
    private let pause: TimeAmount
    private var paused = false
    private let pauses: Counter

    init(drain: ConnectionLimiter, listener: String, logger: Logger, pause: TimeAmount = .milliseconds(100)) {
        self.drain = drain
        self.logger = logger
        self.pause = pause
        pauses = Counter(label: "thumbnail_accept_paused_total", dimensions: [("listener", listener)])
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // EMFILE and ENFILE, and ENOBUFS and ENOMEM, which NIO also treats as recoverable on accept.
        if let error = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode), !paused {
            paused = true
            pauses.increment()
            try? context.channel.syncOptions?.setOption(.autoRead, value: false)
            let (limit, closed) = drain.descriptorsRanOut()
            logger.warning("""
                accept: \(error.description); accepting paused for \(pause.nanoseconds / 1_000_000) ms, \
                \(closed) idle connections closed, at most \(limit) connections for 30 s
                """)
            let channel = context.channel
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: pause) {
                loopBound.value.paused = false
                // Registers the socket for reads again: the backlog is accepted.
                try? channel.syncOptions?.setOption(.autoRead, value: true)
            }
        }
        context.fireErrorCaught(error)
    }
}

@available(*, unavailable)
extension AcceptPause: Sendable {}

extension Channel {
    /// Puts an ``AcceptPause`` first in this server channel's pipeline
    /// (Hummingbird's `onServerRunning` gives the channel; its
    /// configuration has no place for a server channel handler of one's own).
    func addAcceptPause(drain: ConnectionLimiter, listener: String, logger: Logger) async {
        let channel = self
        do {
            try await eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(
                    AcceptPause(drain: drain, listener: listener, logger: logger), position: .first)
            }.get()
        } catch {
            logger.error("\(listener): no accept pause: \(error)")
        }
    }
}

/// The process's descriptor limit (`RLIMIT_NOFILE`).
enum DescriptorLimit {
    /// Descriptors kept for everything but client connections: 192 for the
    /// process itself (the event loops' epoll, event and timer descriptors,
    /// the listeners, the log, curl's own) and 8 for each of the loader's
    /// concurrent loads (a transfer's socket, a cached connection, the disk
    /// cache's files for it). 256 with the default 8 loads.
    static func reserve(concurrentLoads: Int) -> Int { 192 + 8 * concurrentLoads }

    /// Raises the soft limit to the hard limit (the soft one is often 1,024,
    /// the hard one far higher) and returns the soft limit now in force.
    static func raiseToHard() -> Int {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}
