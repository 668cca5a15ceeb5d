import Foundation

/// An HTTP `Accept` field (RFC 9110 §12.5.1), read for content negotiation
/// (``ImageEncoding/negotiated(accept:quality:avifSpeed:)``) and written
/// for a loader's requests (``field(_:)``), on ``HTTPGrammar``.
///
/// - Members are separated by commas; each is a media range (`type/subtype`,
///   `type/*` or `*/*`; a bare `*`, which old clients send, is read as
///   `*/*`) with parameters after semicolons. Only `q` is read (its name in
///   any case); every other parameter is ignored, media-type parameters
///   included. Media ranges are compared case-insensitively.
/// - A `q` is a number from 0 to 1 (`0`, `0.5`, `1.000`; `.5` is taken as
///   `0.5`); 1 when absent. `q=0` means "not acceptable".
/// - A malformed member (no `/`, an empty type or subtype, `*/subtype`,
///   characters outside HTTP's token set, a `q` that is not such a number,
///   a parameter without `=`) is skipped; the others still count.
/// - The weight of a media type is that of the most specific range that
///   matches it (`image/webp` before `image/*` before `*/*`); of several
///   equally specific ones, the highest. A type no range matches weighs 0.
struct AcceptHeader: Sendable, Hashable {
    /// One media range and its weight, lowercased.
    struct Range: Sendable, Hashable {
        var type: String
        var subtype: String
        var q: Double

        /// How specific the range is: 2 for `type/subtype`, 1 for `type/*`, 0 for `*/*`.
        var specificity: Int { type == "*" ? 0 : subtype == "*" ? 1 : 2 }

        func matches(type: String, subtype: String) -> Bool {
            (self.type == "*" || self.type == type) && (self.subtype == "*" || self.subtype == subtype)
        }
    }

    /// The well-formed members, in the order given.
    let ranges: [Range]

    /// The members of `field`; none for nil.
    init(_ field: String?) {
        ranges = HTTPGrammar.listMembers(field ?? "").compactMap(Self.range)
    }

    /// Whether the field says nothing that can be read: absent, empty, or
    /// every member malformed. (RFC 9110 then lets any type be sent.)
    var isEmpty: Bool { ranges.isEmpty }

    /// The weight (0 to 1) of `mediaType` (`image/webp`): the most specific
    /// matching range's; 0 when none matches.
    func quality(of mediaType: String) -> Double {
        guard let (type, subtype) = Self.split(mediaType.lowercased()) else { return 0 }
        var best: (specificity: Int, q: Double)?
        for range in ranges where range.matches(type: type, subtype: subtype) {
            let candidate = (range.specificity, range.q)
            if let current = best, current.specificity > candidate.0 || (current.specificity == candidate.0 && current.q >= candidate.1) {
                continue
            }
            best = candidate
        }
        return best?.q ?? 0
    }

    /// The weight of `mediaType` when a range names it exactly (no
    /// wildcard), the highest of such ranges; nil when none does.
    func namedQuality(of mediaType: String) -> Double? {
        guard let (type, subtype) = Self.split(mediaType.lowercased()) else { return nil }
        return ranges.filter { $0.type == type && $0.subtype == subtype }.map(\.q).max()
    }

    /// The field a loader sends: `members` in the order given, each with
    /// its weight as a q-value when below 1 (``qValue(_:)``). The one
    /// writer of the syntax this type reads (``ImageDecoderRegistry/acceptHeader``
    /// calls it).
    static func field(_ members: [(mediaType: String, q: Double)]) -> String {
        members.map { $0.q >= 1 ? $0.mediaType : "\($0.mediaType);q=\(qValue($0.q))" }.joined(separator: ",")
    }

    /// A q-value as RFC 9110 §12.4.2 writes it: at most three decimals, no
    /// trailing zeros (0.8, 0.25, 0.001).
    static func qValue(_ weight: Double) -> String {
        let thousandths = Int((max(0.001, min(1, weight)) * 1000).rounded())
        guard thousandths < 1000 else { return "1" }
        var digits = String(thousandths)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "0." + digits
    }

    /// One member, or nil when it is malformed.
    private static func range(_ member: Substring) -> Range? {
        let parts = HTTPGrammar.parameterParts(member)
        guard let first = parts.first, !first.isEmpty else { return nil }
        let name = first.lowercased()
        guard let (type, subtype) = name == "*" ? ("*", "*") : Self.split(name), type != "*" || subtype == "*" else { return nil }
        var q = 1.0
        var sawQ = false
        for parameter in parts.dropFirst() {
            if parameter.isEmpty { continue }  // a stray `;`
            guard let equals = parameter.firstIndex(of: "=") else { return nil }
            let key = HTTPGrammar.trimmed(parameter[..<equals]).lowercased()
            let value = String(HTTPGrammar.trimmed(parameter[parameter.index(after: equals)...]))
            guard HTTPGrammar.isToken(key) else { return nil }
            if key == "q", !sawQ {
                guard let weight = qvalue(value) else { return nil }
                q = weight
                sawQ = true
            }
        }
        return Range(type: type, subtype: subtype, q: q)
    }

    /// `type/subtype` as its two tokens, or nil.
    private static func split(_ name: String) -> (String, String)? {
        let halves = name.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let (type, subtype) = (String(halves[0]), String(halves[1]))
        guard HTTPGrammar.isToken(type), HTTPGrammar.isToken(subtype) else { return nil }
        return (type, subtype)
    }

    /// A weight from 0 to 1, at most three decimals after an optional point
    /// (`.5` read as `0.5`), or nil.
    private static func qvalue(_ text: String) -> Double? {
        let pieces = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = pieces[0]
        let fraction = pieces.count == 2 ? pieces[1] : ""
        guard whole.count <= 1, fraction.count <= 3, !(whole.isEmpty && fraction.isEmpty),
            (whole + fraction).allSatisfy({ $0.isASCII && $0.isNumber }),
            let value = Double((whole.isEmpty ? "0" : whole) + "." + (fraction.isEmpty ? "0" : fraction)),
            (0...1).contains(value)
        else { return nil }
        return value
    }
}
