import ArgumentParser
import AsyncImageKit
import Crypto
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `thumbnail-service`: thumbnails of signed source URLs over HTTP, made by
/// AsyncImageKit and served by Hummingbird 2.
///
/// ```sh
/// THUMB_KEY=... swift run -c release thumbnail-service --port 8080
/// ```
@main
struct ThumbnailService: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail-service",
        abstract: "Thumbnails of signed image URLs (AsyncImageKit on Hummingbird 2).",
        discussion: "The HMAC-SHA256 key is read from THUMB_KEY: no start without it, unless --unsigned.")

    @Option(help: "The port to listen on.")
    var port = 8080
    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"
    @Option(name: .customLong("cache-dir"), help: "The disk cache's folder (default: a temporary one, removed at exit).")
    var cacheDirectory: String?
    @Option(name: .customLong("cache-size-mb"), help: "The disk cache's size limit, in MiB.")
    var cacheSizeMB = 1024
    @Option(name: .customLong("memory-budget-mb"), help: "The memory cache and pixel pool together, in MiB.")
    var memoryBudgetMB = 256
    @Option(help: "The most source transfers at once.")
    var concurrentLoads = 8
    @Option(help: "Seconds a request may take in all (queue, transfer, disk, decode); 504 after.")
    var timeout: Double = 30
    @Option(name: .customLong("resize-quality"),
            help: "high (shrink-on-load with a margin, Lanczos3 in linear light) or fast (the area average of 0.11).")
    var resizeQuality: ResizeQuality = .high
    @Flag(help: "Let sources on the loopback address be fetched (tests and Benchmarks/Service only).")
    var allowLoopbackOrigin = false
    @Flag(help: "Check no signature: local testing only.")
    var unsigned = false
    @Option(name: .customLong("idle-timeout"),
            help: "Seconds a connection may wait between requests, or read nothing of a response, before it is closed.")
    var idleTimeout: Double = 60
    @Option(name: .customLong("header-timeout"),
            help: "Seconds a connection may take to send a request head, from its accept or from the request's first byte.")
    var headerTimeout: Double = 10
    @Option(name: .customLong("max-connections"),
            help: "Open connections at most on the public listener; at the limit the one idle longest is closed to make room.")
    var maxConnections = 1024
    @Option(name: .customLong("admin-port"),
            help: "Serve /healthz, /metrics and /budget on this port only (not on --port).")
    var adminPort: Int?
    @Option(name: .customLong("admin-host"), help: "The address of the --admin-port listener.")
    var adminHost = "127.0.0.1"

    /// Open connections at most on the `--admin-port` listener: a few
    /// scrapers and health checkers.
    static let adminMaxConnections = 64

    func validate() throws {
        guard unsigned || !(ProcessInfo.processInfo.environment["THUMB_KEY"] ?? "").isEmpty else {
            throw ValidationError("THUMB_KEY is not set: set it to the URL-signing key (or test locally with --unsigned)")
        }
        guard (1...65535).contains(port), memoryBudgetMB >= 0, cacheSizeMB > 0, concurrentLoads > 0, timeout > 0 else {
            throw ValidationError("--port, --memory-budget-mb, --cache-size-mb, --concurrent-loads or --timeout: out of range")
        }
        // A day at most: the seconds become nanoseconds in an Int64.
        guard (0.001...86_400).contains(idleTimeout), (0.001...86_400).contains(headerTimeout), maxConnections > 0 else {
            throw ValidationError("--idle-timeout and --header-timeout: 0.001 to 86400 s; --max-connections: above 0")
        }
        if let adminPort, !(1...65535).contains(adminPort) || adminPort == port {
            throw ValidationError("--admin-port must be a port other than --port")
        }
    }

    func run() async throws {
        let logger = Logger(label: "thumbnail-service")
        let secret = ProcessInfo.processInfo.environment["THUMB_KEY", default: ""]
        let key = unsigned ? nil : SymmetricKey(data: Data(secret.utf8))
        if unsigned { logger.warning("--unsigned: any URL is fetched; keep it off any address others can reach") }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("thumbnail-service-\(getpid())")
        let folder = cacheDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? temporary
        defer { if cacheDirectory == nil { try? FileManager.default.removeItem(at: folder) } }
        var configuration = AsyncImageLoader.Configuration.service(
            memoryBudget: memoryBudgetMB << 20, concurrentLoads: concurrentLoads,
            diskCache: try DataCache(directory: folder, limits: .init(sizeLimit: cacheSizeMB << 20)))
        if allowLoopbackOrigin {
            let loopback: Set = [IPAddress("127.0.0.1")!, IPAddress("::1")!]
            configuration.urlPolicy = configuration.urlPolicy.allowing(addresses: loopback)
        }
        configuration.requestTimeout = .milliseconds(Int64(timeout * 1000))
        configuration.resizeQuality = resizeQuality
        configuration.logger = logger
        let loader = AsyncImageLoader(configuration: configuration)
        // The loader's requests, bytes and stage times as swift-metrics (`asyncimage_...` at /metrics).
        let loaderMetrics = LoaderMetrics(loader: loader, labelPrefix: "asyncimage")

        let routes = Routes(
            loader: loader, key: key, memoryBudget: memoryBudgetMB << 20,
            maxPendingRequests: configuration.maxPendingRequests, metrics: registry)

        // Connections: the descriptor limit raised as far as the hard limit
        // allows, and the connection limits kept inside it, so that client
        // connections can never take the descriptors the loader, the disk
        // cache and the listeners need.
        let descriptors = DescriptorLimit.raiseToHard()
        let adminConnections = adminPort == nil ? 0 : Self.adminMaxConnections
        let room = max(1, descriptors - DescriptorLimit.reserve(concurrentLoads: concurrentLoads) - adminConnections)
        if maxConnections > room {
            logger.warning("--max-connections \(maxConnections) lowered to \(room): the descriptor limit is \(descriptors)")
        }
        let limits = ConnectionLimits(
            headerTimeout: .nanoseconds(Int64(headerTimeout * 1e9)), idleTimeout: .nanoseconds(Int64(idleTimeout * 1e9)),
            maxConnections: min(maxConnections, room))
        logger.info("""
            connections: at most \(limits.maxConnections) (descriptor limit \(descriptors)), \
            header timeout \(headerTimeout) s, idle timeout \(idleTimeout) s
            """)
        let publicLimiter = ConnectionLimiter(name: "public", limits: limits, logger: logger)
        let app = Application(
            router: routes.router(for: adminPort == nil ? [.thumbnails, .operations] : [.thumbnails]),
            server: .guardedHTTP1(limiter: publicLimiter, extraHandlers: { [DisconnectWatcher()] }),
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { await $0.addAcceptPause(drain: publicLimiter, listener: "public", logger: logger) },
            logger: logger)
        var servers: [any Service] = [app]
        if let adminPort {
            // Its own listener and connection limit: a flood on the public
            // port leaves health checks and metrics answered.
            var adminLimits = limits
            adminLimits.maxConnections = adminConnections
            let admin = Application(
                router: routes.router(for: [.operations]),
                server: .guardedHTTP1(limiter: ConnectionLimiter(name: "admin", limits: adminLimits, logger: logger)),
                configuration: .init(address: .hostname(adminHost, port: adminPort), serverName: nil),
                // Descriptors are the process's: the public listener's idle connections make room.
                onServerRunning: { await $0.addAcceptPause(drain: publicLimiter, listener: "admin", logger: logger) },
                logger: logger)
            servers.insert(admin, at: 0)
        }

        // On SIGTERM or SIGINT the group shuts its services down in reverse
        // order: the public server stops accepting and finishes the
        // requests it has, then the admin one (health and metrics answered
        // meanwhile), then the loader drains (pending requests, up to the
        // time limit, then cancelled; the disk cache's writes flushed).
        let group = ServiceGroup(
            services: [AsyncImageLoaderService(loader: loader, drainTimeout: 10)] + servers,
            gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger)
        try await group.run()
        withExtendedLifetime(loaderMetrics) {}
        logger.info("stopped")
    }
}

/// `--resize-quality high|fast`: the loader's raw values.
extension ResizeQuality: @retroactive ExpressibleByArgument {}
