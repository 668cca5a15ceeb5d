/// Which request headers may be sent: the one rule, so no header can inject
/// another line or fold into the one before.
enum HTTPHeader {
    /// RFC 9110: a name is a token, a value a field value (``HTTPGrammar``:
    /// no control characters but tab, so no CR, LF or NUL).
    static func isValid(name: String, value: String) -> Bool {
        HTTPGrammar.isToken(name) && HTTPGrammar.isFieldValue(value)
    }
}
