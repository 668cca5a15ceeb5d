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
    /// (For an action made with ``init(_:response:)``: its handler, with a
    /// response that knows only the image and the URL.)
    public let handler: @Sendable (_ target: AnyObject?, _ image: Image, _ url: URL) -> Void
    /// The handler of ``init(_:response:)``.
    private let responseHandler: (@Sendable (_ target: AnyObject?, _ response: ImageResponse) -> Void)?

    /// Creates an action.
    public init(_ name: String, _ handler: @escaping @Sendable (_ target: AnyObject?, _ image: Image, _ url: URL) -> Void) {
        self.name = name
        self.handler = handler
        self.responseHandler = nil
    }

    /// Creates an action that receives the whole ``ImageResponse``: the image,
    /// where it came from, whether it is stale, the HTTP response and the
    /// file's properties.
    public init(
        _ name: String, response handler: @escaping @Sendable (_ target: AnyObject?, _ response: ImageResponse) -> Void
    ) {
        self.name = name
        self.responseHandler = handler
        self.handler = { target, image, url in handler(target, ImageResponse(image: image, url: url, source: .network)) }
    }

    /// Runs the action for `response` (the loader's way in).
    func run(_ target: AnyObject?, _ response: ImageResponse) {
        if let responseHandler {
            responseHandler(target, response)
        } else {
            handler(target, response.image, response.url)
        }
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
