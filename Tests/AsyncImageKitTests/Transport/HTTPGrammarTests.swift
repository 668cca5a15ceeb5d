@testable import AsyncImageKit
import XCTest

/// RFC 9110's field grammar, written once (``HTTPGrammar``) for the
/// transport's header check, the HTTP cache's fields and `Accept`.
final class HTTPGrammarTests: XCTestCase {
    /// `tchar`, byte by byte: exactly letters, digits and ``!#$%&'*+-.^_`|~``.
    func testTokenIsExactlyTheRFCsCharacters() {
        let specials = Set("!#$%&'*+-.^_`|~".utf8)
        for byte in UInt8(0)...UInt8(255) {
            let expected =
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || specials.contains(byte)
            XCTAssertEqual(HTTPGrammar.isTokenByte(byte), expected, "byte \(byte)")
        }
        XCTAssertFalse(HTTPGrammar.isToken(""))
        XCTAssertFalse(HTTPGrammar.isToken("caf\u{E9}"), "non-ASCII")
        // The three readers agree: a header name, a directive name, a media type.
        for name in ["x-trace", "X_Y", "a b", "a:b", "a\u{0}b", "\u{E9}"] {
            let token = HTTPGrammar.isToken(name)
            XCTAssertEqual(HTTPHeader.isValid(name: name, value: "v"), token, name)
            XCTAssertEqual(HTTPFieldParsing.directives(name.lowercased()).isEmpty, !token, name)
            XCTAssertEqual(AcceptHeader("image/\(name)").isEmpty, !token, name)
        }
    }

    /// Lists split at commas outside quoted strings, members trimmed, empty
    /// ones dropped; escapes inside quotes do not end them.
    func testListsSplitOutsideQuotedStrings() {
        XCTAssertEqual(HTTPGrammar.listMembers(" a ,, b\t, \"c, d\" ,e=\"f\\\",g\""), ["a", "b", "\"c, d\"", "e=\"f\\\",g\""])
        XCTAssertEqual(HTTPGrammar.listMembers(""), [])
        XCTAssertEqual(HTTPGrammar.unquoted("\"a\\\"b\" rest"), "a\"b")
        XCTAssertEqual(HTTPGrammar.unquoted("plain"), "plain")
        XCTAssertEqual(HTTPFieldParsing.directives("private=\"set-cookie, x\", max-age=5")["private"], "set-cookie, x")
        XCTAssertFalse(HTTPGrammar.isFieldValue("a\r\nb"))
        XCTAssertTrue(HTTPGrammar.isFieldValue("a\tb"))
    }

    /// `Accept` reads its members with the same list grammar: a quoted
    /// parameter holding a comma or a semicolon does not split its member.
    func testAcceptReadsQuotedParameters() {
        let accept = AcceptHeader("image/webp;profile=\"a,b;c\";q=0.5, image/avif")
        XCTAssertEqual(accept.ranges.count, 2)
        XCTAssertEqual(accept.quality(of: "image/webp"), 0.5)
        XCTAssertEqual(accept.quality(of: "image/avif"), 1)
        XCTAssertNil(AcceptHeader("image/webp;q=\"0.5\"").ranges.first, "a q-value is not a quoted string")
    }

    /// The one type that reads `Accept` also writes the loader's: read back,
    /// every registered format has its weight.
    func testTheWrittenAcceptReadsBackAsTheRegistrysWeights() {
        let registry = ImageDecoderRegistry.default
        let accept = AcceptHeader(registry.acceptHeader)
        for format in registry.formats {
            XCTAssertEqual(accept.quality(of: format.mimeType), format.defaultAcceptWeight, accuracy: 0.0005, "\(format)")
        }
        XCTAssertEqual(accept.quality(of: "text/html"), 0.1, "*/* at 0.1")
        XCTAssertEqual(AcceptHeader.field([("image/a", 1), ("image/b", 0.25), ("image/c", 0.0004)]), "image/a,image/b;q=0.25,image/c;q=0.001")
    }
}
