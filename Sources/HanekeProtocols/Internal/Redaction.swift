import Foundation

/// Hides secrets that URLs carry — the user info (`alice:S3cr3t@`, or a lone user name, often a
/// token) and the values of sensitive query items (`?token=…`), fragment items
/// (`#access_token=…`, as OAuth's implicit flow writes them) and path parameters
/// (`;jsessionid=…`) — wherever a URL is shown in an error message or a log line:
/// `http://alice:***@host/path;jsessionid=***?token=***#access_token=***`.
package enum Redaction {
    /// The query items whose values are hidden unless a caller names others: common names of
    /// tokens, keys, signatures and passwords, in lower case (`SensitiveQueryItems.defaults`).
    package static let defaultSensitiveQueryItems: Set<String> = [
        "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "key",
        "signature", "sig", "password", "passwd", "pass", "secret", "client_secret",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
        "x-goog-signature", "x-goog-credential", "googleaccessid",
        "code", "session", "sessionid", "session_id", "sid", "jwt", "auth", "authorization",
        "private_key", "credential", "credentials", "assertion", "otp", "jsessionid", "phpsessid",
    ]

    /// `url` with its secrets hidden. Textual, so that it works on what `URLComponents` refuses
    /// too (a bad port, spaces): the user info between `://` and the last `@` before the path
    /// becomes `user:***` (or `***` without a password), and the value of each sensitive query item
    /// `***`.
    /// - Parameters:
    ///   - url: A URL's text.
    ///   - sensitiveQueryItems: The query items whose values are hidden.
    /// - Returns: What may be shown.
    package static func redactingURL(_ url: String, sensitiveQueryItems: Set<String> = SensitiveQueryItems.current) -> String {
        guard let separator = url.range(of: "://") else { return url }
        var shown = String(url[..<separator.upperBound])
        let rest = url[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                shown += userInfo[..<colon] + ":***"
            } else {
                shown += "***"
            }
            shown += authority[at...]
        } else {
            shown += authority
        }
        let sensitive = Set(sensitiveQueryItems.map { $0.lowercased() })
        let tail = rest[authorityEnd...]
        let pathEnd = tail.firstIndex { $0 == "?" || $0 == "#" } ?? tail.endIndex
        // Path parameters: `;name=value` in any segment.
        shown += tail[..<pathEnd].split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            let parts = segment.split(separator: ";", omittingEmptySubsequences: false)
            return ([String(parts[0])] + parts.dropFirst().map { hidingValue(of: $0, sensitive) }).joined(separator: ";")
        }.joined(separator: "/")
        var remainder = tail[pathEnd...]
        if remainder.first == "?" {
            let queryEnd = remainder.firstIndex(of: "#") ?? remainder.endIndex
            shown += "?" + items(remainder[remainder.index(after: remainder.startIndex)..<queryEnd], sensitive)
            remainder = remainder[queryEnd...]
        }
        if remainder.first == "#" {
            shown += "#" + items(remainder.dropFirst(), sensitive)
        }
        return shown
    }

    /// `&`-separated `name=value` items with the values of sensitive names hidden.
    private static func items(_ text: Substring, _ sensitive: Set<String>) -> String {
        text.split(separator: "&", omittingEmptySubsequences: false).map { hidingValue(of: $0, sensitive) }.joined(separator: "&")
    }

    /// `name=value` as it is, or `name=***` when `name` (percent-decoded, in lower case) is sensitive.
    private static func hidingValue(of item: Substring, _ sensitive: Set<String>) -> String {
        guard let equals = item.firstIndex(of: "=") else { return String(item) }
        let name = String(item[..<equals])
        return sensitive.contains((name.removingPercentEncoding ?? name).lowercased()) ? name + "=***" : String(item)
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
