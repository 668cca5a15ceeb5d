import Foundation

/// `to` relative to the folder `from` (both made absolute): `bench-output/all`, `../x`.
package func relativePath(from: URL, to: URL) -> String {
    let base = from.standardizedFileURL.pathComponents
    let target = to.standardizedFileURL.pathComponents
    var common = 0
    while common < base.count, common < target.count, base[common] == target[common] { common += 1 }
    let parts = Array(repeating: "..", count: base.count - common) + target[common...]
    return parts.isEmpty ? "." : parts.joined(separator: "/")
}

/// The path of `program` on PATH, or nil.
package func which(_ program: String) -> String? {
    for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(folder)/\(program)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}
