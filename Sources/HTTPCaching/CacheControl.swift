/// The directives of `Cache-Control` fields (RFC 9111 §5.2), of a request or of a response.
///
/// Names are compared without regard to case; a directive's argument may be a token or a quoted
/// string. Of a repeated directive the first counts. A `delta-seconds` argument that is not a
/// number makes its directive invalid (``seconds(_:)`` is `nil`) but still present; one beyond
/// what can be counted is 2,147,483,648 seconds, as RFC 9111 §1.2.2 says.
///
/// ```swift
/// let directives = CacheControl(parsing: "private, max-age=60")
/// directives.isPrivate   // true
/// directives.maxAge      // 60
/// ```
public struct CacheControl: Sendable, Hashable {
    /// One directive: its name in lower case, and its argument without quotes, if it has one.
    public struct Directive: Sendable, Hashable {
        /// The name, lower-cased.
        public var name: String
        /// The argument, unquoted; `nil` when the directive has none.
        public var argument: String?
    }

    /// The largest number of seconds counted: larger values, and overflowing sums, are this many
    /// (RFC 9111 §1.2.2).
    public static let maximumSeconds = 2_147_483_648

    /// The directives, in order, repeats included.
    public private(set) var directives: [Directive]

    /// Parses one field value.
    /// - Parameter value: A `Cache-Control` field value.
    public init(parsing value: String) {
        directives = []
        append(value)
    }

    /// Parses every `Cache-Control` field of `headers`.
    /// - Parameter headers: A message's header fields.
    public init(_ headers: HTTPHeaderFields) {
        directives = []
        for value in headers.values(for: "Cache-Control") { append(value) }
    }

    private mutating func append(_ value: String) {
        for member in HeaderLists.members(of: value) {
            let text = Substring(member)
            guard let equals = text.firstIndex(of: "=") else {
                directives.append(Directive(name: String(HeaderLists.trim(text)).lowercased(), argument: nil))
                continue
            }
            let name = String(HeaderLists.trim(text[..<equals])).lowercased()
            let argument = HeaderLists.unquoted(HeaderLists.trim(text[text.index(after: equals)...]))
            directives.append(Directive(name: name, argument: argument ?? ""))
        }
    }

    /// Whether the directive `name` is present.
    /// - Parameter name: A directive name in lower case.
    /// - Returns: `true` when present, with or without an argument.
    public func contains(_ name: String) -> Bool {
        directives.contains { $0.name == name }
    }

    /// The first `name` directive's argument as delta-seconds.
    /// - Parameter name: A directive name in lower case.
    /// - Returns: The seconds, at most ``maximumSeconds``; `nil` when the directive is absent or its
    ///   argument is not a non-negative whole number.
    public func seconds(_ name: String) -> Int? {
        guard let directive = directives.first(where: { $0.name == name }), let argument = directive.argument,
              !argument.isEmpty, argument.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(argument).map { min($0, Self.maximumSeconds) } ?? Self.maximumSeconds
    }

    /// The field names of a qualified directive (`no-cache="Set-Cookie"`), or `nil` when the
    /// directive is absent or unqualified.
    /// - Parameter name: A directive name in lower case.
    /// - Returns: The field names.
    public func fieldNames(_ name: String) -> [String]? {
        guard let argument = directives.first(where: { $0.name == name })?.argument else { return nil }
        return HeaderLists.members(of: argument)
    }

    /// `max-age`: the seconds a response stays fresh, or (in a request) the oldest response the
    /// client accepts.
    public var maxAge: Int? { seconds("max-age") }
    /// `s-maxage`: the seconds a response stays fresh in a shared cache.
    public var sharedMaxAge: Int? { seconds("s-maxage") }
    /// `min-fresh` (request): the seconds a response must stay fresh for.
    public var minFresh: Int? { seconds("min-fresh") }
    /// `stale-while-revalidate` (RFC 5861): the seconds a stale response may be served while it is
    /// revalidated in the background.
    public var staleWhileRevalidate: Int? { seconds("stale-while-revalidate") }
    /// `stale-if-error` (RFC 5861): the seconds a stale response may be served when revalidating
    /// it fails.
    public var staleIfError: Int? { seconds("stale-if-error") }
    /// `no-store`.
    public var noStore: Bool { contains("no-store") }
    /// `no-cache`, qualified or not.
    public var noCache: Bool { contains("no-cache") }
    /// `private`, qualified or not.
    public var isPrivate: Bool { contains("private") }
    /// `public`.
    public var isPublic: Bool { contains("public") }
    /// `must-revalidate`.
    public var mustRevalidate: Bool { contains("must-revalidate") }
    /// `proxy-revalidate`.
    public var proxyRevalidate: Bool { contains("proxy-revalidate") }
    /// `must-understand`.
    public var mustUnderstand: Bool { contains("must-understand") }
    /// `only-if-cached` (request).
    public var onlyIfCached: Bool { contains("only-if-cached") }
    /// `immutable` (RFC 8246).
    public var immutable: Bool { contains("immutable") }

    /// `max-stale` (request): `nil` when absent, `.max` when given without a limit (any staleness),
    /// else the seconds of staleness the client accepts.
    public var maxStale: Int? {
        guard let directive = directives.first(where: { $0.name == "max-stale" }) else { return nil }
        guard directive.argument != nil else { return .max }
        return seconds("max-stale")
    }
}
