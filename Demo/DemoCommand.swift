import AsyncImageKit
import DemoSupport
import Foundation

/// asyncimage-demo: the headless demo runner.
///
/// With no arguments it generates a gallery, serves it on 127.0.0.1, and
/// plays a user scrolling a grid of reusable cells through it, loading every
/// picture through AsyncImageKit over real HTTP; then it writes pictures of
/// what happened and a JSON report. `decode FILE...` prints one JSON line per
/// file (a stable shape that scripts use). The options: `DemoArguments`.
@main
enum AsyncImageDemo {
    /// Bad usage exits with status 2 and a message on standard error; a run
    /// that fails exits with status 1 ("Error: ..."), as does `decode` when a
    /// file does not decode.
    static func main() {
        let command: DemoCommand
        do {
            command = try DemoArguments.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data(error.description.utf8))
            exit(2)
        }
        switch command {
        case .help(let text):
            print(text, terminator: "")
        case .decode(let files):
            if !Decode.run(files) { exit(1) }
        case .album(let photos, let output, let latency, let json):
            do {
                try AlbumRun(photos: photos, output: output, latency: latency, json: json).run()
            } catch {
                FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
                exit(1)
            }
        case .run(let options):
            do {
                try run(options)
            } catch {
                FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
                exit(1)
            }
        }
    }

    static func run(_ options: DemoOptions) throws {
        var sources = options.inputs
        if let urlsFile = options.urlsFile {
            let text = try String(contentsOfFile: urlsFile, encoding: .utf8)
            sources += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        try DemoRun(settings: options.settings, userSources: sources).run()
    }
}
