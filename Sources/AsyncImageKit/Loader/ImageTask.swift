import Foundation

/// A request made with ``AsyncImageLoader/loadImage(_:target:success:failure:)-(ImageRequest,_,_,_)``:
/// a handle to cancel it or change its priority while it waits.
///
/// ```swift
/// let task = loader.loadImage(request, target: cell, success: show)
/// task.priority = .high      // the cell scrolled to the middle of the screen
/// task.cancel()              // or any of the loader's cancel APIs
/// ```
///
/// The handle does not keep the loader or the target alive.
public final class ImageTask: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// Where the request is in its life.
    public enum State: Sendable, Hashable {
        /// Not yet delivered or cancelled.
        case running
        /// Its outcome (success or failure) was delivered.
        case completed
        /// It was cancelled (explicitly, superseded on its target, or its target went away).
        case cancelled
    }

    let record: LoadRequest
    /// Never written after `init`.
    private weak var loader: AsyncImageLoader?
    /// The loader's lock, which guards the record: held strongly, so reads
    /// stay under it even while (and after) the loader is deallocated.
    private let guarded: Locked<LoaderState>

    init(_ record: LoadRequest, loader: AsyncImageLoader) {
        self.record = record
        self.loader = loader
        self.guarded = loader.state
    }

    /// The request, as made (its ``ImageRequest/priority`` is the initial one).
    public var request: ImageRequest { record.request }

    /// The request's number in its loader (``LoaderEvent/requestID``).
    public var id: UInt64 { record.id }

    /// The priority it is served at. Setting it while the request waits
    /// re-ranks it (and a transfer it shares); after that it only affects
    /// which waiting body is decoded first.
    ///
    /// Setting a priority does not touch the request's lane (its target and
    /// action): among lanes of equal priority, the one touched last (a
    /// request added to it) still goes first under ``QueueOrder/lifo``, and
    /// the one waiting longest under ``QueueOrder/fifo``. So raising a
    /// request to ``ImagePriority/high`` ranks its lane ahead of every lane
    /// below `high`, but among lanes already at `high` it keeps its place
    /// (ties go to the lane touched last, not the lane re-ranked last); and
    /// the lane still starts its oldest waiting request first.
    public var priority: ImagePriority {
        get { guarded.withLock { _ in record.priority } }
        set { loader?.setPriority(of: record, to: newValue) }
    }

    /// Where the request is in its life.
    public var state: State {
        let current = guarded.withLock { _ in record.state }
        switch current {
        case .pending: return .running
        case .delivered: return .completed
        case .cancelled: return .cancelled
        }
    }

    /// What the image's file says about itself (``ImageFileProperties``: its
    /// pixel size, upright, and the rest), as soon as the loader knows it:
    /// from the first bytes of the transfer (a header probe: a JPEG's at its
    /// first scan, long before the pixels; a PNG's or GIF's when the last
    /// chunk or block they are read from is in, which for these formats is
    /// the end of the file; a WebP's from the whole body), or when a stored
    /// body is read; nil until then. Always the same properties as the delivered image's
    /// ``Image/fileProperties``.
    public var fileProperties: ImageFileProperties? {
        guarded.withLock { _ in record.fileProperties }
    }

    /// Calls `handler` once, on one of the loader's threads, when
    /// ``fileProperties`` becomes known (at once, on this thread, if it is
    /// already). Never after the request was cancelled; for a memory hit, not
    /// at all (the image's own ``Image/fileProperties`` tells).
    public func onFileProperties(_ handler: @escaping @Sendable (ImageFileProperties) -> Void) {
        let known = guarded.withLock { _ -> ImageFileProperties? in
            if let known = record.fileProperties { return known }
            if record.state == .pending { record.propertyHandlers.append(handler) }
            return nil
        }
        if let known { handler(known) }
    }

    /// Calls `handler` with previews of a progressive JPEG while it
    /// downloads, for a request made with ``ImageRequest/wantsPreviews``: at
    /// most three, after its first scan and at least 150 ms apart, decoded
    /// at the request's display size with its processors, on the loader's
    /// delivery queue. A preview never comes after the request's outcome,
    /// and is never cached. Previews are optional work: one is skipped while
    /// every decoder is busy with final images. A preview made before any
    /// handler was added is kept (the newest one) and given to the first
    /// handler added, so adding it right after making the request misses none.
    public func onPreview(_ handler: @escaping @Sendable (Image) -> Void) {
        let waiting = guarded.withLock { state -> (Image, DispatchQueue)? in
            guard record.state == .pending else { return nil }
            record.previewHandlers.append(handler)
            defer { record.unclaimedPreview = nil }
            return record.unclaimedPreview.map { ($0, state.deliveryQueue) }
        }
        if let (image, queue) = waiting, let loader { loader.deliverPreview(image, to: record, on: queue) }
    }

    /// Cancels the request (nothing is delivered); its transfer stops unless
    /// another request needs it. No effect once delivered.
    public func cancel() {
        loader?.cancel(record)
    }

    /// Same request (by identity).
    public static func == (lhs: ImageTask, rhs: ImageTask) -> Bool { lhs.record === rhs.record }
    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(record)) }
    /// The id and URL.
    public var description: String { "ImageTask #\(record.id) \(record.request.url.absoluteString)" }
}
