/// How urgently a request is served (ThumbnailService's and Nuke's five levels).
///
/// The loader's queue starts higher priorities first and, within one
/// priority, the most recently touched target first (LIFO). A transfer
/// shared by several requests runs at the highest of their priorities; it is
/// re-ranked when a request leaves or changes its priority
/// (``ImageTask/priority``). A body waiting for a decoder is decoded in the
/// same order.
public enum ImagePriority: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Only when nothing else waits (the ``ImagePrefetcher`` default is ``low``).
    case veryLow = 0
    /// Below what is on screen: prefetching, work ahead of the user.
    case low = 1
    /// The default.
    case normal = 2
    /// Before normal requests.
    case high = 3
    /// Before everything else.
    case veryHigh = 4

    /// Lower raw value, lower priority.
    public static func < (lhs: ImagePriority, rhs: ImagePriority) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The case name.
    public var description: String {
        switch self {
        case .veryLow: return "veryLow"
        case .low: return "low"
        case .normal: return "normal"
        case .high: return "high"
        case .veryHigh: return "veryHigh"
        }
    }
}
