import Foundation

/// What to do with a loaded image: a closure with a name.
///
/// The name is the action's identity, as a selector was in the original
/// AsyncImageView: two actions with the same name are equal, so a load can be
/// cancelled by action, and a target's URLs are ordered per action.
///
/// ```swift
/// let show = ImageAction("show") { target, image, url in
///     (target as? Thumbnail)?.image = image
/// }
/// loader.loadImage(url, target: cell, action: show)
/// ```
public struct ImageAction: Sendable, Hashable, CustomStringConvertible {
    /// The identity of the action.
    public let name: String
    /// Runs on the loader's delivery queue with the (live) target, the image and its URL.
    public let handler: @Sendable (_ target: AnyObject?, _ image: Image, _ url: URL) -> Void

    /// Creates an action.
    public init(_ name: String, _ handler: @escaping @Sendable (_ target: AnyObject?, _ image: Image, _ url: URL) -> Void) {
        self.name = name
        self.handler = handler
    }

    /// Equal when the names are equal.
    public static func == (lhs: ImageAction, rhs: ImageAction) -> Bool { lhs.name == rhs.name }
    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
    /// The name.
    public var description: String { name }
}

/// What to do when a load fails: a closure with a name (see ``ImageAction``).
public struct ImageFailureAction: Sendable, Hashable, CustomStringConvertible {
    /// The identity of the action.
    public let name: String
    /// Runs on the loader's delivery queue with the (live) target, the error and the URL.
    public let handler: @Sendable (_ target: AnyObject?, _ error: AsyncImageError, _ url: URL) -> Void

    /// Creates a failure action.
    public init(
        _ name: String, _ handler: @escaping @Sendable (_ target: AnyObject?, _ error: AsyncImageError, _ url: URL) -> Void
    ) {
        self.name = name
        self.handler = handler
    }

    /// Equal when the names are equal.
    public static func == (lhs: ImageFailureAction, rhs: ImageFailureAction) -> Bool { lhs.name == rhs.name }
    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
    /// The name.
    public var description: String { name }
}
