import AsyncImageKit
import Foundation
import ImageFixtures

/// Entries for the disk cache's sharing tests (threads in DataCacheTests,
/// processes in MultiProcessDataCacheTests): bodies that say which key they
/// belong to, so that a mixed or torn read shows, and the folder's size as
/// counted on disk.
public enum DataCacheEntries {
    /// A body that says which key it belongs to and how long it is, filled with a pattern.
    public static func body(for key: String, _ random: inout SplitMix64) -> Data {
        let length = 500 + Int(random.next() % 3500)
        var data = Data("\(key):\(length):".utf8)
        while data.count < length { data.append(UInt8(truncatingIfNeeded: data.count)) }
        return data
    }

    public static func isValid(_ data: Data, for key: String) -> Bool {
        let prefix = "\(key):\(data.count):"
        guard data.starts(with: Data(prefix.utf8)) else { return false }
        return data.indices.dropFirst(prefix.utf8.count).allSatisfy { data[$0] == UInt8(truncatingIfNeeded: $0) }
    }

    /// The bytes of entry files in the cache's folder, counted on disk.
    public static func actualSize(_ cache: DataCache) -> Int {
        guard let files = FileManager.default.enumerator(atPath: cache.directory.path) else { return 0 }
        var total = 0
        for case let name as String in files where name.split(separator: "/").count == 3 && !name.contains(".tmp-") {
            let attributes = try? FileManager.default.attributesOfItem(atPath: cache.directory.path + "/" + name)
            total += Int((attributes?[.size] as? UInt64) ?? 0)
        }
        return total
    }
}
