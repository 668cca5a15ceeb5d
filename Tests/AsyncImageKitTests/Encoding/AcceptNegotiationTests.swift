@testable import AsyncImageKit
import Foundation
import XCTest

/// The `Accept` field's parser (`AcceptHeader`) and the choice it makes
/// (`ImageEncoding.negotiated(accept:quality:avifSpeed:)`), without images:
/// what `encodedImage(for:encoding:)` answers with for each field is in
/// `EncodedImageTests`.
final class AcceptNegotiationTests: XCTestCase {
    // MARK: The parser

    func testWeightsOfExactAndWildcardRanges() {
        let accept = AcceptHeader("image/webp;q=0.9, image/*;q=0.5, */*;q=0.1")
        XCTAssertEqual(accept.quality(of: "image/webp"), 0.9)
        XCTAssertEqual(accept.quality(of: "image/png"), 0.5, "image/*")
        XCTAssertEqual(accept.quality(of: "text/html"), 0.1, "*/*")
        XCTAssertEqual(accept.namedQuality(of: "image/webp"), 0.9)
        XCTAssertNil(accept.namedQuality(of: "image/png"), "only a wildcard matches it")
        XCTAssertEqual(AcceptHeader("image/png").quality(of: "image/jpeg"), 0, "nothing matches")
    }

    /// The most specific range decides, wherever it stands; a refusal (q=0)
    /// of a type stands against a wildcard that accepts it, and the other way round.
    func testTheMostSpecificRangeDecides() {
        let refusing = AcceptHeader("*/*, image/avif;q=0")
        XCTAssertEqual(refusing.quality(of: "image/avif"), 0)
        XCTAssertEqual(refusing.namedQuality(of: "image/avif"), 0)
        XCTAssertEqual(refusing.quality(of: "image/webp"), 1)
        let allowing = AcceptHeader("image/webp, image/*;q=0, */*;q=0")
        XCTAssertEqual(allowing.quality(of: "image/webp"), 1)
        XCTAssertEqual(allowing.quality(of: "image/jpeg"), 0)
        XCTAssertEqual(AcceptHeader("image/*;q=0.3, */*").quality(of: "image/gif"), 0.3, "type/* before */*")
        XCTAssertEqual(
            AcceptHeader("image/webp;q=0.2, image/webp;q=0.7").quality(of: "image/webp"), 0.7,
            "of equally specific ranges, the highest")
    }

    func testCaseInsensitivityWhitespaceAndParameters() {
        let accept = AcceptHeader("  IMAGE/AVIF ; Q=0.8 ;level=1,Image/WebP;charset=\"x\" ,  ")
        XCTAssertEqual(accept.quality(of: "image/avif"), 0.8)
        XCTAssertEqual(accept.quality(of: "IMAGE/WEBP"), 1, "a parameter other than q is ignored")
        XCTAssertEqual(accept.ranges.count, 2, "the empty member is not one")
        XCTAssertEqual(AcceptHeader("image/webp;level=1;q=0.4").quality(of: "image/webp"), 0.4, "q after another parameter")
        XCTAssertEqual(AcceptHeader("image/webp;q=0.4;q=0.9").quality(of: "image/webp"), 0.4, "the first q counts")
    }

    func testQValues() {
        let cases: [(String, Double?)] = [
            ("0", 0), ("1", 1), ("0.5", 0.5), ("0.125", 0.125), ("1.000", 1), ("1.0", 1), ("0.", 0), (".5", 0.5),
            ("1.5", nil), ("2", nil), ("-0.5", nil), ("0.1234", nil), ("abc", nil), ("", nil), ("0.5x", nil), (".", nil),
            ("1e-1", nil),
        ]
        for (text, expected) in cases {
            let accept = AcceptHeader("image/webp;q=\(text), image/png")
            if let expected {
                XCTAssertEqual(accept.quality(of: "image/webp"), expected, "q=\(text)")
            } else {
                XCTAssertEqual(accept.ranges.count, 1, "q=\(text): the member is malformed, skipped")
                XCTAssertEqual(accept.quality(of: "image/png"), 1, "q=\(text): the other member still counts")
            }
        }
    }

    /// Malformed members are skipped; the others count.
    func testMalformedMembersAreSkipped() {
        for member in [
            "webp", "image/", "/webp", "*/webp", "image/webp/x", "image webp/x", "image/we bp", "image/webp;q", "image/webp;=1",
            "image/webp;q=abc", "ímage/webp", ";q=1",
        ] {
            let accept = AcceptHeader("\(member), image/jpeg;q=0.5")
            XCTAssertEqual(accept.ranges.count, 1, "\(member): \(accept.ranges)")
            XCTAssertEqual(accept.quality(of: "image/jpeg"), 0.5, member)
            XCTAssertNil(accept.namedQuality(of: "image/webp"), member)
        }
        XCTAssertEqual(AcceptHeader("*").quality(of: "image/jpeg"), 1, "a bare * is read as */*")
        XCTAssertTrue(AcceptHeader(nil).isEmpty)
        XCTAssertTrue(AcceptHeader("").isEmpty)
        XCTAssertTrue(AcceptHeader(" , ,").isEmpty)
        XCTAssertTrue(AcceptHeader("nonsense, also nonsense").isEmpty)
    }

    // MARK: The choice

    /// What `negotiated` chooses for an opaque and a translucent still.
    private func choice(_ accept: String?, opaque: Bool = true) -> EncodedKind {
        ImageEncoding.negotiated(accept: accept, quality: 70).answerKind(opaque: opaque)
    }

    private let avif = EncodedKind.avif(quality: 70, speed: 8)
    private let webp = EncodedKind.webp(quality: 70, lossless: false)
    private let jpeg = EncodedKind.jpeg(quality: 70)

    /// The fields browsers send for images, and a few clients'.
    func testBrowsersAndClients() {
        let cases: [(String, String?, EncodedKind)] = [
            ("Chrome", "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", avif),
            ("Firefox", "image/avif,image/webp,*/*", avif),
            (
                "Safari 17",
                "image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5",
                avif
            ),
            ("Firefox 65-85 (WebP, no AVIF)", "image/webp,*/*", webp),
            ("Firefox before 65", "image/png,image/*;q=0.8,*/*;q=0.5", jpeg),
            ("curl", "*/*", jpeg),
            ("no field", nil, jpeg),
            ("an empty field", "", jpeg),
            ("JPEG only", "image/jpeg", jpeg),
        ]
        for (client, field, expected) in cases {
            XCTAssertEqual(choice(field), expected, client)
        }
    }

    /// A tie goes to AVIF, then WebP, then the automatic choice; a weight
    /// says otherwise; a refusal (q=0) removes a candidate.
    func testWeightsAndTies() {
        XCTAssertEqual(choice("image/webp, image/avif"), avif, "a tie: AVIF first, whatever the order")
        XCTAssertEqual(choice("image/webp, image/avif;q=0.9"), webp, "WebP weighs more")
        XCTAssertEqual(choice("image/avif;q=0.5, image/jpeg"), jpeg, "JPEG weighs more")
        XCTAssertEqual(choice("image/avif;q=0.5, image/jpeg;q=0.5"), avif, "a tie again")
        XCTAssertEqual(choice("image/avif;q=0, image/webp;q=0.1"), webp, "AVIF refused")
        XCTAssertEqual(choice("image/avif;q=0, image/webp;q=0, */*"), jpeg, "both refused")
        XCTAssertEqual(choice("image/*"), jpeg, "a wildcard does not name AVIF or WebP")
        XCTAssertEqual(choice("image/webp, image/jpeg;q=0"), webp, "JPEG refused, WebP named")
        XCTAssertEqual(choice("image/jpeg;q=0"), jpeg, "nothing acceptable: the automatic choice anyway")
        XCTAssertEqual(choice("text/html"), jpeg, "nothing acceptable")
    }

    /// A still with transparency: the automatic choice is PNG, weighed as PNG.
    func testATranslucentStill() {
        XCTAssertEqual(choice(nil, opaque: false), .png)
        XCTAssertEqual(choice("image/png,image/*;q=0.8,*/*;q=0.5", opaque: false), .png)
        XCTAssertEqual(choice("image/webp,*/*", opaque: false), webp, "WebP keeps the alpha")
        XCTAssertEqual(choice("image/avif", opaque: false), avif)
        XCTAssertEqual(choice("image/webp;q=0.5, image/png", opaque: false), .png)
        XCTAssertEqual(choice("image/webp;q=0.5, image/jpeg", opaque: false), webp, "PNG is not accepted")
    }

    /// Quality and speed are clamped as for the explicit cases; only
    /// `negotiated` varies by the field.
    func testClampingAndVaries() {
        XCTAssertEqual(
            ImageEncoding.negotiated(accept: "image/avif", quality: 150, avifSpeed: 20).answerKind(opaque: true),
            .avif(quality: 100, speed: 10))
        XCTAssertEqual(
            ImageEncoding.negotiated(accept: "image/webp", quality: -3).answerKind(opaque: true),
            .webp(quality: 1, lossless: false))
        XCTAssertEqual(ImageEncoding.webpLossless.answerKind(opaque: true), .webp(quality: 75, lossless: true))
        XCTAssertNil(EncodedKind.webp(quality: 75, lossless: true).quality, "no quality reported for lossless")
        XCTAssertTrue(ImageEncoding.negotiated(accept: nil, quality: 80).variesByAccept)
        for encoding in [ImageEncoding.automatic, .png, .jpeg(quality: 80), .webp(quality: 80), .webpLossless, .avif(quality: 50, speed: 6)] {
            XCTAssertFalse(encoding.variesByAccept, "\(encoding)")
        }
        // The disk: WebP and AVIF stored as answered, alpha kept; a negotiated encoding as its field chooses.
        XCTAssertEqual(ImageEncoding.webp(quality: 80).storedKind(opaque: false), .webp(quality: 80, lossless: false))
        XCTAssertEqual(ImageEncoding.avif(quality: 50, speed: 6).storedKind(opaque: false), .avif(quality: 50, speed: 6))
        XCTAssertEqual(ImageEncoding.negotiated(accept: "image/webp", quality: 80).storedKind(opaque: true), .webp(quality: 80, lossless: false))
    }
}
