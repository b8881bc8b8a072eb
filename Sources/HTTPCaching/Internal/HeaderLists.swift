/// The comma-separated list syntax of HTTP field values (RFC 9110 §5.6.1), with quoted strings.
enum HeaderLists {
    /// The members of a list, trimmed, empty members dropped; a comma inside a quoted string (with
    /// its backslash escapes) does not split.
    static func members(of value: String) -> [String] {
        var members: [String] = []
        var current = Substring.UnicodeScalarView()
        var quoted = false
        var escaped = false
        for scalar in value.unicodeScalars {
            if quoted {
                if escaped {
                    escaped = false
                } else if scalar == "\\" {
                    escaped = true
                } else if scalar == "\"" {
                    quoted = false
                }
                current.append(scalar)
            } else if scalar == "," {
                appendTrimmed(current, to: &members)
                current = Substring.UnicodeScalarView()
            } else {
                if scalar == "\"" { quoted = true }
                current.append(scalar)
            }
        }
        appendTrimmed(current, to: &members)
        return members
    }

    private static func appendTrimmed(_ scalars: Substring.UnicodeScalarView, to members: inout [String]) {
        let trimmed = trim(Substring(scalars))
        if !trimmed.isEmpty { members.append(String(trimmed)) }
    }

    /// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
    static func trim(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }

    /// The text of a quoted string without its quotes and escapes, or `text` itself when it is a
    /// token; `nil` for an unterminated quoted string.
    static func unquoted(_ text: Substring) -> String? {
        guard text.first == "\"" else { return String(text) }
        var result = ""
        var escaped = false
        var closed = false
        for character in text.dropFirst() {
            if closed { return nil }   // text after the closing quote
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                closed = true
            } else {
                result.append(character)
            }
        }
        return closed ? result : nil
    }
}
