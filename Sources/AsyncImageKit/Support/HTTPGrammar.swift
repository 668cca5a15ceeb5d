/// RFC 9110's field grammar (§5.5, §5.6), written once for everything that
/// reads or writes a field: the transport (which request headers may be
/// sent), the HTTP cache (`Cache-Control`, `Vary` and the other lists it
/// reads) and content negotiation (`Accept`, read and written by
/// ``AcceptHeader``).
enum HTTPGrammar {
    /// A `token` (§5.6.2): one or more `tchar`s, that is letters, digits and
    /// ``!#$%&'*+-.^_`|~`` (no space, control, separator or non-ASCII byte).
    static func isToken(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    /// Whether `byte` is a `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// A field value that may be sent (§5.5): no control character but
    /// horizontal tab, so no CR, LF or NUL can end the line or start another.
    static func isFieldValue(_ text: some StringProtocol) -> Bool {
        text.unicodeScalars.allSatisfy { $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) }
    }

    /// The members of a comma-separated list (§5.6.1), trimmed of spaces
    /// and tabs, empty ones dropped; commas inside quoted strings (§5.6.4)
    /// do not split.
    static func listMembers(_ value: some StringProtocol) -> [Substring] {
        split(Substring(value), at: ",")
    }

    /// A list member's parts separated by semicolons (a media range and its
    /// parameters, §5.6.6), trimmed; semicolons inside quoted strings do
    /// not split. Empty parts are kept (a stray `;` is the caller's to judge).
    static func parameterParts(_ member: Substring) -> [Substring] {
        split(member, at: ";", keepingEmpty: true)
    }

    /// A parameter or directive value: a quoted string (§5.6.4) unquoted
    /// (backslash escapes undone, ending at its closing quote), else the
    /// text as it is.
    static func unquoted(_ value: Substring) -> String {
        guard value.first == "\"" else { return String(value) }
        var unquoted = ""
        var escaped = false
        for character in value.dropFirst() {
            if escaped {
                unquoted.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                break
            } else {
                unquoted.append(character)
            }
        }
        return unquoted
    }

    /// `text` without its leading and trailing spaces and tabs (`OWS`).
    static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }

    private static func split(_ value: Substring, at separator: Character, keepingEmpty: Bool = false) -> [Substring] {
        var parts: [Substring] = []
        var start = value.startIndex
        var quoted = false
        var escaped = false
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if escaped {
                escaped = false
            } else if quoted, character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == separator, !quoted {
                parts.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        parts.append(value[start...])
        let trimmedParts = parts.map(trimmed)
        return keepingEmpty ? trimmedParts : trimmedParts.filter { !$0.isEmpty }
    }
}
