/// Which request headers may be sent: the one rule, so no header can inject
/// another line or fold into the one before.
enum HTTPHeader {
    /// RFC 9110: a name is a token (letters, digits and ``!#$%&'*+-.^_`|~``);
    /// a value has no control characters but tab (so no CR, LF or NUL).
    static func isValid(name: String, value: String) -> Bool {
        guard !name.isEmpty, name.unicodeScalars.allSatisfy(isTokenCharacter) else { return false }
        return value.unicodeScalars.allSatisfy { $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) }
    }

    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        default: return "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
        }
    }
}
