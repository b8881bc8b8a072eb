import HanekeProtocols
import HTTPCaching

/// The check `NetworkFetcher` makes of the caller's header fields before a request leaves: a name
/// must be an RFC 9110 token (§5.6.2), and a value may hold no control character but a tab
/// (§5.5). libcurl sends each field as one line it is handed, so a value with `CR LF` in it would
/// reach the origin as two fields (`"en\r\nX-Injected: 1"`), one with `NUL` would be cut short,
/// and a name with a colon or a space would make another field of the line.
///
/// The problem is said without the field's value, nor its name when the name is the bad part:
/// either may be a secret (a token pasted into the wrong place).
enum HeaderFieldCheck {
    /// Throws for the first field that cannot be sent as it is.
    /// - Parameters:
    ///   - headers: The request's fields.
    ///   - shown: The request's URL as errors show it.
    /// - Throws: `StoreError` code `invalidKey` (the fields are part of the fetch's key), whose
    ///   message names the field by its position (and by its name when the name is sound) and
    ///   says what is wrong with it.
    static func check(_ headers: HTTPHeaderFields, shown: String) throws {
        for (index, field) in headers.enumerated() {
            guard let problem = problem(name: field.name, value: field.value) else { continue }
            throw StoreError(
                .invalidKey,
                "GET \(shown) was not sent: header field \(index + 1) of \(headers.count) \(problem)"
            )
        }
    }

    /// What is wrong with a field, as the end of a sentence; `nil` when it may be sent.
    static func problem(name: String, value: String) -> String? {
        if name.isEmpty {
            return "has an empty name; a field name is a token (RFC 9110 §5.6.2)"
        }
        for (offset, scalar) in name.unicodeScalars.enumerated() where !isTokenCharacter(scalar) {
            return "has \(describe(scalar)) in its name at character \(offset + 1); a field name is a token of letters, "
                + "digits and !#$%&'*+-.^_`|~ (RFC 9110 §5.6.2)"
        }
        for (offset, scalar) in value.unicodeScalars.enumerated() where scalar.properties.generalCategory == .control && scalar != "\t" {
            return "(\(name)) has \(describe(scalar)) in its value at character \(offset + 1); a field value may hold no "
                + "control character but a tab, and CR, LF or NUL would end the field early (RFC 9110 §5.5)"
        }
        return nil
    }

    /// The line libcurl is handed for a field that passed ``check(_:shown:)``. A value that is empty
    /// (or only blanks) goes as `Name;`: libcurl reads `Name:` with nothing after it as "remove your
    /// own field of that name" rather than "send it empty".
    static func curlLine(name: String, value: String) -> String {
        value.allSatisfy { $0 == " " || $0 == "\t" } ? "\(name);" : "\(name): \(value)"
    }

    /// Whether `scalar` is a `tchar` (RFC 9110 §5.6.2).
    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        case "!", "#", "$", "%", "&", "'", "*", "+", "-", ".", "^", "_", "`", "|", "~": return true
        default: return false
        }
    }

    /// A character as a message may show it: by name for the ones that matter, by code point for
    /// the rest (a printable ASCII character also as itself).
    private static func describe(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let codePoint = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        switch scalar {
        case "\0": return "a NUL (\(codePoint))"
        case "\t": return "a tab (\(codePoint))"
        case "\n": return "a line feed (LF, \(codePoint))"
        case "\r": return "a carriage return (CR, \(codePoint))"
        case " ": return "a space (\(codePoint))"
        case ":": return "a colon (\(codePoint))"
        case "\u{7F}": return "a DEL (\(codePoint))"
        default:
            if scalar.properties.generalCategory == .control { return "the control character \(codePoint)" }
            if scalar.isASCII { return "'\(Character(scalar))' (\(codePoint))" }
            return "the non-ASCII character \(codePoint)"
        }
    }
}
