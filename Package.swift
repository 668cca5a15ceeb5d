// swift-tools-version: 6.2
import PackageDescription

/// AsyncImageView for Swift on Linux.
///
/// Layout (one concept per file, grouped by role):
/// - `AsyncImageKit`: the library (the product a user links; with the
///   trait `GTKSupport`, `AsyncImageGTK` too: see below).
/// - `C*`: system-library module maps and one small C shim target (`CImageCodecs`)
///   that owns every `setjmp` used by libpng and libjpeg. giflib, libwebp,
///   libavif, libheif, libjxl and Little CMS (`CGIF`, `CWebP`, `CAVIF`,
///   `CHEIF`, `CJXL`, `CLCMS2`) report errors by return value and are
///   called from Swift.
/// - `LoopbackHTTP`, `ImageFixtures`, `LoadMix`: support code for the tests,
///   the demo and the benchmark (a real HTTP/1.1 server on 127.0.0.1,
///   generated images, the load test's and the soak's request mix).
/// - `DemoSupport`: the part of the demo that the tests exercise in process
///   (its command line and recorder), so that no test target depends on an
///   executable.
/// - Two test targets: `AsyncImageKitTests`, fast and without sockets or child
///   processes (`swift test --filter AsyncImageKitTests.`), and
///   `AsyncImageKitIntegrationTests` (loopback HTTP, TLS, HTTP/2, child
///   processes, load and crash tests); `TestSupport` holds what both use.
///
/// The benchmark (`Benchmarks/`) is a package of its own, with a path
/// dependency on this one (as `Examples/ThumbnailService` is), so that its
/// argument parser and its peers' needs stay out of this graph. It needs
/// three of the support targets above, and a package can only use another's
/// products, hence one product that is not API:
/// - `AsyncImageKitTestSupport` (`LoopbackHTTP`, `ImageFixtures`, `LoadMix`):
///   test and benchmark support, not part of the library's API and without
///   any promise of stability (as swift-nio's `NIOTestUtils`). It adds no
///   dependency: a user who does not name it builds none of it.
/// The C libraries the benchmark calls directly (libpng's and giflib's own
/// decoders as peers, libcurl's and libpng's versions) it declares with module
/// maps of its own, so no `C*` target here is a product.
///
/// Only the library's own needs go in `dependencies` (swift-log): the demo
/// and the tests add none (the demo parses its own command
/// line), so a package that depends on AsyncImageKit resolves nothing it
/// does not use. Two optional integrations for services sit behind package
/// traits, off by default, and each of their uses is guarded by
/// `.when(traits:)`: a consumer that does not enable them resolves neither
/// swift-metrics nor swift-service-lifecycle (`.ci/consumer` checks it).
/// - `MetricsSupport`: `LoaderMetrics` (swift-metrics counters and timers).
/// - `ServiceLifecycleSupport`: `AsyncImageLoaderService` (drain and flush
///   on a graceful shutdown).
/// - `GTKSupport`: the `AsyncImageGTK` product (a GTK 4 picture that loads
///   itself, the main queue drained by GLib's main loop) and the
///   `asyncimage-gallery` example. Its system library (`CGTK`, pkg-config
///   `gtk4`) and its C shim (`CAsyncImageGTK`) are dependencies only
///   `.when(traits: ["GTKSupport"])`: without the trait, SwiftPM never asks
///   pkg-config for gtk4 and the shim compiles to nothing (its code is
///   guarded by a define set only with the trait, since a trait's own
///   condition reaches Swift and not C), so neither `swift build` nor a
///   library user needs GTK's headers. A user turns it on in the
///   dependency: `.package(url: ..., from: ..., traits: ["GTKSupport"])`.
let package = Package(
    name: "AsyncImageView",
    products: [
        .library(name: "AsyncImageKit", targets: ["AsyncImageKit"]),
        .executable(name: "asyncimage-demo", targets: ["asyncimage-demo"]),
        .executable(name: "asyncimage-fuzz", targets: ["asyncimage-fuzz"]),
        .executable(name: "asyncimage-crashtest", targets: ["asyncimage-crashtest"]),
        // Test and benchmark support for Benchmarks/ (see the header): not API.
        .library(name: "AsyncImageKitTestSupport", targets: ["LoopbackHTTP", "ImageFixtures", "LoadMix"]),
        // GTK 4 (trait GTKSupport; without it both build to nothing).
        .library(name: "AsyncImageGTK", targets: ["AsyncImageGTK"]),
        .executable(name: "asyncimage-gallery", targets: ["asyncimage-gallery"]),
    ],
    traits: [
        .trait(name: "MetricsSupport", description: "LoaderMetrics: the loader's requests, bytes and stage times as swift-metrics counters and timers."),
        .trait(name: "ServiceLifecycleSupport", description: "AsyncImageLoaderService: a swift-service-lifecycle Service that drains the loader and flushes its disk writes on shutdown."),
        .trait(name: "GTKSupport", description: "AsyncImageGTK: a GTK 4 picture that loads itself, delivery on GLib's main loop, and the asyncimage-gallery example (needs libgtk-4-dev)."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        // The library's diagnostics (what AsyncHTTPClient, Vapor and Hummingbird use).
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // Only with the traits above (pruned from a consumer's graph without them).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
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
        // Little CMS 2: colour management (ICC profiles to sRGB). It reports
        // errors by return value, never longjmp, so Swift calls it directly.
        .systemLibrary(
            name: "CLCMS2", pkgConfig: "lcms2",
            providers: [.apt(["liblcms2-dev"])]),

        // The modern formats (issue 32). Their libraries report errors by
        // return value, never longjmp, so Swift calls them directly. Each
        // shim stops the build with what to install when the headers are missing.
        // libavif's pkg-config cflags hold -DAVIF_DLL, which SwiftPM
        // refuses with a warning (and which only matters on Windows): its
        // headers are in /usr/include, and the module map links it.
        .systemLibrary(
            name: "CAVIF",
            providers: [.apt(["libavif-dev"])]),
        .systemLibrary(
            name: "CHEIF", pkgConfig: "libheif",
            providers: [.apt(["libheif-dev"])]),
        // As for libavif: libjxl's pkg-config cflags hold -DHWY_SHARED_DEFINE
        // (for C++ users of highway), which SwiftPM refuses with a warning.
        .systemLibrary(
            name: "CJXL",
            providers: [.apt(["libjxl-dev"])]),

        // GTK 4, only with the trait GTKSupport (see the header): nothing
        // depends on it otherwise, so pkg-config is never asked for gtk4.
        .systemLibrary(
            name: "CGTK", pkgConfig: "gtk4",
            providers: [.apt(["libgtk-4-dev"])]),
        // What Swift cannot import from GTK (casts, G_CALLBACK, the
        // paintable that cross-fades, the main queue's GLib source); its
        // code compiles only with ASYNCIMAGE_GTK, defined with the trait.
        .target(
            name: "CAsyncImageGTK",
            dependencies: [.target(name: "CGTK", condition: .when(traits: ["GTKSupport"]))],
            cSettings: [.define("ASYNCIMAGE_GTK", .when(traits: ["GTKSupport"]))]),

        // The only C code of the library itself: whole PNG/JPEG decodes and encodes inside one C
        // function each, so that no longjmp ever crosses a Swift frame.
        .target(name: "CImageCodecs", dependencies: ["CPNG", "CJPEG"]),

        .target(
            name: "AsyncImageKit",
            dependencies: [
                "CCurl", "CImageCodecs", "CGIF", "CWebP", "CAVIF", "CHEIF", "CJXL", "CZlib", "CLCMS2", .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["MetricsSupport"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycleSupport"])),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]),

        // The GTK 4 integration (trait GTKSupport; its Swift code is inside
        // `#if GTKSupport`, so without the trait it is an empty module).
        .target(
            name: "AsyncImageGTK",
            dependencies: [
                "AsyncImageKit",
                .target(name: "CGTK", condition: .when(traits: ["GTKSupport"])),
                .target(name: "CAsyncImageGTK", condition: .when(traits: ["GTKSupport"])),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // The recycling GtkGridView example (Examples/Gallery): its grid and
        // local origin (GalleryKit, also driven by AsyncImageGTKTests) and
        // the program. Both empty without the trait.
        .target(
            name: "AsyncImageGalleryKit",
            dependencies: [
                "AsyncImageKit", "LoopbackHTTP",
                .target(name: "AsyncImageGTK", condition: .when(traits: ["GTKSupport"])),
            ],
            path: "Examples/Gallery/GalleryKit",
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "asyncimage-gallery",
            dependencies: [
                "AsyncImageKit",
                .target(name: "AsyncImageGTK", condition: .when(traits: ["GTKSupport"])),
                .target(name: "AsyncImageGalleryKit", condition: .when(traits: ["GTKSupport"])),
            ],
            path: "Examples/Gallery/App",
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

        // The demo's command line and recorder (Demo/Support), tested in process.
        .target(
            name: "DemoSupport", dependencies: ["AsyncImageKit"], path: "Demo/Support",
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "asyncimage-demo",
            dependencies: ["AsyncImageKit", "DemoSupport", "ImageFixtures", "LoopbackHTTP"],
            path: "Demo",
            exclude: ["Support"],
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

        // What both test targets use: the fake transport and its harness, the
        // seams' test doubles, the delivery log, the corpus, EXIF blocks, small
        // helpers. No sockets, no child processes (those helpers live in the
        // integration target).
        .target(
            name: "TestSupport",
            dependencies: ["AsyncImageKit", "ImageFixtures", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]),

        // The fast tests: no sockets, no child processes, no servers.
        .testTarget(
            name: "AsyncImageKitTests",
            dependencies: [
                "AsyncImageKit", "TestSupport", "ImageFixtures", "FuzzTargets", "DemoSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["MetricsSupport"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycleSupport"])),
            ],
            // Read from disk by path (see FuzzRegressionTests), not bundled.
            exclude: ["Resources"],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // The GTK integration under Xvfb (.ci/gtk): empty without the trait.
        .testTarget(
            name: "AsyncImageGTKTests",
            dependencies: [
                "AsyncImageKit", "ImageFixtures", "LoopbackHTTP",
                .target(name: "AsyncImageGTK", condition: .when(traits: ["GTKSupport"])),
                .target(name: "AsyncImageGalleryKit", condition: .when(traits: ["GTKSupport"])),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // Loopback HTTP, TLS and HTTP/2 servers, child processes (workers,
        // crash tests, the demo binary), load and leak checks.
        .testTarget(
            name: "AsyncImageKitIntegrationTests",
            dependencies: [
                "AsyncImageKit", "TestSupport", "ImageFixtures", "LoopbackHTTP", "LoadMix", "CrashSafety", "DemoSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            // Run by ColourConversionTests from its path, not bundled.
            exclude: ["Colour/make-colour-fixtures.py"],
            swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
