// asyncimage-crashtest: the disk cache's crash test (see CrashSafety).
//
//   asyncimage-crashtest run [--kills N] [--seed S] [--folder DIR] [--verbose]
//       starts a writer process (this program, `writer`), kills it with
//       SIGKILL at a random moment, checks the folder as the next start
//       would, N times (default 500); exits 1 if any check found a mixed or
//       corrupt entry, a temporary file left, or totals that disagree.
//   asyncimage-crashtest writer DIR SEED [SECONDS]
//       the writer: loads, revalidates, replaces, stores thumbnails, trims,
//       until killed (or SECONDS pass).
import CrashSafety
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())

func value(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

switch arguments.first {
case "writer":
    guard arguments.count >= 3, let seed = UInt64(arguments[2]) else {
        FileHandle.standardError.write(Data("usage: asyncimage-crashtest writer DIR SEED [SECONDS]\n".utf8))
        exit(2)
    }
    let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 3600 : 3600
    try CrashSafety.runWriter(folder: URL(fileURLWithPath: arguments[1]), seed: seed, seconds: seconds)
case "run":
    let kills = value("--kills").flatMap { Int($0) } ?? 500
    let verbose = arguments.contains("--verbose")
    let seed = value("--seed").flatMap { UInt64($0) } ?? UInt64(Date().timeIntervalSince1970)
    let folder = URL(
        fileURLWithPath: value("--folder") ?? NSTemporaryDirectory() + "asyncimage-crashtest-\(getpid())")
    try? FileManager.default.removeItem(at: folder)
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
    print("asyncimage-crashtest: \(kills) kills, seed \(seed), folder \(folder.path)")
    let started = Date()
    let result = try CrashSafety.run(kills: kills, folder: folder, seed: seed) { writerSeed in
        let process = Process()
        process.executableURL = executable
        process.arguments = ["writer", folder.path, String(writerSeed)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    } log: { line in
        if verbose || (line.hasPrefix("kill ") && !(line.contains(" 0 mismatches,") && line.contains(", 0 left,"))) {
            print(line)
        }
    }
    let total = result.total
    print(
        String(
            format: "%d kills in %.0f s: %d stored responses, %d bodies and %d thumbnails read back and checked; "
                + "%d mismatched or corrupt; %d kills landed mid-write (a temporary file left), %d temporary files "
                + "left after the next start; %d checks failed",
            result.kills, Date().timeIntervalSince(started), total.responses, total.bodies, total.thumbnails,
            total.mismatches.count, total.killedMidWrite, total.leftovers, result.failures.count))
    for failure in result.failures.prefix(10) { print("  " + failure) }
    try? FileManager.default.removeItem(at: folder)
    exit(result.failures.isEmpty ? 0 : 1)
default:
    FileHandle.standardError.write(Data("usage: asyncimage-crashtest run [--kills N] [--seed S] [--folder DIR] | writer DIR SEED [SECONDS]\n".utf8))
    exit(2)
}
