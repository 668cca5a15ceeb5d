import CBenchCurl
import CBenchPNG
import Foundation

/// Where and when a run was made: the date, the machine, and the versions of
/// the libraries and peers it measured (the figures mean little without them).
package struct MachineDescription: Sendable {
    package var date: String
    package var processor: String
    package var cores: Int
    package var memoryGiB: Double
    package var system: String
    /// Library or tool and its version, in a fixed order; missing ones are left out.
    package var versions: [(name: String, version: String)]

    package static func current() -> MachineDescription {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown processor"
        let release = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let system =
            release.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
            .map { $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) } ?? "Linux"
        var versions: [(String, String)] = []
        // The toolchain on PATH (the one that built this, when run as documented).
        if let swift = commandOutput(["swift", "--version"])?.split(separator: "\n").first {
            versions.append(("Swift", String(swift.replacingOccurrences(of: "Swift version ", with: ""))))
        }
        // "libcurl/7.88.1 OpenSSL/3.0.x zlib/... ": the first word.
        let curl = String(cString: curl_version()).split(separator: " ").first.map(String.init) ?? ""
        versions.append(("libcurl", curl.replacingOccurrences(of: "libcurl/", with: "")))
        versions.append(("libpng", String(cString: png_get_libpng_ver(nil))))
        // Debian packages, for what the program cannot ask the library itself.
        for (name, package) in [
            ("libjpeg-turbo", "libjpeg62-turbo"), ("giflib", "libgif7"), ("libwebp", "libwebp7"),
            ("vipsthumbnail (libvips)", "libvips42"), ("ImageMagick", "imagemagick-6.q16"),
            ("nginx", "nginx"), ("curl", "curl"),
        ] {
            if let version = debianPackageVersion(package) { versions.append((name, version)) }
        }
        if let pillow = commandOutput(["python3", "-c", "import PIL; print(PIL.__version__)"]) {
            versions.append(("Pillow", pillow))
        }
        return MachineDescription(
            date: formatter.string(from: Date()), processor: model, cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryGiB: Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824, system: system, versions: versions)
    }

    package var summary: String {
        "\(cores) cores of \(processor), \(String(format: "%.0f", memoryGiB)) GiB, \(system)"
    }

    package var markdown: String {
        "Machine: \(summary).\n\nVersions: " + versions.map { "\($0.name) \($0.version)" }.joined(separator: ", ") + ".\n"
    }

    package var plain: String {
        "\(date): \(summary)\n" + versions.map { "  \($0.name) \($0.version)" }.joined(separator: "\n") + "\n"
    }
}

/// The installed version of a Debian package, or nil.
package func debianPackageVersion(_ package: String) -> String? {
    guard let text = commandOutput(["dpkg-query", "-W", "-f=${Status}\t${Version}", package]) else { return nil }
    let parts = text.split(separator: "\t")
    guard parts.count == 2, parts[0].hasSuffix("installed"), !parts[0].contains("not-installed") else { return nil }
    return String(parts[1])
}

/// What `argv` prints on standard output (trimmed) if it exits with 0; nil otherwise.
/// The program is looked up on PATH.
package func commandOutput(_ argv: [String]) -> String? {
    guard let program = argv.first.flatMap({ $0.hasPrefix("/") ? $0 : which($0) }) else { return nil }
    guard
        let run = try? ProcessRun.run(
            URL(fileURLWithPath: program), Array(argv.dropFirst()), errors: .discarded, timeLimit: 60),
        run.status == 0
    else { return nil }
    let text = run.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
    return text.isEmpty ? nil : text
}
