/// What an HTTP cache needs of a request: its method, its target and its header fields.
public struct HTTPCacheRequest: Sendable, Hashable {
    /// The method, as sent (`GET`, `POST`, …; methods are case-sensitive).
    public var method: String
    /// The target URI in absolute form (`https://example.com/a?b=1`): the cache key of its responses.
    public var uri: String
    /// The header fields.
    public var headers: HTTPHeaderFields

    /// Creates a request head.
    /// - Parameters:
    ///   - method: The method; `GET` by default.
    ///   - uri: The target URI in absolute form.
    ///   - headers: The header fields; none by default.
    public init(method: String = "GET", uri: String, headers: HTTPHeaderFields = HTTPHeaderFields()) {
        self.method = method
        self.uri = uri
        self.headers = headers
    }
}
