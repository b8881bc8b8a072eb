import Foundation

/// Hides secrets that URLs carry — the user info (`alice:S3cr3t@`, or a lone user name, often a
/// token) and the values of sensitive query items (`?token=…`) — wherever a URL is shown in an
/// error message or a log line: `http://alice:***@host/path?token=***`.
package enum Redaction {
    /// The query items whose values are hidden unless a caller names others: common names of
    /// tokens, keys, signatures and passwords. Compared without regard to case.
    package static let defaultSensitiveQueryItems: Set<String> = [
        "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "key",
        "signature", "sig", "password", "passwd", "secret", "client_secret",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
    ]

    /// `url` with its secrets hidden; text that does not parse as a URL is not shown at all.
    /// - Parameters:
    ///   - url: A URL's text.
    ///   - sensitiveQueryItems: The query items whose values are hidden.
    /// - Returns: What may be shown.
    package static func redactingURL(_ url: String, sensitiveQueryItems: Set<String> = defaultSensitiveQueryItems) -> String {
        guard var components = URLComponents(string: url) else {
            return "a URL that does not parse (\(url.utf8.count) bytes)"
        }
        if components.percentEncodedPassword != nil {
            components.percentEncodedPassword = "***"
        } else if components.percentEncodedUser != nil {
            components.percentEncodedUser = "***"
        }
        if let items = components.percentEncodedQueryItems {
            let sensitive = Set(sensitiveQueryItems.map { $0.lowercased() })
            components.percentEncodedQueryItems = items.map { item in
                let name = (item.name.removingPercentEncoding ?? item.name).lowercased()
                return sensitive.contains(name) && item.value != nil ? URLQueryItem(name: item.name, value: "***") : item
            }
        }
        return components.string ?? "a URL that does not parse (\(url.utf8.count) bytes)"
    }

    /// `text` as it is, unless it is a URL (it has a scheme followed by `://`): then
    /// ``redactingURL(_:sensitiveQueryItems:)``. For keys, which are often URLs.
    package static func redactingURLs(in text: String) -> String {
        guard let separator = text.range(of: "://"), !text[..<separator.lowerBound].isEmpty,
              text[..<separator.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else {
            return text
        }
        return redactingURL(text)
    }
}
