import Foundation

/// Debug builds count the still images the loader encodes for a URL (a
/// processed image for the disk, an answer of
/// ``AsyncImageLoader/encodedImage(for:encoding:)``), for the tests that
/// hold it to "a thumbnail is encoded once" and "a stored thumbnail is
/// served without an encode"; release builds count nothing.
enum EncodeWatch {
    #if DEBUG
    /// The encodes counted per URL, for the URLs a test watches.
    private static let watched = Locked<[String: Int]>([:])

    /// Starts counting the encodes for `url`.
    static func watch(_ url: URL) { watched.withLock { $0[url.absoluteString] = 0 } }

    /// The encodes counted for `url` so far.
    static func count(of url: URL) -> Int { watched.withLock { $0[url.absoluteString] ?? 0 } }

    /// Stops counting for `url`.
    static func stop(_ url: URL) { watched.withLock { _ = $0.removeValue(forKey: url.absoluteString) } }

    static func note(_ url: URL) {
        watched.withLock { table in
            guard !table.isEmpty, table[url.absoluteString] != nil else { return }
            table[url.absoluteString]? += 1
        }
    }
    #else
    @inline(__always) static func note(_ url: URL) {}
    #endif
}
