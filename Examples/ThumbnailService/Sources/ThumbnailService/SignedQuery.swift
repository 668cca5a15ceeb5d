import AsyncImageKit
import Crypto
import Foundation

/// A `GET /thumb` query, its signature checked:
/// `url=<percent-encoded>&w=<1-4096>&h=<1-4096>&mode=fit|fill&sig=<hex>`.
///
/// `sig` is the lowercase hex HMAC-SHA256, under the service's key, of the
/// query exactly as sent up to `&sig=` (`url=...&w=...&h=...&mode=...`),
/// as imgproxy and thumbor sign theirs: the service makes thumbnails of
/// the URLs its key's holder signed, and of no others, so that it cannot
/// be used to fetch arbitrary URLs. The comparison is constant-time
/// (swift-crypto's `isValidAuthenticationCode`).
///
/// ```sh
/// q="url=$(python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=""))' "$SRC")&w=256&h=256&mode=fit"
/// sig=$(printf %s "$q" | openssl dgst -sha256 -hmac "$THUMB_KEY" -r | cut -d' ' -f1)
/// curl "http://127.0.0.1:8080/thumb?$q&sig=$sig"
/// ```
struct SignedQuery: Sendable {
    /// The source image.
    let url: URL
    /// The box and how the image meets it (`fit`: ``ImageSizing/fitInside(_:)``;
    /// `fill`: ``ImageSizing/fillAndCrop(_:)``).
    let sizing: ImageSizing

    /// The sides a box may have, in pixels.
    static let sides = 1...4096

    /// Why a query was refused: the status to answer and a message for the client.
    struct Refusal: Error {
        let status: Int
        let message: String
    }

    /// Checks `query` (the raw query string, percent-encoding and all)
    /// against `key`; nil `key` (`--unsigned`) checks no signature.
    init(_ query: Substring, key: SymmetricKey?) throws(Refusal) {
        let signed: Substring
        if let sig = query.range(of: "&sig=", options: .backwards) {
            signed = query[..<sig.lowerBound]
            if let key, !Self.isValid(signature: query[sig.upperBound...], of: signed, key: key) {
                throw Refusal(status: 403, message: "Bad signature.")
            }
        } else if key == nil {
            signed = query
        } else {
            throw Refusal(status: 403, message: "Missing signature.")
        }
        var fields: [Substring: String] = [:]
        for pair in signed.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, fields[parts[0]] == nil, let value = parts[1].removingPercentEncoding else {
                throw Refusal(status: 400, message: "Malformed query.")
            }
            fields[parts[0]] = value
        }
        guard let text = fields["url"], let url = URL(string: text),
            ["http", "https"].contains(url.scheme?.lowercased())
        else {
            throw Refusal(status: 400, message: "url must be a percent-encoded http or https URL.")
        }
        guard let w = fields["w"].flatMap({ Int($0) }), let h = fields["h"].flatMap({ Int($0) }),
            Self.sides.contains(w), Self.sides.contains(h)
        else {
            throw Refusal(status: 400, message: "w and h must be integers from 1 to \(Self.sides.upperBound).")
        }
        let box = PixelSize(width: w, height: h)
        switch fields["mode"] {
        case "fit": sizing = .fitInside(box)
        case "fill": sizing = .fillAndCrop(box)
        default: throw Refusal(status: 400, message: "mode must be fit or fill.")
        }
        self.url = url
    }

    /// Whether `hex` is the HMAC-SHA256 of `message` under `key`, compared in constant time.
    static func isValid(signature hex: Substring, of message: Substring, key: SymmetricKey) -> Bool {
        let nibbles = hex.utf8.compactMap { c -> UInt8? in
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        guard nibbles.count == 2 * SHA256.byteCount, hex.utf8.count == nibbles.count else { return false }
        let mac = stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
        return HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Array(message.utf8), using: key)
    }
}
