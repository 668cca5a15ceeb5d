@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

/// The crossfade blend when the old image cannot be resized (the blend
/// itself is tested through `AsyncImageView.displayedImage(at:)`).
final class CrossfadeTests: XCTestCase {
    /// When the old image cannot be resized (out of memory), the new image is
    /// shown as is: the old one, at its own size, is never read as if it had
    /// the new one's (a smaller old image would be read past its end).
    func testAFailedResizeShowsTheNewImage() {
        let small = SyntheticImage.solid(width: 2, height: 2, color: RGBA(r: 0, g: 0, b: 0))
        let big = SyntheticImage.solid(width: 64, height: 64, color: RGBA(r: 255, g: 255, b: 255))
        let shown = Crossfade.blend(from: small, to: big, fraction: 0) { _, size throws(AsyncImageError) in
            throw .decoding(DecodingFailure(format: .png, stage: .pixels, reason: "no memory for \(size)"), url: nil)
        }
        XCTAssertEqual(shown.size, big.size)
        XCTAssertEqual(shown.pixel(x: 63, y: 63), big.pixel(x: 63, y: 63))
    }
}
