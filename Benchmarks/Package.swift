// swift-tools-version: 6.2
import PackageDescription

/// asyncimage-bench: AsyncImageKit's speed and memory against peers measured
/// in the same run (see BENCHMARKS.md at the repository's root). A package of
/// its own, with a path dependency on the root (as Examples/ThumbnailService
/// is), so that the library's package resolves none of what the benchmark
/// needs (its argument parser).
///
/// Layout:
/// - `asyncimage-bench`: the command, one subcommand per workload
///   (Sources/asyncimage-bench/Commands), and the workloads themselves.
/// - `BenchmarkSupport`: what the tests exercise in process: the result model
///   (samples, goals, tables, the report), charts, the machine description.
/// - `CBench*`: module maps of the C libraries the benchmark calls itself
///   (libpng's and giflib's own decoders as peers, libpng's and libcurl's
///   versions). The root's `C*` module maps are not products, and module
///   names must differ from theirs across the package graph.
/// - Two test targets: `BenchmarkSupportTests` (in process, fast) and
///   `BenchmarkHarnessTests` (the binary end to end: `all --smoke`, the
///   command line's refusals, a child's report).
///
///     swift build -c release --package-path Benchmarks
///     Benchmarks/.build/release/asyncimage-bench all --smoke
let package = Package(
    name: "AsyncImageBenchmarks",
    products: [
        .executable(name: "asyncimage-bench", targets: ["asyncimage-bench"]),
    ],
    dependencies: [
        // The library and the root's test and benchmark support (not API).
        .package(name: "AsyncImageView", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // System libraries, found with pkg-config (Debian 12 names), as the root finds them.
        .systemLibrary(name: "CBenchPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CBenchGIF", pkgConfig: "libgif", providers: [.apt(["libgif-dev"])]),
        .systemLibrary(name: "CBenchCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "AsyncImageKit", package: "AsyncImageView"),
                .product(name: "AsyncImageKitTestSupport", package: "AsyncImageView"),
                "CBenchPNG", "CBenchCurl",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "asyncimage-bench",
            dependencies: [
                "BenchmarkSupport", "CBenchPNG", "CBenchGIF", "CBenchCurl",
                .product(name: "AsyncImageKit", package: "AsyncImageView"),
                .product(name: "AsyncImageKitTestSupport", package: "AsyncImageView"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]),

        .testTarget(
            name: "BenchmarkSupportTests",
            dependencies: ["BenchmarkSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // Runs the asyncimage-bench binary that `swift build` puts beside the test bundle.
        .testTarget(
            name: "BenchmarkHarnessTests",
            dependencies: [
                "BenchmarkSupport", .product(name: "AsyncImageKit", package: "AsyncImageView"),
                .product(name: "AsyncImageKitTestSupport", package: "AsyncImageView"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
