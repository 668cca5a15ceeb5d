import ArgumentParser
import AsyncImageKit
import Foundation

/// asyncimage-demo: the headless demo runner.
///
/// With no arguments it generates a gallery, serves it on 127.0.0.1, and
/// plays a user scrolling a grid of reusable cells through it, loading every
/// picture through AsyncImageKit over real HTTP; then it writes pictures of
/// what happened and a JSON report. `decode FILE...` prints one JSON line per
/// file (a stable shape that scripts use).
@main
struct AsyncImageDemo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "asyncimage-demo",
        abstract: "Scroll a gallery of images loaded with AsyncImageKit, and show what happened.",
        discussion: """
            Without inputs it generates a sample gallery (photos, PNGs with alpha, animated GIFs \
            and a few broken files) and serves it from 127.0.0.1. With URLs or file paths it \
            loads those instead. It writes contact-sheet.png, timeline.png, crossfade.png and \
            report.json to the output folder.

            asyncimage-demo decode FILE... prints one JSON line per file instead.
            """)

    @Argument(help: "Image URLs (http, https, file) or file paths to load instead of the generated gallery.")
    var inputs: [String] = []

    @Option(name: .customLong("urls"), help: "A file with one URL or path per line.")
    var urlsFile: String?

    @Option(help: "Transfers in flight at once.")
    var concurrentLoads: Int = 2

    @Option(help: "Seconds a transfer may take.")
    var timeout: Double = 10

    @Option(help: "Where to write the pictures and the report.")
    var output: String = "demo-output"

    @Option(help: "Cells on screen (a multiple of 4 works best: the grid has 4 columns).")
    var cells: Int = 16

    @Option(help: "Rows scrolled per second.")
    var scrollSpeed: Double = 25

    @Option(help: "Seed for a repeatable run.")
    var seed: UInt64 = 1

    @Option(help: "Pictures in the generated gallery.")
    var images: Int = 300

    @Option(help: "Milliseconds the embedded server waits before each answer (a slow network).")
    var latency: Int = 15

    @Flag(help: "Print only the JSON report.")
    var json = false

    func validate() throws {
        guard concurrentLoads >= 1 else { throw ValidationError("--concurrent-loads must be at least 1") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        guard cells >= 1 && cells <= 400 else { throw ValidationError("--cells must be between 1 and 400") }
        guard scrollSpeed > 0 else { throw ValidationError("--scroll-speed must be positive") }
        guard images >= 1 && images <= 5000 else { throw ValidationError("--images must be between 1 and 5000") }
        guard latency >= 0 else { throw ValidationError("--latency must not be negative") }
    }

    func run() throws {
        var sources = inputs
        if let urlsFile {
            let text = try String(contentsOfFile: urlsFile, encoding: .utf8)
            sources += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        let settings = DemoSettings(
            concurrentLoads: concurrentLoads, timeout: timeout, output: output, cells: cells,
            scrollSpeed: scrollSpeed, seed: seed, images: images, latency: latency, json: json)
        try DemoRun(settings: settings, userSources: sources).run()
    }

    /// Bad options exit with status 2 and a usage message.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            if arguments.first == "decode" {
                // Dispatched by hand: the root command's positional inputs would swallow the word.
                let command = try Decode.parse(Array(arguments.dropFirst()))
                try command.run()
                return
            }
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            let decoding = arguments.first == "decode"
            let code = decoding ? Decode.exitCode(for: error) : exitCode(for: error)
            if code == .validationFailure {
                let message = decoding ? Decode.fullMessage(for: error) : fullMessage(for: error)
                FileHandle.standardError.write(Data((message + "\n").utf8))
                Foundation.exit(2)
            }
            if decoding { Decode.exit(withError: error) }
            exit(withError: error)
        }
    }
}

/// Everything a run was asked to do.
struct DemoSettings {
    var concurrentLoads: Int
    var timeout: Double
    var output: String
    var cells: Int
    var scrollSpeed: Double
    var seed: UInt64
    var images: Int
    var latency: Int
    var json: Bool
}
