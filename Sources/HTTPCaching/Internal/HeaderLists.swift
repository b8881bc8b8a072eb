/// The comma-separated list syntax of HTTP field values (RFC 9110 §5.6.1), with quoted strings.
enum HeaderLists {
    /// The members of a list, trimmed, empty members dropped; a comma inside a quoted string (with
    /// its backslash escapes) does not split. Scans the UTF-8 bytes once, slicing the members out.
    static func members(of value: String) -> [String] {
        var members: [String] = []
        let utf8 = value.utf8
        var start = utf8.startIndex
        var index = start
        var quoted = false
        var escaped = false
        while index != utf8.endIndex {
            let byte = utf8[index]
            if quoted {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    quoted = false
                }
            } else if byte == UInt8(ascii: "\"") {
                quoted = true
            } else if byte == UInt8(ascii: ",") {
                appendTrimmed(value[start..<index], to: &members)
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        appendTrimmed(value[start..<utf8.endIndex], to: &members)
        return members
    }

    private static func appendTrimmed(_ member: Substring, to members: inout [String]) {
        let trimmed = trim(member)
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
