public import Foundation
import HanekeProtocols

/// The rules of an HTTP cache, RFC 9111 and RFC 5861, as pure decisions: whether a response may be
/// stored, how long it stays fresh, its age, whether a stored response may answer a request, how
/// to validate it and how a `304` updates it, and what an unsafe request invalidates. It stores
/// nothing and sends nothing; `HTTPCache` keeps responses in a store by these rules.
///
/// A ``Kind/private`` cache (one client's: the default of `NetworkFetcher`) may keep `private`
/// responses and ignores `s-maxage`; a ``Kind/shared`` one (a proxy) honours `s-maxage`,
/// `proxy-revalidate` and `CDN-Cache-Control` (RFC 9213), refuses `private` responses, and stores a
/// response to a request with `Authorization` only when the response allows it.
///
/// A shared cache also refuses by default what RFC 9111 allows but nginx and Varnish refuse, so
/// that nothing one client sent or received reaches another unless the origin said it may: a
/// response with `Set-Cookie` is not stored (nor a `Set-Cookie` taken from a `304`), a response to
/// a request with `Cookie` is stored only with an explicit lifetime, a request's `max-stale` and
/// `stale-if-error` are ignored, and a stale response is served while the origin is unreachable
/// only when it says `stale-if-error`. Each is a ``SharedCacheRelaxations`` an operator may allow.
///
/// ```swift
/// let policy = HTTPCachePolicy(kind: .shared)
/// let request = HTTPCacheRequest(uri: "http://127.0.0.1:8080/a")
/// let response = HTTPResponse(status: 200, headers: ["Cache-Control": "max-age=60"])
/// if case .store = policy.storability(of: response, for: request) { /* keep it */ }
/// ```
public struct HTTPCachePolicy: Sendable, Hashable {
    /// Whose cache it is.
    public enum Kind: Sendable, Hashable {
        /// One user's cache, such as an HTTP client's.
        case `private`
        /// A cache shared by several users, such as a proxy.
        case shared
    }

    /// Whether a response may be stored, and if not, why.
    public enum Storability: Sendable, Hashable {
        /// It may be stored.
        case store
        /// It must not be stored, for the reason given.
        case doNotStore(reason: String)
    }

    /// What a stored response may do for a request (RFC 9111 §4).
    public enum Reuse: Sendable, Hashable {
        /// Serve it: it is fresh enough for the request.
        case fresh
        /// Serve it stale, and revalidate it in the background (`stale-while-revalidate`).
        case staleWhileRevalidate
        /// Serve it stale: the request accepts that much staleness (`max-stale`).
        case staleAccepted
        /// Validate it with the origin first; when that fails (an error, or a `500`, `502`, `503`
        /// or `504`), it may be served stale only if `servableOnError` (`stale-if-error`).
        case validate(servableOnError: Bool)
        /// It does not answer this request: its `Vary` does not match (or is `*`); forward the
        /// request as for a miss.
        case unusable
    }

    /// What a shared cache allows beyond its safe defaults: each member is something RFC 9111
    /// permits that nginx's and Varnish's defaults refuse. A private cache (one user's) allows
    /// them all and ignores this set.
    public struct SharedCacheRelaxations: OptionSet, Sendable, Hashable {
        /// The bits.
        public var rawValue: Int

        /// Creates a set from its bits.
        /// - Parameter rawValue: The bits.
        public init(rawValue: Int) {
            self.rawValue = rawValue
        }

        /// Store responses that carry `Set-Cookie`, and serve the field from the shared entry to
        /// every client (nginx: `proxy_ignore_headers Set-Cookie`). A `304`'s `Set-Cookie` is never
        /// merged into a shared entry, allowed or not.
        public static let storeSetCookie = SharedCacheRelaxations(rawValue: 1 << 0)
        /// Give a heuristic lifetime (from `Last-Modified`, or ``HTTPCachePolicy/unspecifiedLifetime``)
        /// to a response to a request with `Cookie`; without it such a response is stored only with
        /// `s-maxage`, `max-age` or `Expires`.
        public static let heuristicLifetimeWithCookies = SharedCacheRelaxations(rawValue: 1 << 1)
        /// Honour a request's `max-stale` and `stale-if-error`: serve a stale shared response because
        /// one client asked for it.
        public static let clientStaleness = SharedCacheRelaxations(rawValue: 1 << 2)
        /// Let a request's `no-cache` (or `max-age=0`, `Pragma: no-cache`) replace a fresh shared
        /// response with whatever the origin answers it; without it such a request is revalidated and
        /// answered, and the fresh response stays unless the origin answered `304`.
        public static let clientRefresh = SharedCacheRelaxations(rawValue: 1 << 3)

        /// Every relaxation: RFC 9111's shared cache, as before these defaults.
        public static let all: SharedCacheRelaxations = [.storeSetCookie, .heuristicLifetimeWithCookies, .clientStaleness, .clientRefresh]
    }

    /// `.private` by default: whose cache this is.
    public var kind: Kind { didSet { fingerprint = computedFingerprint } }
    /// `[]` (none) by default: what a shared cache allows beyond its safe defaults; ignored by a
    /// private cache.
    public var relaxations: SharedCacheRelaxations { didSet { fingerprint = computedFingerprint } }
    /// `0.1` by default: a response without an explicit lifetime that may get a heuristic one stays
    /// fresh for this fraction of the time since its `Last-Modified` (RFC 9111 §4.2.2).
    public var heuristicFraction: Double { didSet { fingerprint = computedFingerprint } }
    /// `1 day` by default: the longest heuristic lifetime.
    public var maximumHeuristicLifetime: Duration { didSet { fingerprint = computedFingerprint } }
    /// `true` by default for a private cache, `false` for a shared one: when the origin cannot be
    /// reached at all (no response), a stale response may be served unless a directive forbids
    /// serving it stale (RFC 9111 §4.2.4 allows this to a disconnected cache); see
    /// ``mayServeStaleWhenDisconnected(_:)``. A shared cache serves stale on an error only where the
    /// response's `stale-if-error` allows it unless this is set (nginx: `proxy_cache_use_stale`).
    public var servesStaleWhenDisconnected: Bool { didSet { fingerprint = computedFingerprint } }
    /// `nil` (none) by default: the lifetime of a heuristically cacheable response that says
    /// nothing of its freshness (no `max-age`, `Expires` or `Last-Modified`). RFC 9111 §4.2.2 leaves
    /// such a heuristic to the cache; ``fetcherDefault`` gives one of a hundred years, so that a
    /// `NetworkFetcher` keeps, until evicted, what a server sends without caching headers, as
    /// Haneke always has.
    public var unspecifiedLifetime: Duration? { didSet { fingerprint = computedFingerprint } }
    /// What of this policy decides freshness, as 32 bits, kept up to date by the settings' `didSet`
    /// (read on every entry read: an entry's prefix decides only for the policy that wrote it).
    private(set) var fingerprint: UInt32 = 0

    /// The policy a `NetworkFetcher` follows by default: a private cache's, with an
    /// ``unspecifiedLifetime`` of a hundred years.
    public static var fetcherDefault: HTTPCachePolicy {
        HTTPCachePolicy(kind: .private, unspecifiedLifetime: .seconds(100 * 365 * 86_400))
    }

    /// Creates a policy.
    /// - Parameters:
    ///   - kind: Whose cache it is; `.private` by default.
    ///   - heuristicFraction: The fraction of the time since `Last-Modified` a heuristic lifetime
    ///     lasts; `0.1` by default.
    ///   - maximumHeuristicLifetime: The longest heuristic lifetime; `1 day` by default.
    ///   - servesStaleWhenDisconnected: Whether a stale response may be served when the origin
    ///     cannot be reached and no directive forbids it; `nil` (the default) for `true` in a
    ///     private cache and `false` in a shared one.
    ///   - unspecifiedLifetime: The lifetime of a heuristically cacheable response with no
    ///     freshness information at all; `nil` (none) by default.
    ///   - relaxations: What a shared cache allows beyond its safe defaults; none by default.
    public init(
        kind: Kind = .private, heuristicFraction: Double = 0.1, maximumHeuristicLifetime: Duration = .seconds(86_400),
        servesStaleWhenDisconnected: Bool? = nil, unspecifiedLifetime: Duration? = nil, relaxations: SharedCacheRelaxations = []
    ) {
        self.kind = kind
        self.relaxations = relaxations
        self.heuristicFraction = heuristicFraction
        self.maximumHeuristicLifetime = maximumHeuristicLifetime
        self.servesStaleWhenDisconnected = servesStaleWhenDisconnected ?? (kind == .private)
        self.unspecifiedLifetime = unspecifiedLifetime
        fingerprint = computedFingerprint
    }

    /// Whether this cache allows `relaxation`: a private cache allows every one.
    /// - Parameter relaxation: A relaxation of the shared cache's defaults.
    /// - Returns: `true` when the cache is private or `relaxations` holds it.
    public func allows(_ relaxation: SharedCacheRelaxations) -> Bool {
        kind == .private || relaxations.contains(relaxation)
    }

    /// The request fields that carry one client's credentials: a shared cache's revalidation of a
    /// stored response sends none of them.
    public static let credentialFields: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// The status codes whose responses may get a heuristic lifetime (RFC 9110 §15.1).
    public static let heuristicallyCacheableStatusCodes: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The status codes this cache understands, for `must-understand` (RFC 9111 §5.2.2.3): those
    /// of RFC 9110 whose caching it implements.
    public static let understoodStatusCodes: Set<Int> = [200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501]

    /// The header fields that describe one connection, never stored (RFC 9110 §7.6.1), beside
    /// those a `Connection` field names.
    public static let hopByHopFields: Set<String> = [
        "connection", "keep-alive", "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
        "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
    ]

    // MARK: - Storing (RFC 9111 §3)

    /// Whether `response`, received for `request`, may be stored (RFC 9111 §3, §5.2).
    /// - Parameters:
    ///   - response: The response; its body is not looked at.
    ///   - request: The request it answers.
    /// - Returns: ``Storability/store``, or why not.
    public func storability(of response: HTTPResponse, for request: HTTPCacheRequest) -> Storability {
        guard request.method == "GET" else { return .doNotStore(reason: "only responses to GET are stored, not to \(request.method)") }
        let status = response.status
        guard status >= 200, status <= 599 else { return .doNotStore(reason: "status \(status) is not a final response") }
        guard status != 206, status != 304 else { return .doNotStore(reason: "status \(status) is not stored whole") }
        let directives = responseDirectives(response.headers)
        let requestDirectives = CacheControl(request.headers)
        if directives.mustUnderstand {
            guard Self.understoodStatusCodes.contains(status) else {
                return .doNotStore(reason: "must-understand, and status \(status) is not understood")
            }
        } else if directives.noStore {
            return .doNotStore(reason: "the response says no-store")
        }
        if requestDirectives.noStore { return .doNotStore(reason: "the request says no-store") }
        if kind == .shared {
            if directives.isPrivate { return .doNotStore(reason: "a shared cache does not store a private response") }
            if request.headers.contains("Authorization"),
               !(directives.isPublic || directives.contains("s-maxage") || directives.mustRevalidate) {
                return .doNotStore(reason: "the request had Authorization, and the response allows no shared cache to keep it")
            }
            if !relaxations.contains(.storeSetCookie), response.headers.contains("Set-Cookie") {
                return .doNotStore(reason: "a shared cache does not store a response with Set-Cookie")
            }
        }
        if response.headers.listMembers(for: "Vary").contains("*") {
            return .doNotStore(reason: "Vary: * never matches another request")
        }
        let lifetime = directives.contains("max-age") || (kind == .shared && directives.contains("s-maxage")) || response.headers.contains("Expires")
        if !lifetime, !allows(.heuristicLifetimeWithCookies), request.headers.contains("Cookie") || response.headers.contains("Set-Cookie") {
            return .doNotStore(reason: "a shared cache stores a response to a request with Cookie only with s-maxage, max-age or Expires")
        }
        let explicit = lifetime || directives.isPublic || (kind == .private && directives.isPrivate)
        guard explicit || Self.heuristicallyCacheableStatusCodes.contains(status) else {
            return .doNotStore(reason: "status \(status) has no explicit lifetime and is not heuristically cacheable")
        }
        return .store
    }

    /// What to keep of `response`: its fields without hop-by-hop ones, with a `Date` if it had
    /// none, and the request's values of the fields its `Vary` names.
    /// - Parameters:
    ///   - response: The response.
    ///   - request: The request it answers.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response arrived.
    /// - Returns: The record to store beside the body.
    public func storedResponse(_ response: HTTPResponse, for request: HTTPCacheRequest, requestTime: Date, responseTime: Date) -> StoredHTTPResponse {
        var headers = Self.withoutHopByHopFields(response.headers)
        if !headers.contains("Date") { headers.add(name: "Date", value: HTTPDate.format(responseTime)) }
        var variant = HTTPHeaderFields()
        for name in response.headers.listMembers(for: "Vary") {
            for value in request.headers.values(for: name) { variant.add(name: name, value: value) }
        }
        return StoredHTTPResponse(status: response.status, headers: headers, requestTime: requestTime, responseTime: responseTime, variantRequestHeaders: variant)
    }

    /// `headers` without the hop-by-hop fields and those their `Connection` fields name.
    /// - Parameter headers: A message's fields.
    /// - Returns: The fields an intermediary passes on or a cache stores.
    public static func withoutHopByHopFields(_ headers: HTTPHeaderFields) -> HTTPHeaderFields {
        let named = Set(headers.listMembers(for: "Connection").map { $0.lowercased() })
        var kept = headers
        kept.removeAll { name in
            let lowered = name.lowercased()
            return hopByHopFields.contains(lowered) || named.contains(lowered)
        }
        return kept
    }

    // MARK: - Freshness (RFC 9111 §4.2)

    /// How long `stored` stays fresh from its origin's point of view, in seconds (§4.2.1):
    /// `s-maxage` (shared caches), else `max-age`, else `Expires` minus `Date`, else a heuristic
    /// from `Last-Modified` for heuristically cacheable statuses or `public` responses, else (for
    /// those) ``unspecifiedLifetime``, else 0. An invalid `max-age`, `s-maxage` or `Expires` makes it 0.
    /// - Parameter stored: The stored response.
    /// - Returns: The lifetime in seconds, at least 0.
    public func freshnessLifetime(of stored: StoredHTTPResponse) -> Double {
        let headers = stored.headers
        let directives = directives(of: stored)
        if kind == .shared, directives.contains("s-maxage") { return Double(directives.sharedMaxAge ?? 0) }
        if directives.contains("max-age") { return Double(directives.maxAge ?? 0) }
        let date = dateValue(of: stored)
        let expires = headers.values(for: "Expires")
        if !expires.isEmpty {
            // Several Expires fields, or one that is not a date ("0"), mean already expired.
            guard expires.count == 1, let instant = HTTPDate.parse(expires[0]) else { return 0 }
            return max(0, instant.timeIntervalSince(date))
        }
        guard Self.heuristicallyCacheableStatusCodes.contains(stored.status) || directives.isPublic else { return 0 }
        guard let lastModifiedText = headers["Last-Modified"], let lastModified = HTTPDate.parse(lastModifiedText) else {
            return unspecifiedLifetime.map { max(0, $0.timeInterval) } ?? 0
        }
        let since = max(0, date.timeIntervalSince(lastModified))
        return min(since * heuristicFraction, maximumHeuristicLifetime.timeInterval)
    }

    /// The age of `stored` at `now`, in seconds (RFC 9111 §4.2.3): its corrected initial age (from
    /// its `Age` field, its `Date` and the time the exchange took) plus the time it has been stored.
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - now: The current time.
    /// - Returns: The age in seconds.
    public func currentAge(of stored: StoredHTTPResponse, at now: Date) -> Double {
        correctedInitialAge(of: stored) + max(0, now.timeIntervalSince(stored.responseTime))
    }

    /// How many seconds of freshness `stored` had left when it arrived: its lifetime minus its
    /// corrected initial age (negative when it came stale).
    /// - Parameter stored: The stored response.
    /// - Returns: The seconds.
    public func freshnessLeftOnArrival(of stored: StoredHTTPResponse) -> Double {
        freshnessLifetime(of: stored) - correctedInitialAge(of: stored)
    }

    private func correctedInitialAge(of stored: StoredHTTPResponse) -> Double {
        let apparentAge = max(0, stored.responseTime.timeIntervalSince(dateValue(of: stored)))
        let responseDelay = max(0, stored.responseTime.timeIntervalSince(stored.requestTime))
        return max(apparentAge, Double(ageValue(of: stored.headers)) + responseDelay)
    }

    /// The `Age` field's value: the first member of the first field, when it is delta-seconds; 0
    /// otherwise (RFC 9111 §5.1).
    private func ageValue(of headers: HTTPHeaderFields) -> Int {
        guard let first = headers.listMembers(for: "Age").first, !first.isEmpty,
              first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return 0 }
        return Int(first).map { min($0, CacheControl.maximumSeconds) } ?? CacheControl.maximumSeconds
    }

    /// The response's `Date`, or when it arrived if it has none or an invalid one.
    private func dateValue(of stored: StoredHTTPResponse) -> Date {
        stored.parsed.date ?? stored.responseTime
    }

    /// The directives that govern a stored response in this cache (``responseDirectives(_:)``),
    /// from the fields parsed once with the record.
    func directives(of stored: StoredHTTPResponse) -> CacheControl {
        if kind == .shared, let targeted = stored.parsed.targetedDirectives { return targeted }
        return stored.parsed.directives
    }

    // MARK: - Reuse (RFC 9111 §4)

    /// Whether a stored response's secondary key matches a request (RFC 9111 §4.1): every field its
    /// `Vary` names has the same values in both (whitespace around list members aside), or is
    /// absent from both; `Vary: *` never matches.
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - request: The request.
    /// - Returns: `true` when the response may answer the request as far as `Vary` goes.
    public func variantMatches(_ stored: StoredHTTPResponse, _ request: HTTPCacheRequest) -> Bool {
        let names = stored.headers.listMembers(for: "Vary")
        for name in names {
            if name == "*" { return false }
            if Self.normalized(stored.variantRequestHeaders.values(for: name)) != Self.normalized(request.headers.values(for: name)) {
                return false
            }
        }
        return true
    }

    private static func normalized(_ values: [String]) -> [String] {
        values.flatMap { HeaderLists.members(of: $0) }
    }

    /// What `stored` may do for `request` at `now` (RFC 9111 §4, §5.2; RFC 5861).
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - request: The request.
    ///   - now: The current time.
    /// - Returns: Whether to serve it fresh, serve it stale (and whether to revalidate in the
    ///   background), validate it first, or forward the request as for a miss.
    public func reuse(of stored: StoredHTTPResponse, for request: HTTPCacheRequest, at now: Date) -> Reuse {
        guard variantMatches(stored, request) else { return .unusable }
        // Kept by a policy that stored Set-Cookie: never served by one that does not.
        if !allows(.storeSetCookie), stored.headers.contains("Set-Cookie") { return .unusable }
        let directives = directives(of: stored)
        let requestDirectives = CacheControl(request.headers)
        let age = currentAge(of: stored, at: now)
        let lifetime = freshnessLifetime(of: stored)
        let staleness = age - lifetime
        let mayServeStale = !forbidsServingStale(directives)
        // A shared cache serves stale on a client's say-so only where the operator allows it.
        let clientStaleness = allows(.clientStaleness)
        let staleIfError = max(directives.staleIfError ?? -1, clientStaleness ? requestDirectives.staleIfError ?? -1 : -1)
        let validate = Reuse.validate(servableOnError: mayServeStale && staleIfError >= 0 && staleness <= Double(staleIfError))
        let pragmaNoCache = !request.headers.contains("Cache-Control")
            && request.headers.listMembers(for: "Pragma").contains { $0.lowercased() == "no-cache" }
        if directives.noCache || requestDirectives.noCache || pragmaNoCache { return validate }
        // `max-age=0` asks for a validation even when no time has passed (an age of exactly 0).
        if let maximum = requestDirectives.maxAge, age > Double(maximum) || maximum == 0 { return validate }
        if staleness < 0 {
            if let minFresh = requestDirectives.minFresh, -staleness < Double(minFresh) { return validate }
            return .fresh
        }
        guard mayServeStale else { return validate }
        if clientStaleness, let maxStale = requestDirectives.maxStale, staleness <= Double(maxStale) { return .staleAccepted }
        if let window = directives.staleWhileRevalidate, staleness <= Double(window) { return .staleWhileRevalidate }
        return validate
    }

    /// Whether `stored` is fresh at `now` by its own lifetime, whatever a request asks.
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - now: The current time.
    /// - Returns: `true` while its age is below its freshness lifetime.
    public func isFresh(_ stored: StoredHTTPResponse, at now: Date) -> Bool {
        currentAge(of: stored, at: now) < freshnessLifetime(of: stored)
    }

    /// Whether a full response that a validation of `stored` brought may replace it: always, unless
    /// a shared cache validated a response that was still fresh (and not `no-cache`) only because
    /// one client's request asked (`no-cache`, `max-age`, `min-fresh`) and the operator does not
    /// allow ``SharedCacheRelaxations/clientRefresh``: then the answer goes to that client alone.
    /// - Parameters:
    ///   - stored: The stored response that was validated.
    ///   - now: When the validation was sent.
    /// - Returns: `true` when the new response may be stored in its place.
    public func mayBeReplaced(_ stored: StoredHTTPResponse, at now: Date) -> Bool {
        allows(.clientRefresh) || !isValidatedOnRequest(stored, at: now)
    }

    /// Whether a validation of `stored` at `now` is the request's doing: the response is fresh by
    /// its own lifetime and not `no-cache` (RFC 9211's `fwd=request`, not `fwd=stale`).
    func isValidatedOnRequest(_ stored: StoredHTTPResponse, at now: Date) -> Bool {
        !directives(of: stored).noCache && isFresh(stored, at: now)
    }

    /// Whether `stored` may be served stale when the origin cannot be reached at all: with
    /// ``servesStaleWhenDisconnected``, unless `must-revalidate` or `no-cache` (and in a shared
    /// cache `proxy-revalidate` or `s-maxage`) forbids it.
    /// - Parameter stored: The stored response.
    /// - Returns: `true` when it may be served.
    public func mayServeStaleWhenDisconnected(_ stored: StoredHTTPResponse) -> Bool {
        servesStaleWhenDisconnected && !forbidsServingStale(directives(of: stored))
    }

    /// Whether the response's directives forbid serving it stale (RFC 9111 §4.2.4, §5.2.2).
    private func forbidsServingStale(_ directives: CacheControl) -> Bool {
        directives.mustRevalidate || directives.noCache
            || (kind == .shared && (directives.proxyRevalidate || directives.contains("s-maxage")))
    }

    /// The header fields to serve `stored` with at `now`: its stored fields with `Age` set to its
    /// current age in whole seconds (RFC 9111 §5.1).
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - now: The current time.
    /// - Returns: The fields.
    public func servedHeaders(of stored: StoredHTTPResponse, at now: Date) -> HTTPHeaderFields {
        var headers = stored.headers
        let age = min(currentAge(of: stored, at: now), Double(CacheControl.maximumSeconds))
        headers.replaceOrAdd(name: "Age", value: String(Int(age.rounded(.down))))
        return headers
    }

    // MARK: - Validation (RFC 9111 §4.3)

    /// The fields that make `request` a validation of `stored` (§4.3.1): `If-None-Match` with its
    /// entity tag and `If-Modified-Since` with its `Last-Modified`; `nil` when it has neither.
    /// - Parameter stored: The stored response.
    /// - Returns: The fields to add to the request sent to the origin.
    public func validators(of stored: StoredHTTPResponse) -> HTTPHeaderFields? {
        var fields = HTTPHeaderFields()
        if let tag = stored.headers["ETag"] { fields.add(name: "If-None-Match", value: tag) }
        if let lastModified = stored.headers["Last-Modified"], HTTPDate.parse(lastModified) != nil {
            fields.add(name: "If-Modified-Since", value: lastModified)
        }
        return fields.isEmpty ? nil : fields
    }

    /// Whether a `304 Not Modified` answers for `stored` (§4.3.4): its entity tag is `stored`'s,
    /// or, without one, its `Last-Modified` is; a 304 that carries no validator answers for the one
    /// stored response its conditional request validated.
    /// - Parameters:
    ///   - notModified: The 304's header fields.
    ///   - stored: The stored response that was validated.
    /// - Returns: `true` when the 304 may update `stored`.
    public func notModified(_ notModified: HTTPHeaderFields, matches stored: StoredHTTPResponse) -> Bool {
        if let tag = notModified["ETag"] {
            guard let storedTag = stored.headers["ETag"] else { return false }
            return EntityTag.weaklyMatch(tag, storedTag)
        }
        if let lastModified = notModified["Last-Modified"] {
            return stored.headers["Last-Modified"] == lastModified
        }
        // Without a validator it answers the request that validated this one stored response (a
        // cache sends one conditional request per stored response), as origins that omit their
        // validators from a 304 expect.
        return true
    }

    /// `stored` updated by a `304` (RFC 9111 §3.2): each field the 304 carries replaces the stored
    /// fields of its name, except hop-by-hop fields, `Content-Length` and, in a shared cache,
    /// `Set-Cookie` (one client's cookie never joins a shared entry); the exchange's times become
    /// the stored response's, and a stored `Age` the 304 does not repeat is dropped, so its age
    /// starts again.
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - notModified: The 304's header fields.
    ///   - requestTime: When the validation request was sent.
    ///   - responseTime: When the 304 arrived.
    /// - Returns: The updated record.
    public func updating(_ stored: StoredHTTPResponse, with notModified: HTTPHeaderFields, requestTime: Date, responseTime: Date) -> StoredHTTPResponse {
        var updated = stored
        let fields = Self.withoutHopByHopFields(notModified)
        var replaced = Set<String>()
        for field in fields.fields where !HTTPHeaderFields.namesMatch(field.name, "Content-Length")
            && !(kind == .shared && HTTPHeaderFields.namesMatch(field.name, "Set-Cookie")) {
            let name = field.name.lowercased()
            if replaced.insert(name).inserted { updated.headers.remove(name: field.name) }
            updated.headers.add(name: field.name, value: field.value)
        }
        if !fields.contains("Date") { updated.headers.replaceOrAdd(name: "Date", value: HTTPDate.format(responseTime)) }
        // The stored Age was the first response's; the 304's own age (none: 0) starts again.
        if !fields.contains("Age") { updated.headers.remove(name: "Age") }
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        return updated
    }

    /// Whether a request's own conditions hold for `stored`, so that the cache answers `304 Not
    /// Modified` itself (RFC 9110 §13.2.2, RFC 9111 §4.3.2): `If-None-Match` (weak comparison, or
    /// `*`) when present, else `If-Modified-Since` against its `Last-Modified`. Only for `GET` and
    /// `HEAD`, and only for a stored 2xx response.
    /// - Parameters:
    ///   - request: The request.
    ///   - stored: The stored response that would answer it.
    /// - Returns: `true` when the answer is `304`.
    public func requestIsNotModified(_ request: HTTPCacheRequest, by stored: StoredHTTPResponse) -> Bool {
        // Preconditions hold only for what would be a 2xx (RFC 9110 §13.2.1).
        guard request.method == "GET" || request.method == "HEAD", (200..<300).contains(stored.status) else { return false }
        let tags = request.headers.listMembers(for: "If-None-Match")
        if !tags.isEmpty {
            guard let storedTag = stored.headers["ETag"] else { return false }
            return tags.contains { $0 == "*" || EntityTag.weaklyMatch($0, storedTag) }
        }
        guard let since = request.headers["If-Modified-Since"].flatMap(HTTPDate.parse),
              let lastModified = stored.headers["Last-Modified"].flatMap(HTTPDate.parse) else { return false }
        return lastModified <= since
    }

    /// The fields a `304` from the cache carries (RFC 9110 §15.4.5): those of `served` among
    /// `Cache-Control`, `Content-Location`, `Date`, `ETag`, `Expires`, `Vary`, `Last-Modified` and `Age`.
    /// - Parameter served: The fields the full response would have had.
    /// - Returns: The fields of the 304.
    public static func notModifiedHeaders(from served: HTTPHeaderFields) -> HTTPHeaderFields {
        let kept: Set<String> = ["cache-control", "content-location", "date", "etag", "expires", "vary", "last-modified", "age"]
        var headers = served
        headers.removeAll { !kept.contains($0.lowercased()) }
        return headers
    }

    // MARK: - Invalidation (RFC 9111 §4.4)

    /// The URIs a response to an unsafe request invalidates (§4.4): for a method other than `GET`,
    /// `HEAD`, `OPTIONS` and `TRACE` answered with a 2xx or 3xx status, the target and the
    /// `Location` and `Content-Location` that share its origin.
    /// - Parameters:
    ///   - request: The request.
    ///   - status: The response's status.
    ///   - headers: The response's fields.
    /// - Returns: The absolute URIs whose stored responses to remove; empty for safe requests and
    ///   errors.
    public func invalidatedURIs(request: HTTPCacheRequest, status: Int, headers: HTTPHeaderFields) -> [String] {
        guard !["GET", "HEAD", "OPTIONS", "TRACE"].contains(request.method), (200..<400).contains(status) else { return [] }
        var uris = [request.uri]
        guard let origin = URIs.origin(of: request.uri) else { return uris }
        for name in ["Location", "Content-Location"] {
            guard let value = headers[name], let resolved = URIs.resolve(value, against: request.uri),
                  URIs.origin(of: resolved) == origin, !uris.contains(resolved) else { continue }
            uris.append(resolved)
        }
        return uris
    }

    // MARK: - Directives

    /// The directives that govern a response in this cache: a shared cache reads a valid
    /// `CDN-Cache-Control` (RFC 9213) instead of `Cache-Control`.
    /// - Parameter headers: The response's fields.
    /// - Returns: The directives.
    public func responseDirectives(_ headers: HTTPHeaderFields) -> CacheControl {
        if kind == .shared, let targeted = CDNCacheControl.directives(of: headers) { return targeted }
        return CacheControl(headers)
    }
}
