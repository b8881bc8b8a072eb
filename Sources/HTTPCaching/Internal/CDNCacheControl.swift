/// `CDN-Cache-Control` (RFC 9213): a Structured Fields dictionary (RFC 8941) whose directives a
/// shared cache follows instead of `Cache-Control`'s. A field that is not a valid dictionary is
/// ignored whole.
enum CDNCacheControl {
    /// The directives of the response's `CDN-Cache-Control`, or `nil` when it has none or it is not
    /// a valid dictionary.
    static func directives(of headers: HTTPHeaderFields) -> CacheControl? {
        let values = headers.values(for: "CDN-Cache-Control")
        guard !values.isEmpty else { return nil }
        var directives: [String] = []
        for member in HeaderLists.members(of: values.joined(separator: ",")) {
            guard let directive = parse(member) else { return nil }
            directives.append(directive)
        }
        return CacheControl(parsing: directives.joined(separator: ", "))
    }

    private static let integerDirectives: Set<String> = ["max-age", "s-maxage", "stale-while-revalidate", "stale-if-error"]
    private static let stringDirectives: Set<String> = ["no-cache", "private"]
    private static let knownDirectives: Set<String> = integerDirectives.union(stringDirectives).union(["no-store", "public", "must-revalidate", "proxy-revalidate", "must-understand", "immutable"])

    /// One dictionary member as a Cache-Control directive: `key`, `key=integer`, `key=token`,
    /// `key="string"`, `key=?1` (present) or `key=?0` (absent: an empty directive that counts for
    /// nothing), parameters dropped; `nil` when it is not valid Structured Fields syntax.
    private static func parse(_ member: String) -> String? {
        var text = Substring(member)
        if let semicolon = text.firstIndex(of: ";"), !text[..<semicolon].contains("\"") { text = text[..<semicolon] }
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let key = parts[0]
        guard let first = key.unicodeScalars.first, ("a"..."z").contains(first) || first == "*",
              key.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || "_-.*".unicodeScalars.contains($0) })
        else { return nil }
        guard parts.count == 2 else { return String(key) }
        let value = parts[1]
        if value == "?1" { return String(key) }
        if value == "?0" { return "" }
        let isInteger = value.unicodeScalars.first.map { $0 == "-" || ("0"..."9").contains($0) } ?? false
        // A directive's value must have its type: `max-age="10000"` makes the field invalid.
        if integerDirectives.contains(String(key)), !isInteger { return nil }
        if isInteger {
            let digits = value.hasPrefix("-") ? value.dropFirst() : value
            guard !digits.isEmpty, digits.count <= 15, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return "\(key)=\(value)"
        }
        if value.hasPrefix("\"") {
            guard stringDirectives.contains(String(key)) || !knownDirectives.contains(String(key)) else { return nil }
            guard HeaderLists.unquoted(value) != nil else { return nil }
            return "\(key)=\(value)"
        }
        guard !knownDirectives.contains(String(key)), let initial = value.unicodeScalars.first, ("a"..."z").contains(initial) || ("A"..."Z").contains(initial) || initial == "*" else { return nil }
        return "\(key)=\(value)"
    }
}
