import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP fields the cache reads (RFC 9111 §5, on RFC 9110's grammar in
/// ``HTTPGrammar``): `Cache-Control` directives, delta-seconds, `Age`,
/// HTTP-dates, field lists. Lenient where the browsers are, strict where
/// the RFCs require it.
enum HTTPFieldParsing {
    /// `Cache-Control` directives, names lowercased, values unquoted (""
    /// for none). Commas inside quoted strings do not split; the first
    /// occurrence of a directive wins (RFC 9111 §4.2.1); a directive with
    /// whitespace before its `=` is not that directive (`max-age =5`).
    static func directives(_ value: String?) -> [String: String] {
        var directives: [String: String] = [:]
        for member in HTTPGrammar.listMembers(value ?? "") {
            guard let (name, value) = directive(member), directives[name] == nil else { continue }
            directives[name] = value
        }
        return directives
    }

    private static func directive(_ member: Substring) -> (String, String)? {
        guard let equals = member.firstIndex(of: "=") else {
            let name = member.lowercased()
            return HTTPGrammar.isToken(name) ? (name, "") : nil
        }
        let name = member[..<equals].lowercased()
        guard HTTPGrammar.isToken(name) else { return nil }
        return (name, HTTPGrammar.unquoted(member[member.index(after: equals)...]))
    }

    /// Delta-seconds (RFC 9111 §1.2.2): its leading digits, saturating at
    /// 2^31 ("as large as possible"); nil without a leading digit (so a
    /// negative, alphabetic or single-quoted value is invalid). Trailing
    /// characters after the digits (`3600.5`, `3600a`) are ignored, as
    /// Firefox and Safari do.
    static func deltaSeconds(_ text: String?) -> Double? {
        guard let text else { return nil }
        var value: Double = 0
        var digits = 0
        for byte in text.utf8 {
            guard byte >= 0x30, byte <= 0x39 else { break }
            value = min(value * 10 + Double(byte - 0x30), 2_147_483_648)
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    /// The `Age` header (RFC 9111 §5.1): the first member's digits, nil when
    /// it is not a non-negative integer (`7200.0`, `-1`, `abc` are ignored;
    /// a parameter after `;` is allowed).
    static func age(_ text: String?) -> Double? {
        guard let first = HTTPGrammar.listMembers(text ?? "").first else { return nil }
        let digits = first.prefix { $0.isASCII && $0.isNumber }
        let rest = first.dropFirst(digits.count)
        guard !digits.isEmpty, rest.isEmpty || rest.first == ";" else { return nil }
        return deltaSeconds(String(digits))
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// An HTTP-date (RFC 9110 §5.6.7) in any of its three forms, seconds
    /// since 1970, or nil:
    /// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
    /// - RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year more
    ///   than 50 years ahead is taken in the past century)
    /// - asctime: `Sun Nov  6 08:49:37 1994`
    ///
    /// Names are matched without regard to case, as the browsers do.
    static func date(_ text: String?, now: Double = Date().timeIntervalSince1970) -> Double? {
        guard let text else { return nil }
        // Single spaces, as the grammar has them (`Thu, 18  Aug` is no
        // date); asctime pads a one-digit day with a second space.
        var parts = text.split(separator: " ", omittingEmptySubsequences: false).map { $0.lowercased() }
        if parts.count == 6, parts[2].isEmpty, parts[3].count == 1 { parts.remove(at: 2) }
        guard !parts.contains(where: \.isEmpty) else { return nil }
        var day = 0
        var month = -1
        var year = 0
        var clock: [Int] = []
        switch parts.count {
        case 6:  // IMF-fixdate
            guard parts[0].hasSuffix(","), days.contains(String(parts[0].dropLast())), parts[5] == "gmt",
                parts[1].count == 2, parts[3].count == 4, let d = Int(parts[1]), let y = Int(parts[3]),
                let m = months.firstIndex(of: parts[2])
            else { return nil }
            (day, month, year, clock) = (d, m, y, time(parts[4]))
        case 4 where parts[0].hasSuffix(","):  // RFC 850
            guard longDays.contains(String(parts[0].dropLast())), parts[3] == "gmt" else { return nil }
            let pieces = parts[1].split(separator: "-")
            guard pieces.count == 3, pieces[0].count == 2, pieces[2].count == 2, let d = Int(pieces[0]),
                let y = Int(pieces[2]), let m = months.firstIndex(of: String(pieces[1]))
            else { return nil }
            (day, month, clock) = (d, m, time(parts[2]))
            var fields = tm()
            var seconds = time_t(now)
            gmtime_r(&seconds, &fields)
            let thisYear = Int(fields.tm_year) + 1900
            year = (thisYear / 100) * 100 + y
            if year > thisYear + 50 { year -= 100 }
        case 5:  // asctime
            guard days.contains(parts[0]), let m = months.firstIndex(of: parts[1]), (1...2).contains(parts[2].count),
                let d = Int(parts[2]), parts[4].count == 4, let y = Int(parts[4])
            else { return nil }
            (day, month, year, clock) = (d, m, y, time(parts[3]))
        default:
            return nil
        }
        guard clock.count == 3, (1...31).contains(day), (0..<24).contains(clock[0]), (0..<60).contains(clock[1]),
            (0...60).contains(clock[2]), year >= 1900
        else { return nil }
        var fields = tm()
        fields.tm_year = Int32(year - 1900)
        fields.tm_mon = Int32(month)
        fields.tm_mday = Int32(day)
        fields.tm_hour = Int32(clock[0])
        fields.tm_min = Int32(clock[1])
        fields.tm_sec = Int32(clock[2])
        return Double(timegm(&fields))
    }

    private static func time(_ text: String) -> [Int] {
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        guard pieces.count == 3, pieces.allSatisfy({ $0.count == 2 }) else { return [] }
        return pieces.compactMap { Int($0) }
    }
}
