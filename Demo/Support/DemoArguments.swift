/// What a command line asks the demo to do.
package enum DemoCommand: Equatable {
    /// Scroll a gallery (the generated one, or the inputs) and write the pictures and the report.
    case run(DemoOptions)
    /// `decode FILE...`: one JSON line per file.
    case decode(files: [String])
    /// `album [--photos N] [--output DIR] [--latency MS] [--json]`: page through a photo album.
    case album(photos: Int, output: String, latency: Int, json: Bool)
    /// `-h` or `--help`: print this text on standard output, exit with status 0.
    case help(String)
}

/// The options of a run, as given on the command line.
package struct DemoOptions: Equatable {
    /// Image URLs or file paths to load instead of the generated gallery.
    package var inputs: [String] = []
    /// `--urls`: a file with one URL or path per line.
    package var urlsFile: String?
    /// Everything else, with the defaults `--help` shows.
    package var settings = DemoSettings()
}

/// A command line the demo cannot run: `description` is the whole message for
/// standard error (what went wrong, then the usage); the demo exits with status 2.
package struct UsageError: Error, Equatable, CustomStringConvertible {
    package let description: String
}

/// The demo's command line, parsed by hand so that the package needs no
/// argument-parsing dependency (every package depending on AsyncImageKit would
/// resolve it). The help and the messages read as swift-argument-parser's did.
///
/// Options are `--name value` or `--name=value`; the last of a repeated option
/// wins; `--` ends the options; `-h`/`--help` anywhere shows the help, unless
/// a value before it is missing or invalid. A value may not start with `-`
/// unless it is a negative number (`--output --json` is a missing value).
package enum DemoArguments {
    package static let commandName = "asyncimage-demo"

    /// One `--name <name>` option, or a `--name` flag.
    package struct Option {
        package let name: String
        package let help: String
        /// What `--help` shows as the default; nil for none.
        package let defaultValue: String?
        package let takesValue: Bool
        /// Records the option's value (a flag's is empty); false if the value is invalid.
        package let apply: (inout DemoOptions, String) -> Bool

        /// How the help and the messages name it.
        package var label: String { takesValue ? "--\(name) <\(name)>" : "--\(name)" }
    }

    /// The root command's options, in the order `--help` lists them.
    package static var options: [Option] {
        [
            Option(name: "urls", help: "A file with one URL or path per line.", defaultValue: nil, takesValue: true) {
                $0.urlsFile = $1
                return true
            },
            value("concurrent-loads", \.concurrentLoads, "Transfers in flight at once."),
            value("timeout", \.timeout, "Seconds a transfer may take."),
            value("output", \.output, "Where to write the pictures and the report."),
            value("cells", \.cells, "Cells on screen (a multiple of 4 works best: the grid has 4 columns)."),
            value("scroll-speed", \.scrollSpeed, "Rows scrolled per second."),
            value("seed", \.seed, "Seed for a repeatable run."),
            value("images", \.images, "Pictures in the generated gallery."),
            value("latency", \.latency, "Milliseconds the embedded server waits before each answer (a slow network)."),
            Option(name: "json", help: "Print only the JSON report.", defaultValue: nil, takesValue: false) { options, _ in
                options.settings.json = true
                return true
            },
        ]
    }

    /// An option that sets one of the settings from its text (`Int("+5")` is 5, `Double("1e3")` is 1000).
    private static func value<Value: LosslessStringConvertible>(
        _ name: String, _ setting: WritableKeyPath<DemoSettings, Value>, _ help: String
    ) -> Option {
        Option(
            name: name, help: help, defaultValue: String(describing: DemoSettings()[keyPath: setting]), takesValue: true
        ) { options, text in
            guard let value = Value(text) else { return false }
            options.settings[keyPath: setting] = value
            return true
        }
    }

    /// Parses the arguments after the program's name.
    package static func parse(_ arguments: [String]) throws(UsageError) -> DemoCommand {
        if arguments.first == "decode" {
            // Only as the first word: elsewhere it is an input like any other.
            return try parseDecode(Array(arguments.dropFirst()))
        }
        if arguments.first == "album" { return try parseAlbum(Array(arguments.dropFirst())) }
        let options = self.options
        var result = DemoOptions()
        var wantsHelp = false
        var unknown: String?
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard isOptionLike(argument) else {
                result.inputs.append(argument)
                continue
            }
            if argument == "--" {
                result.inputs += remaining
                break
            }
            if argument == "-h" || argument == "--help" {
                wantsHelp = true
                continue
            }
            let (name, attached) = split(argument)
            guard let option = options.first(where: { "--\($0.name)" == name }) else {
                // Reported only after the help had its chance, as before.
                unknown = unknown ?? name
                continue
            }
            guard option.takesValue else {
                if let attached {
                    throw rootError("The option '\(name)' does not take any value, but '\(attached)' was specified.")
                }
                _ = option.apply(&result, "")
                continue
            }
            let text: String
            if let attached, !attached.isEmpty {
                text = attached
            } else if attached == nil, let next = remaining.first, !isOptionLike(next) || isNegativeNumber(next) {
                text = next
                remaining.removeFirst()
            } else {
                throw rootError("Missing value for '\(option.label)'", about: option)
            }
            guard option.apply(&result, text) else {
                throw rootError("The value '\(text)' is invalid for '\(option.label)'", about: option)
            }
        }
        if wantsHelp { return .help(rootHelp) }
        if let unknown {
            let names = options.map { "--\($0.name)" } + ["--help"]
            throw rootError("Unknown option '\(unknown)'" + suggestion(for: unknown, among: names))
        }
        if let problem = validationProblem(result.settings) { throw rootError(problem) }
        return .run(result)
    }

    /// What is wrong with these settings, if anything.
    package static func validationProblem(_ settings: DemoSettings) -> String? {
        guard settings.concurrentLoads >= 1 else { return "--concurrent-loads must be at least 1" }
        guard settings.timeout > 0 else { return "--timeout must be positive" }
        guard settings.cells >= 1 && settings.cells <= 400 else { return "--cells must be between 1 and 400" }
        guard settings.scrollSpeed > 0 else { return "--scroll-speed must be positive" }
        guard settings.images >= 1 && settings.images <= 5000 else { return "--images must be between 1 and 5000" }
        guard settings.latency >= 0 else { return "--latency must not be negative" }
        return nil
    }

    private static let albumHelp = """
        OVERVIEW: Page through a photo album (PhotoAlbum, Nimbus' data source) over generated photos with
        thumbnails: each page shows the best image in memory at once, then the thumbnail, the original's
        size from its header, and the original. Writes album.png (a row per page: what it showed over time)
        and album.json.

        USAGE: album [--photos N] [--output DIR] [--latency MS] [--json]

        OPTIONS:
          --photos N       Pages (default 8, at most 60).
          --output DIR     Where album.png and album.json go (default demo-output).
          --latency MS     Milliseconds the embedded server waits before each answer (default 15).
          --json           Print only album.json on standard output.

        """

    private static func parseAlbum(_ arguments: [String]) throws(UsageError) -> DemoCommand {
        var (photos, output, latency, json) = (8, "demo-output", 15, false)
        var remaining = arguments[...]
        func value(_ name: String) throws(UsageError) -> String {
            guard let next = remaining.popFirst() else {
                throw UsageError(description: "Error: Missing value for '\(name)'\n\n" + albumHelp)
            }
            return next
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "-h", "--help": return .help(albumHelp)
            case "--json": json = true
            case "--output": output = try value(argument)
            case "--photos":
                guard let n = Int(try value(argument)), (1...60).contains(n) else {
                    throw UsageError(description: "Error: --photos must be between 1 and 60\n")
                }
                photos = n
            case "--latency":
                guard let n = Int(try value(argument)), n >= 0 else {
                    throw UsageError(description: "Error: --latency must not be negative\n")
                }
                latency = n
            default:
                throw UsageError(description: "Error: Unknown option '\(argument)'\n\n" + albumHelp)
            }
        }
        return .album(photos: photos, output: output, latency: latency, json: json)
    }

    private static func parseDecode(_ arguments: [String]) throws(UsageError) -> DemoCommand {
        var files: [String] = []
        var wantsHelp = false
        var unknown: String?
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if !isOptionLike(argument) {
                files.append(argument)
            } else if argument == "--" {
                files += remaining
                break
            } else if argument == "-h" || argument == "--help" {
                wantsHelp = true
            } else {
                unknown = unknown ?? argument
            }
        }
        if wantsHelp { return .help(decodeHelp) }
        if let unknown {
            throw UsageError(
                description: "Error: Unknown option '\(unknown)'\nUsage: \(decodeUsage)\n  See 'decode --help' for more information.\n")
        }
        if files.isEmpty {
            throw UsageError(description: "Error: Missing expected argument '<files> ...'\n\n" + decodeHelp)
        }
        return .decode(files: files)
    }

    // MARK: Words

    private static func isOptionLike(_ argument: String) -> Bool {
        argument.hasPrefix("-") && argument != "-"
    }

    private static func isNegativeNumber(_ argument: String) -> Bool {
        argument.hasPrefix("-") && Double(argument) != nil
    }

    /// `--name=value` as ("--name", "value"); `--name` as ("--name", nil).
    private static func split(_ argument: String) -> (name: String, value: String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    /// ". Did you mean '--json'?" for a near miss (at most two edits), else nothing.
    private static func suggestion(for unknown: String, among names: [String]) -> String {
        let best = names.map { ($0, editDistance(unknown, $0)) }.min { $0.1 < $1.1 }
        guard let (name, distance) = best, distance <= 2 else { return "" }
        return ". Did you mean '\(name)'?"
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    // MARK: Help and messages

    private static let rootAbstract = "Scroll a gallery of images loaded with AsyncImageKit, and show what happened."
    private static let rootDiscussion = [
        "Without inputs it generates a sample gallery (photos, PNGs with alpha, animated GIFs and a few broken files) "
            + "and serves it from 127.0.0.1. With URLs or file paths it loads those instead. It writes "
            + "contact-sheet.png, timeline.png, crossfade.png and report.json to the output folder. An animated "
            + "picture on the final screen shows its first frame, labelled with its frame count, and crossfade.png "
            + "gets a second row: its playback.",
        "\(commandName) decode FILE... prints one JSON line per file instead.",
    ]
    private static let inputsHelp =
        "Image URLs (http, https, file) or file paths to load instead of the generated gallery."
    private static let helpEntry = entry("-h, --help", "Show help information.")
    private static let decodeUsage = "decode <files> ..."

    /// The one-line usage of the root command.
    package static var rootUsage: String {
        "\(commandName) [<inputs> ...] " + options.map { "[\($0.label)]" }.joined(separator: " ")
    }

    /// What `--help` prints.
    package static var rootHelp: String {
        var text = wrap("OVERVIEW: " + rootAbstract) + "\n"
        for paragraph in rootDiscussion { text += wrap(paragraph) + "\n" }
        text += "USAGE: \(rootUsage)\n\n"
        text += "ARGUMENTS:\n" + entry("<inputs>", inputsHelp) + "\n"
        text += "OPTIONS:\n"
        for option in options {
            text += entry(option.label, option.help + (option.defaultValue.map { " (default: \($0))" } ?? ""))
        }
        return text + helpEntry + "\n"
    }

    /// What `decode --help` prints.
    package static let decodeHelp =
        wrap("OVERVIEW: Decode files and print one JSON line each.") + "\n"
        + "USAGE: \(decodeUsage)\n\n"
        + "ARGUMENTS:\n" + entry("<files>", "Image files.") + "\n"
        + "OPTIONS:\n" + helpEntry + "\n"

    /// A bad root command line: the problem, the option's help if it is about
    /// one, and the usage.
    private static func rootError(_ message: String, about option: Option? = nil) -> UsageError {
        var text = "Error: \(message)\n"
        if let option { text += "Help:  \(option.label)  \(option.help)\n" }
        text += "Usage: \(rootUsage)\n  See '\(commandName) --help' for more information.\n"
        return UsageError(description: text)
    }

    /// A help entry: the label indented by 2, its text from column 26 (on the
    /// next line when the label is longer), wrapped; ends with a newline.
    private static func entry(_ label: String, _ help: String) -> String {
        let column = 26
        let head = "  " + label
        let first = head.count + 2 <= column
            ? head + String(repeating: " ", count: column - head.count)
            : head + "\n" + String(repeating: " ", count: column)
        return wrap(help, startingWith: first, indent: column)
    }

    /// `text` after `start`, word by word, in lines of at most 79 characters,
    /// continued lines indented by `indent`; ends with a newline.
    private static func wrap(_ text: String, startingWith start: String = "", indent: Int = 0) -> String {
        var lines: [String] = []
        var line = start
        var lineIsEmpty = true
        for word in text.split(separator: " ") {
            let lineLength = line.split(separator: "\n", omittingEmptySubsequences: false).last?.count ?? 0
            if !lineIsEmpty && lineLength + 1 + word.count > 79 {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                lineIsEmpty = true
            }
            line += (lineIsEmpty ? "" : " ") + word
            lineIsEmpty = false
        }
        lines.append(line)
        return lines.joined(separator: "\n") + "\n"
    }
}
