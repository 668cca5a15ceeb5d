#if ServiceLifecycleSupport
    import ServiceLifecycle

    /// A loader in a swift-service-lifecycle `ServiceGroup` (package trait
    /// `ServiceLifecycleSupport`): on a graceful shutdown it lets the
    /// pending requests finish, then waits for the disk cache's writes, so
    /// the next start finds every image that was delivered.
    ///
    /// ```swift
    /// let group = ServiceGroup(
    ///     configuration: .init(
    ///         services: [
    ///             .init(service: AsyncImageLoaderService(loader: loader)),
    ///             .init(service: app, successTerminationBehavior: .gracefullyShutdownGroup),
    ///         ],
    ///         gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    /// try await group.run()
    /// ```
    ///
    /// A group shuts its services down in reverse order: list the loader
    /// before the HTTP server, so the server stops taking requests (and
    /// its handlers finish) before the loader drains.
    ///
    /// What ``run()`` does:
    /// - until the group shuts down gracefully: nothing (the loader works
    ///   without it);
    /// - then ``AsyncImageLoader/drain(timeout:)``: waits up to
    ///   `drainTimeout` seconds for the pending requests, cancels what is
    ///   left, and waits for the disk writes (without blocking a thread of
    ///   the concurrency pool);
    /// - if its task is cancelled instead (a group that ends at once), it
    ///   cancels every pending request and waits for the disk writes.
    public struct AsyncImageLoaderService: Service {
        /// The loader it drains.
        public let loader: AsyncImageLoader
        /// The most seconds the pending requests are given on shutdown.
        public let drainTimeout: Double

        /// A service for `loader`.
        public init(loader: AsyncImageLoader, drainTimeout: Double = 10) {
            self.loader = loader
            self.drainTimeout = drainTimeout
        }

        /// Waits for the group's graceful shutdown, then drains the loader.
        public func run() async throws {
            try? await gracefulShutdown()  // throws only when the task is cancelled
            await loader.drain(timeout: Task.isCancelled ? 0 : drainTimeout)
        }
    }
#endif
