// swift-tools-version: 6.2
import PackageDescription

/// AsyncImageView for Swift on Linux.
///
/// Layout (one concept per file, grouped by role):
/// - `AsyncImageKit`: the library (the only product a user links).
/// - `C*`: system-library module maps and one small C shim target (`CImageCodecs`)
///   that owns every `setjmp` used by libpng and libjpeg. giflib and libwebp
///   (`CGIF`, `CWebP`) report errors by return value and are called from Swift.
/// - `LoopbackHTTP`, `ImageFixtures`, `LoadMix`: support code for the tests,
///   the demo and the benchmark (a real HTTP/1.1 server on 127.0.0.1,
///   generated images, the load test's and the soak's request mix).
///
/// Only the library's own needs go in `dependencies` (swift-log): the demo,
/// the benchmark and the tests add none (the demo parses its own command
/// line), so a package that depends on AsyncImageKit resolves nothing it
/// does not use.
let package = Package(
    name: "AsyncImageView",
    products: [
        .library(name: "AsyncImageKit", targets: ["AsyncImageKit"]),
        .executable(name: "asyncimage-demo", targets: ["asyncimage-demo"]),
        .executable(name: "asyncimage-bench", targets: ["asyncimage-bench"]),
        .executable(name: "asyncimage-fuzz", targets: ["asyncimage-fuzz"]),
        .executable(name: "asyncimage-crashtest", targets: ["asyncimage-crashtest"]),
    ],
    dependencies: [
        // The library's diagnostics (what AsyncHTTPClient, Vapor and Hummingbird use).
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // System libraries, found with pkg-config (Debian 12 names).
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CPNG", pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"])]),
        .systemLibrary(
            name: "CJPEG", pkgConfig: "libjpeg",
            providers: [.apt(["libjpeg-dev"])]),
        .systemLibrary(
            name: "CGIF", pkgConfig: "libgif",
            providers: [.apt(["libgif-dev"])]),
        .systemLibrary(
            name: "CWebP", pkgConfig: "libwebpdemux",  // its .pc requires libwebp
            providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),

        // The only C code: whole PNG/JPEG decodes and encodes inside one C
        // function each, so that no longjmp ever crosses a Swift frame.
        .target(name: "CImageCodecs", dependencies: ["CPNG", "CJPEG"]),

        .target(
            name: "AsyncImageKit",
            dependencies: [
                "CCurl", "CImageCodecs", "CGIF", "CWebP", "CZlib", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]),

        // Support targets (not part of the library product).
        .target(
            name: "LoopbackHTTP", dependencies: ["CZlib"],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(
            name: "ImageFixtures", dependencies: ["AsyncImageKit", "CGIF", "CZlib"],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // The load mix shared by the load test and the benchmark's soak.
        .target(
            name: "LoadMix", dependencies: ["AsyncImageKit", "ImageFixtures", "LoopbackHTTP"],
            swiftSettings: [.swiftLanguageMode(.v6)]),

        // The disk cache's crash test: a writer killed at random moments,
        // then checked (CrashSafety: shared by the command and the tests).
        .target(
            name: "CrashSafety", dependencies: ["AsyncImageKit", "ImageFixtures", "LoopbackHTTP"],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "asyncimage-crashtest", dependencies: ["CrashSafety"], path: "CrashTest",
            swiftSettings: [.swiftLanguageMode(.v6)]),

        .executableTarget(
            name: "asyncimage-demo",
            dependencies: ["AsyncImageKit", "ImageFixtures", "LoopbackHTTP"],
            path: "Demo",
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "asyncimage-bench",
            dependencies: ["AsyncImageKit", "ImageFixtures", "LoopbackHTTP", "LoadMix", "CPNG", "CGIF", "CCurl"],
            path: "Benchmarks",
            exclude: ["reference"],
            swiftSettings: [.swiftLanguageMode(.v6)]),

        // The HTTP cache held to the public HTTP cache test suite (see
        // Conformance/README.md): its node scripts are a resource, the suite is not.
        .executableTarget(
            name: "asyncimage-conformance",
            dependencies: ["AsyncImageKit", "LoopbackHTTP"],
            path: "Conformance",
            exclude: ["README.md", "minimum"],
            resources: [.copy("Scripts")],
            swiftSettings: [.swiftLanguageMode(.v6)]),

        // The libFuzzer targets (see Fuzz/run): the targets themselves, also
        // replayed by the tests, and the libFuzzer entry point.
        .target(
            name: "FuzzTargets",
            dependencies: ["AsyncImageKit"],
            path: "Fuzz/Targets",
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "asyncimage-fuzz",
            dependencies: ["FuzzTargets"],
            path: "Fuzz",
            exclude: ["Targets", "run", "smoke", "seeds", "lsan.supp"],
            swiftSettings: [.swiftLanguageMode(.v6)]),

        .testTarget(
            name: "AsyncImageKitTests",
            dependencies: [
                "AsyncImageKit", "ImageFixtures", "LoopbackHTTP", "LoadMix", "asyncimage-demo", "asyncimage-bench",
                "FuzzTargets", "CrashSafety",
                .product(name: "Logging", package: "swift-log"),
            ],
            // Read from disk by path (see FuzzRegressionTests), not bundled.
            exclude: ["Resources"],
            swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
