import Foundation

/// One picture of the gallery.
package struct GalleryItem {
    package enum Kind: String, Codable {
        case photo, avif, png, gif, broken, missing, external
    }

    package let index: Int
    package let kind: Kind
    /// A small version to show first, if there is one.
    package let thumbnail: URL?
    package let full: URL

    package init(index: Int, kind: Kind, thumbnail: URL?, full: URL) {
        self.index = index
        self.kind = kind
        self.thumbnail = thumbnail
        self.full = full
    }
}
