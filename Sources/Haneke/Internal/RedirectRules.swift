import Foundation
import HTTPCaching

/// Which redirects `NetworkFetcher` follows, and which of the caller's header fields go with each
/// hop. libcurl follows no redirect itself (`CURLOPT_FOLLOWLOCATION` is off): it would send every
/// custom field to whatever host a `Location` names (it keeps back only `Authorization` and
/// `Cookie`), and follow `https` to `http`. `CurlTransfer` asks ``decision(from:to:headers:)``
/// before each hop instead.
///
/// - A redirect is a `301`, `302`, `303`, `307` or `308` with a `Location`; at most
///   ``maximumRedirects`` are followed. A `GET` stays a `GET`.
/// - To the same origin (scheme, host and port), every field follows.
/// - To another origin, only ``safelistedFields`` and the caller's ``crossOriginFields`` follow,
///   and the URL's user info is dropped. A field dropped once stays dropped for the rest of the
///   chain, back on the first origin too: the other origin chose where the chain went next.
/// - `https` to `http` is refused unless ``allowsInsecureRedirects``; a `Location` that is not
///   `http` or `https` always is.
struct RedirectRules: Sendable, Hashable {
    /// The most redirects one request follows, as libcurl's and browsers' default.
    static let maximumRedirects = 10

    /// The statuses whose `Location` is followed (not `300`, `304`, `305` or `306`).
    static let followedStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The fields that follow a redirect to another origin, in lower case: the CORS-safelisted
    /// request fields (`Accept`, `Accept-Language`, `Content-Language`, `Range`), and fields that
    /// say how to answer without saying who asks (`User-Agent`, the request's `Cache-Control` and
    /// `Pragma`, and the conditional fields, whose validators came from the response the chain
    /// ended on last time).
    static let safelistedFields: Set<String> = [
        "accept", "accept-language", "content-language", "range",
        "user-agent", "cache-control", "pragma",
        "if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range",
    ]

    /// The caller's fields, besides ``safelistedFields``, that follow a redirect to another origin,
    /// in lower case.
    let crossOriginFields: Set<String>
    /// Whether a redirect from `https` to `http` is followed.
    let allowsInsecureRedirects: Bool

    /// Creates the rules.
    /// - Parameters:
    ///   - crossOriginFields: The names of the fields that also follow a redirect to another
    ///     origin, in any case.
    ///   - allowsInsecureRedirects: Whether `https` to `http` is followed.
    init(crossOriginFields: Set<String> = [], allowsInsecureRedirects: Bool = false) {
        self.crossOriginFields = Set(crossOriginFields.map { $0.lowercased() })
        self.allowsInsecureRedirects = allowsInsecureRedirects
    }

    /// What to do with a redirect.
    enum Decision: Equatable {
        /// Request `url` with `headers`.
        case follow(URL, HTTPHeaderFields)
        /// Stop: the redirect is not followed, for the reason given (the end of a sentence).
        case refuse(String)
    }

    /// Whether to follow a redirect from `current` to `target`, and with which fields.
    /// - Parameters:
    ///   - current: The URL that answered with the redirect.
    ///   - target: Its `Location`, resolved against `current`.
    ///   - headers: The fields the request to `current` carried.
    /// - Returns: The next request, or why there is none.
    func decision(from current: URL, to target: URL, headers: HTTPHeaderFields) -> Decision {
        let scheme = target.scheme?.lowercased()
        guard scheme == "http" || scheme == "https", target.host?.isEmpty == false else {
            return .refuse("it is not an http or https URL")
        }
        if current.scheme?.lowercased() == "https", scheme == "http", !allowsInsecureRedirects {
            return .refuse("it leads from https to http (allowsInsecureRedirects is off)")
        }
        guard !Self.sameOrigin(current, target) else { return .follow(target, headers) }
        var kept = headers
        kept.removeAll { name in
            let name = name.lowercased()
            return !Self.safelistedFields.contains(name) && !crossOriginFields.contains(name)
        }
        guard let next = Self.withoutUserInfo(target) else { return .refuse("its user info cannot be taken out of it") }
        return .follow(next, kept)
    }

    /// Whether two URLs have one origin: the same scheme, host and port (a missing port is the
    /// scheme's default), without regard to case.
    static func sameOrigin(_ first: URL, _ second: URL) -> Bool {
        first.scheme?.lowercased() == second.scheme?.lowercased()
            && first.host?.lowercased() == second.host?.lowercased()
            && port(of: first) == port(of: second)
    }

    private static func port(of url: URL) -> Int? {
        if let port = url.port { return port }
        switch url.scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }

    /// `url` without a user name or password, which libcurl would send as credentials; `nil` when
    /// they cannot be taken out.
    private static func withoutUserInfo(_ url: URL) -> URL? {
        guard url.user != nil || url.password != nil else { return url }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.user = nil
        components.password = nil
        return components.url
    }
}

extension RedirectRules {
    /// The rules a fetcher's configuration sets.
    /// - Parameter configuration: The fetcher's configuration.
    init<Value>(_ configuration: NetworkFetcher<Value>.Configuration) {
        self.init(
            crossOriginFields: configuration.crossOriginRedirectHeaders,
            allowsInsecureRedirects: configuration.allowsInsecureRedirects
        )
    }
}
