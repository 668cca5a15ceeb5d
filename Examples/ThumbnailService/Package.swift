// swift-tools-version: 6.2
import PackageDescription

/// The example thumbnail service (issue 28): AsyncImageKit behind
/// Hummingbird 2, with signed URLs, `/healthz`, `/metrics`, cancellation
/// when the client goes away and graceful shutdown. A package of its own,
/// so that the library's package resolves none of this.
let package = Package(
    name: "ThumbnailService",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The library, from this repository, with its two service integrations:
        // LoaderMetrics (MetricsSupport) and AsyncImageLoaderService (ServiceLifecycleSupport).
        .package(name: "AsyncImageView", path: "../..", traits: ["MetricsSupport", "ServiceLifecycleSupport"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "thumbnail-service",
            dependencies: [
                .product(name: "AsyncImageKit", package: "AsyncImageView"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Sources/ThumbnailService",
            swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
