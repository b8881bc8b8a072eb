public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
public import HanekeProtocols
public import HTTPCaching
import Logging

/// Fetches values over HTTP with the system's libcurl, which it drives itself (the library that
/// FoundationNetworking links; `libcurl4-openssl-dev` to build), each request on a thread of the
/// fetcher's own.
///
/// - It is an HTTP cache by the rules of RFC 9111 and RFC 5861 (``Configuration/cachePolicy``, a
///   private cache's by default): a response is kept as long as its `Cache-Control`, `Expires` or
///   `Last-Modified` allows (one that says nothing is kept until evicted, as Haneke always has), a
///   fresh one is served without a request, a stale one is revalidated with `If-None-Match` or
///   `If-Modified-Since` (a `304` keeps the value and renews its lifetime),
///   `stale-while-revalidate` serves it while one background revalidation runs, `stale-if-error`
///   (and an origin that cannot be reached) serves it when revalidation fails, `no-store` is never
///   kept, and `Vary` is checked against the request's headers. Each entry keeps its response's
///   fields as metadata. The rules apply when a `FetchingStore` (or a `Cache`) calls the fetcher.
/// - Request header fields: ``headers`` on every request, and `Cache.fetch(url:headers:)` per fetch.
///   Their `Cache-Control` and `Pragma` are the request's directives (`max-age=0`, `no-cache`,
///   `max-stale`, `min-fresh`, `only-if-cached`, `no-store`). A field is sent as it was given or
///   not at all: a name that is not an RFC 9110 token (a space, a colon, an empty name) or a value
///   with a control character other than a tab (`CR`, `LF`, `NUL`: `"en\r\nX-Injected: 1"` would
///   reach the origin as two fields) throws `invalidKey` before any request is sent, its message
///   naming the field by position and saying what is wrong, never showing the value.
/// - Only 200 and 201 are successes (for `NetworkFetcher<HTTPResponse>`, any 2xx but `206`); any
///   other status throws `StoreError` code `invalidStatusCode`, with the status in `statusCode`.
///   Failed responses are never cached.
/// - An empty body, or one shorter than its `Content-Length`, throws `missingData`.
/// - A body larger than `configuration.maximumBodySize` (`64 MiB` by default, counted after gzip or
///   another `Content-Encoding` is decoded) throws `valueTooLarge` as soon as it passes the limit,
///   and the request stops there: a compressed body is inflated on its request's own thread, at
///   most 16 KiB past the limit, so a gzip bomb holds up no other request; a request that takes longer than
///   `configuration.requestTimeout` (`60 seconds` by default) throws `timeout`, and is cancelled.
/// - Error messages show URLs without their secrets: `http://alice:***@host/path?token=***`.
/// - Cancelling the task cancels the request.
/// - Redirects (`301`, `302`, `303`, `307`, `308`) are followed, at most 10, to `http` and
///   `https` URLs only. To the same origin (scheme, host and port) every field follows; to another
///   origin only ``Configuration/redirectSafelistedHeaders`` (`Accept`, `Accept-Language`,
///   `User-Agent`, `Cache-Control`, the conditional fields…) and the fields you name in
///   ``Configuration/crossOriginRedirectHeaders`` do: `Authorization`, `Cookie`, `X-Api-Key` and
///   any other field of yours stay behind, and stay dropped for the rest of the chain. A redirect
///   from `https` to `http` is refused (``Configuration/allowsInsecureRedirects``). A redirect
///   that is not followed throws `invalidStatusCode` with its status. With a session of your own,
///   the session follows redirects by its own rules instead (FoundationNetworking sends every
///   field to every hop unless the session's delegate changes the request).
/// - No cookies and no cache of libcurl's: nothing is cached behind the cache's own layers.
///   libcurl's `http_proxy`, `https_proxy` and `no_proxy` variables apply.
///
/// ```swift
/// let user = try await cache.fetch(key: "haneke", fetcher: NetworkFetcher<JSON>(url: userURL))
/// let pages = MemoryStore<String, Data>().fetching(from: NetworkFetcher<Data>())   // keys are URLs
/// let french = NetworkFetcher<HTTPResponse>(url: pageURL, headers: ["Accept-Language": "fr"])
/// ```
public struct NetworkFetcher<Value: DataConvertible & Sendable>: Fetcher {
    /// The limits of a `NetworkFetcher`, the secrets its errors hide, and the redirects it follows.
    public struct Configuration: Sendable, Hashable {
        /// `64 MiB` by default: the most bytes a response body may have, counted as they arrive
        /// after decoding (a gzip body counts what it inflates to); `nil` for no limit. A body
        /// that passes it, or a `Content-Length` above it, throws `valueTooLarge` at once, and the
        /// request is stopped; each redirect's body counts on its own (it is read and dropped).
        /// Without a session of your own, the body held in memory never exceeds it, and a
        /// compressed body stops being inflated as soon as it passes it; a session of your own
        /// collects the whole body before the fetcher can count it.
        public var maximumBodySize: Int?
        /// `60 seconds` by default: the longest a request may take in all, from sending it to the
        /// last byte of the body, however steadily bytes arrive; `nil` for no limit (the session's
        /// own timeouts still apply). Past it the request is cancelled and throws `timeout`.
        public var requestTimeout: Duration?
        /// ``defaultSensitiveQueryItems`` (`token`, `access_token`, `api_key`, `signature`,
        /// `password` and the like) by default: the query items whose values
        /// error messages show as `***`, beside the process's `SensitiveQueryItems.current`.
        /// Names are compared without regard to case. The password
        /// of a URL's user info is always hidden (`alice:***@`), and so is user info without a
        /// password, often a token (`***@`).
        public var sensitiveQueryItems: Set<String>
        /// `HTTPCachePolicy.fetcherDefault` (a private cache's rules; a response without any
        /// freshness information is kept until evicted) by default: the HTTP caching rules the
        /// fetcher's entries follow; `nil` keeps every response the stack's own way, fresh until it
        /// is evicted or its format's lifetime ends, and never revalidates.
        public var cachePolicy: HTTPCachePolicy?
        /// `1 day` by default: how long a stale response is kept past its freshness to be
        /// revalidated, or served while the origin cannot be reached.
        public var validationRetention: Duration
        /// `[]` by default: the names of your header fields that follow a redirect to another
        /// origin besides ``redirectSafelistedHeaders``, such as `["X-Api-Key"]` for an API that
        /// redirects to a host of its own you trust with the key. Names are compared without
        /// regard to case. Every other field (`Authorization`, `Cookie`, `Private-Token`, any
        /// field of yours) is dropped at the first redirect that leaves the origin (scheme, host
        /// or port), and stays dropped for the rest of the chain.
        public var crossOriginRedirectHeaders: Set<String>
        /// `false` by default: whether a redirect from an `https` URL to an `http` one is
        /// followed. Refused, it throws `invalidStatusCode` with the redirect's status; followed,
        /// it is another origin, so only the fields that follow any redirect to another origin
        /// go with it (``crossOriginRedirectHeaders``).
        public var allowsInsecureRedirects: Bool

        /// The default ``sensitiveQueryItems``: `token`, `access_token`, `refresh_token`,
        /// `id_token`, `api_key`, `apikey`, `key`, `signature`, `sig`, `password`, `passwd`, `pass`,
        /// `secret`, `client_secret`, `private_key`, `credential`, `credentials`, `assertion`,
        /// `otp`, `code` (OAuth's), `session`, `sessionid`, `session_id`, `sid`, `jwt`, `auth`,
        /// `authorization`, the `x-amz-` signature, credential and security token, and the
        /// `x-goog-` signature and credential with `googleaccessid` (`SensitiveQueryItems.defaults`).
        /// The keys the cache shows in its logs, and the `haneke` tool, hide
        /// `SensitiveQueryItems.current`, which starts as these; add your names there, and every
        /// log line, error and fetcher follows.
        public static var defaultSensitiveQueryItems: Set<String> { Redaction.defaultSensitiveQueryItems }

        /// The header fields that follow every redirect, to another origin too, in lower case:
        /// the CORS-safelisted request fields `accept`, `accept-language`, `content-language` and
        /// `range`; `user-agent`; the request's cache directives `cache-control` and `pragma`; and
        /// the conditional fields `if-none-match`, `if-modified-since`, `if-match`,
        /// `if-unmodified-since` and `if-range` (a revalidation's validators come from the response
        /// the chain ended on). None of them says who is asking; add your own with
        /// ``crossOriginRedirectHeaders``.
        public static var redirectSafelistedHeaders: Set<String> { RedirectRules.safelistedFields }

        /// Creates a configuration.
        /// - Parameters:
        ///   - maximumBodySize: The most bytes a decoded body may have; `64 MiB` by default, `nil`
        ///     for no limit.
        ///   - requestTimeout: The longest a whole request may take; `60 seconds` by default, `nil`
        ///     for no limit.
        ///   - sensitiveQueryItems: The query items whose values errors hide; common names of
        ///     tokens, keys, signatures and passwords by default.
        ///   - cachePolicy: The HTTP caching rules; a private cache's by default, `nil` for none.
        ///   - validationRetention: How long a stale response is kept to be revalidated; `1 day`
        ///     by default.
        ///   - crossOriginRedirectHeaders: The names of your fields that also follow a redirect to
        ///     another origin; none by default.
        ///   - allowsInsecureRedirects: Whether a redirect from `https` to `http` is followed;
        ///     `false` by default.
        public init(
            maximumBodySize: Int? = 64 << 20,
            requestTimeout: Duration? = .seconds(60),
            sensitiveQueryItems: Set<String> = Configuration.defaultSensitiveQueryItems,
            cachePolicy: HTTPCachePolicy? = .fetcherDefault,
            validationRetention: Duration = .seconds(86_400),
            crossOriginRedirectHeaders: Set<String> = [],
            allowsInsecureRedirects: Bool = false
        ) {
            self.maximumBodySize = maximumBodySize
            self.requestTimeout = requestTimeout
            self.sensitiveQueryItems = sensitiveQueryItems
            self.cachePolicy = cachePolicy
            self.validationRetention = validationRetention
            self.crossOriginRedirectHeaders = crossOriginRedirectHeaders
            self.allowsInsecureRedirects = allowsInsecureRedirects
        }
    }

    /// The URL every fetch requests, or `nil` to request the key itself as a URL.
    public let url: URL?
    /// The header fields sent with every request (their `Cache-Control` and `Pragma` are the
    /// request's cache directives, and the fields a response's `Vary` names are compared with them).
    /// Each fetch checks them first: one that cannot be sent as given throws `invalidKey`.
    public let headers: HTTPHeaderFields
    /// The fetcher's limits, and the secrets its errors hide.
    public let configuration: Configuration
    /// The clock of the requests' and responses' times, which decide a stored response's age: the
    /// fetching store's clock (a `Cache` passes its own).
    public let clock: any StoreClock
    /// The session given to the fetcher, or `nil` for the shared one (see ``init(url:session:configuration:)``).
    private let customSession: URLSession?

    /// Creates a fetcher.
    /// - Parameters:
    ///   - url: The URL to request whatever the key; `nil` (the default) requests the key as a URL.
    ///   - headers: The header fields of every request; none by default. A name must be a token
    ///     and a value free of control characters but tabs, or each fetch throws `invalidKey`.
    ///   - session: `nil` (the default) for the fetcher's own transfers through libcurl, each
    ///     body counted as it is decoded. A `URLSession` of yours (one
    ///     with a delegate, say) runs the requests instead: it collects each body whole before the
    ///     fetcher can count it, and inflates it on FoundationNetworking's one thread, which every
    ///     session of the process shares — a gzip bomb then holds up every other request of those
    ///     sessions.
    ///   - configuration: The limits, the secrets errors hide, and the HTTP caching rules; the
    ///     defaults of `Configuration` by default.
    ///   - clock: The clock of request and response times; give it the fetching store's clock.
    ///
    /// Creating a fetcher does not touch libcurl: the first fetch initializes it, on one of the
    /// fetcher's threads (never one of Swift's cooperative threads).
    public init(
        url: URL? = nil, headers: HTTPHeaderFields = HTTPHeaderFields(), session: URLSession? = nil,
        configuration: Configuration = Configuration(), clock: any StoreClock = SystemClock()
    ) {
        self.url = url
        self.headers = headers
        self.customSession = session.flatMap { $0 === ownTransfersSession ? nil : $0 }
        self.configuration = configuration
        self.clock = clock
    }

    /// The key a cache should store this fetcher's value under: its URL's absolute string, followed
    /// when it has ``headers`` by a digest of them (``cacheKey(for:headers:)``).
    public var key: String? { url.map { Self.cacheKey(for: $0, headers: headers) } }

    /// The key of what `url` answers to a request with `headers`: the URL's absolute string, and
    /// when there are headers besides `Cache-Control` and `Pragma` (the request's cache
    /// directives, which apply to the entry of the other fields), ` #headers=` and the first 128
    /// bits of the SHA-256 of their names (in lower case, sorted) and values. Requests with other
    /// headers (another `Authorization`, another `Accept-Language`) never share an entry, nor a
    /// fetch under way; the key shows no header's value.
    /// - Parameters:
    ///   - url: The URL.
    ///   - headers: The request's header fields.
    /// - Returns: The key.
    public static func cacheKey(for url: URL, headers: HTTPHeaderFields) -> String {
        guard HeaderDigest.selectsContent(headers) else { return url.absoluteString }
        return url.absoluteString + " #headers=" + HeaderDigest.hex(of: headers)
    }

    /// Requests the URL (or `key` as a URL) and decodes the body on `IOExecutor.compute`,
    /// whatever the cache rules (a `FetchingStore` calls ``fetch(_:stored:)``, which applies them).
    /// - Parameter key: The cache key; used as the URL when the fetcher has none.
    /// - Returns: The decoded body.
    /// - Throws: `StoreError` (`invalidKey` for a key that is not an `http` or `https` URL or a
    ///   header field that cannot be sent, `invalidStatusCode` for a failed status or a redirect
    ///   that is not followed, `missingData`, `valueTooLarge`, `decoding`, `unavailable`,
    ///   `timeout`) or `CancellationError`.
    public func fetch(_ key: String) async throws -> Value {
        let request = try request(for: key)
        let exchange = try await send(request, headers: headers)
        return try await value(of: try checkedSuccess(exchange, request), request)
    }

    /// Whether the fetching store asks ``reuse(of:forKey:at:)`` about each entry found: with a
    /// ``Configuration/cachePolicy``.
    public var judgesStoredEntries: Bool { configuration.cachePolicy != nil }

    /// What a read may do with an entry this fetcher stored, by the HTTP cache policy: serve a
    /// fresh one (or one the request's `max-stale` accepts), serve one inside its
    /// `stale-while-revalidate` window while it is revalidated, revalidate one otherwise, fetch
    /// again when its `Vary` does not match ``headers``. An entry without a stored response (a
    /// value set by other means) is served.
    /// - Parameters:
    ///   - attributes: The entry's attributes.
    ///   - key: The key.
    ///   - now: The fetching store's current time.
    /// - Returns: The decision.
    public func reuse(of attributes: EntryAttributes, forKey key: String, at now: Date) -> StoredEntryReuse {
        guard let policy = configuration.cachePolicy else { return .fresh }
        switch policy.reuse(ofEntry: attributes, for: HTTPCacheRequest(uri: key, headers: headers), at: now) {
        case nil, .fresh?, .staleAccepted?: return .fresh
        case .staleWhileRevalidate?: return .staleWhileRevalidate
        case .validate?: return .revalidate
        case .unusable?: return .refetch
        }
    }

    /// Fetches `key` by the cache policy: a conditional request when `stored` has a validator, its
    /// `304` turned into new attributes for it, a response the policy refuses handed back without
    /// being kept, and `stored` served when revalidation fails and `stale-if-error` (or an origin
    /// that cannot be reached) allows it.
    /// - Parameters:
    ///   - key: The cache key; used as the URL when the fetcher has none.
    ///   - stored: The entry to revalidate, or `nil`.
    /// - Returns: What the fetching store should do.
    /// - Throws: What ``fetch(_:)`` throws; `notFound` when the request says `only-if-cached`.
    public func fetch(_ key: String, stored: StoreEntry<Value>?) async throws -> FetchOutcome<Value> {
        guard let policy = configuration.cachePolicy else { return .store(try await fetchEntry(key)) }
        let request = try request(for: key)
        let cacheRequest = HTTPCacheRequest(uri: key, headers: headers)
        if CacheControl(headers).onlyIfCached {
            throw StoreError(.notFound, "GET \(request.shown) says only-if-cached, and no stored response may answer it")
        }
        let record = stored.flatMap { HTTPCachePolicy.storedResponse(inEntry: $0.attributes) }
        var sent = headers
        if let record, let validators = policy.validators(of: record),
           !headers.contains("If-None-Match"), !headers.contains("If-Modified-Since") {
            // A validator the origin sent with a control character in it cannot be sent back: the
            // request goes unconditional rather than fail for as long as the entry is kept.
            for field in validators where HeaderFieldCheck.problem(name: field.name, value: field.value) == nil {
                sent.add(name: field.name, value: field.value)
            }
        }
        let requestTime = clock.now()
        let exchange: Exchange
        do {
            exchange = try await send(request, headers: sent)
        } catch let error as StoreError where [.unavailable, .timeout, .missingData].contains(error.code) {
            // No whole response came (refused, reset, timed out, cut short): a disconnected cache
            // may serve what it has.
            if let record, policy.mayServeStaleWhenDisconnected(record) || servableOnError(record, policy, cacheRequest) {
                return .servingStored
            }
            throw error
        }
        let responseTime = clock.now()
        let status = exchange.response.statusCode
        if status == 304, let record, sent.contains("If-None-Match") || sent.contains("If-Modified-Since"),
           !headers.contains("If-None-Match"), !headers.contains("If-Modified-Since") {
            let fields = Self.fields(of: exchange.response)
            guard policy.notModified(fields, matches: record) else {
                // A 304 for another representation: fetch it whole.
                return try await fetch(key, stored: nil)
            }
            let updated = policy.updating(record, with: fields, requestTime: requestTime, responseTime: responseTime)
            guard let attributes = policy.entryAttributes(of: updated, retention: configuration.validationRetention) else {
                // Still the value to serve, but of no use after this read: kept expired (its value,
                // transformed already, is not produced again).
                return .notModified(EntryAttributes(expiresAt: responseTime))
            }
            return .notModified(attributes)
        }
        if [500, 502, 503, 504].contains(status), let record, servableOnError(record, policy, cacheRequest) {
            return .servingStored
        }
        let success = try checkedSuccess(exchange, request)
        let value = try await value(of: success, request)
        let response = HTTPResponse(status: status, headers: success.fields)
        guard case .store = policy.storability(of: response, for: cacheRequest) else { return .doNotStore(value) }
        let kept = policy.storedResponse(response, for: cacheRequest, requestTime: requestTime, responseTime: responseTime)
        guard let attributes = policy.entryAttributes(of: kept, retention: configuration.validationRetention) else {
            return .doNotStore(value)
        }
        return .store(StoreEntry(value: value, attributes: attributes))
    }

    /// Whether `record` may be served because revalidating it failed (`stale-if-error`).
    private func servableOnError(_ record: StoredHTTPResponse, _ policy: HTTPCachePolicy, _ request: HTTPCacheRequest) -> Bool {
        if case .validate(servableOnError: true) = policy.reuse(of: record, for: request, at: clock.now()) { return true }
        return false
    }

    /// The URL `key` names (the fetcher's own, else the key), and how errors show it.
    private func request(for key: String) throws -> Request {
        guard let target = url ?? URL(string: key), target.scheme == "http" || target.scheme == "https" else {
            throw StoreError(.invalidKey, "\(Logger.describe(redacted(url?.absoluteString ?? key))) is not an http or https URL")
        }
        return Request(target: target, shown: redacted(target.absoluteString))
    }

    /// A response and its body.
    private struct Exchange: Sendable {
        var body: Data
        var response: HTTPURLResponse
    }

    /// A response the fetcher accepts, its fields as the cache policy reads them.
    private struct Success: Sendable {
        var body: Data
        var status: Int
        var fields: HTTPHeaderFields
    }

    /// Sends a GET with `headers`, within the deadline and the body limit, once they pass
    /// ``HeaderFieldCheck``.
    private func send(_ request: Request, headers: HTTPHeaderFields) async throws -> Exchange {
        try HeaderFieldCheck.check(headers, shown: request.shown)
        let (data, response) = try await load(request, headers: headers)
        guard let http = response as? HTTPURLResponse else {
            throw StoreError(.unavailable, "GET \(request.shown) gave no HTTP response")
        }
        return Exchange(body: data, response: http)
    }

    /// The exchange as a success: 200 or 201 (any 2xx but 206 for `HTTPResponse` values), with a
    /// whole body (an empty one only for `HTTPResponse`).
    private func checkedSuccess(_ exchange: Exchange, _ request: Request) throws -> Success {
        let http = exchange.response
        let data = exchange.body
        let wholeResponses = Value.self == HTTPResponse.self
        let accepted = wholeResponses ? (200..<300).contains(http.statusCode) && http.statusCode != 206 : http.statusCode == 200 || http.statusCode == 201
        guard accepted else {
            throw StoreError(
                .invalidStatusCode,
                "GET \(request.shown) answered \(http.statusCode) \(HTTPURLResponse.localizedString(forStatusCode: http.statusCode))",
                statusCode: http.statusCode
            )
        }
        guard !data.isEmpty || wholeResponses else {
            throw StoreError(.missingData, "GET \(request.shown) answered \(http.statusCode) with an empty body")
        }
        // A compressed body (Content-Encoding) arrives decompressed, so its length differs from the
        // announced one; libcurl itself reports such a body cut short (CURLE_PARTIAL_FILE).
        if http.value(forHTTPHeaderField: "Content-Encoding") == nil,
           http.expectedContentLength > 0, Int64(data.count) < http.expectedContentLength {
            throw StoreError(.missingData, "GET \(request.shown) sent \(data.count) of the \(http.expectedContentLength) bytes it announced")
        }
        return Success(body: data, status: http.statusCode, fields: Self.fields(of: http))
    }

    /// The body as a `Value`: decoded on the I/O executor, not on the caller's cooperative thread
    /// (a body may be large JSON, or an image whose header libvips reads under its own locks); for
    /// `HTTPResponse` values, the whole response.
    private func value(of success: Success, _ request: Request) async throws -> Value {
        if let response = HTTPResponse(status: success.status, headers: Self.decodedBodyFields(success.fields), body: success.body) as? Value {
            return response
        }
        let data = success.body
        do {
            return try await IOExecutor.compute.run { try Value.convertFromData(data) }
        } catch let cancelled as CancellationError {
            throw cancelled
        } catch {
            throw StoreError.wrapping(error, as: .decoding, "The body of GET \(request.shown) (\(data.count) bytes) does not decode as \(Value.self)")
        }
    }

    /// A response's header fields, sorted by name (FoundationNetworking keeps them in a dictionary,
    /// repeated fields joined by commas).
    private static func fields(of response: HTTPURLResponse) -> HTTPHeaderFields {
        let pairs = response.allHeaderFields.compactMap { name, value -> (String, String)? in
            guard let name = name as? String, let value = value as? String else { return nil }
            return (name, value)
        }
        return HTTPHeaderFields(pairs.sorted { $0.0.lowercased() < $1.0.lowercased() })
    }

    /// The fields of a body that arrived decoded: without its `Content-Encoding` and the
    /// `Content-Length` of the encoded bytes.
    private static func decodedBodyFields(_ fields: HTTPHeaderFields) -> HTTPHeaderFields {
        guard fields.contains("Content-Encoding") else { return fields }
        var decoded = fields
        decoded.remove(name: "Content-Encoding")
        decoded.remove(name: "Content-Length")
        return decoded
    }

    /// A URL to request, and how errors show it.
    private struct Request: Sendable {
        var target: URL
        /// `target` as `redacted(_:)` shows it.
        var shown: String
    }

    /// Runs the request within `configuration.requestTimeout`.
    private func load(_ request: Request, headers: HTTPHeaderFields) async throws -> (Data, URLResponse) {
        guard let timeout = configuration.requestTimeout else { return try await transfer(request, headers: headers) }
        return try await withThrowingTaskGroup(of: (Data, URLResponse)?.self) { group in
            group.addTask { try await transfer(request, headers: headers) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }   // the other child: the timer, or the request (cancelled)
            guard let result = try await group.next() ?? nil else {
                throw StoreError(.timeout, "GET \(request.shown) took longer than \(timeout), its requestTimeout")
            }
            return result
        }
    }

    /// Runs the GET, ending it when the calling task is cancelled or the body passes
    /// `configuration.maximumBodySize`. Without a session of the caller's own, libcurl runs it on
    /// a thread of the fetcher's own and the body is counted as it is decoded (see
    /// `CurlTransfer`); a session of the caller's own collects the body whole first.
    private func transfer(_ request: Request, headers: HTTPHeaderFields) async throws -> (Data, URLResponse) {
        guard let customSession else {
            let sensitiveQueryItems = configuration.sensitiveQueryItems.union(SensitiveQueryItems.current)
            let received = try await CurlTransfer.get(
                request.target, headers: headers, maximumBodySize: configuration.maximumBodySize,
                redirects: RedirectRules(configuration),
                shown: request.shown,
                redact: { Redaction.redactingURL($0, sensitiveQueryItems: sensitiveQueryItems) }
            )
            return (received.body, received.response)
        }
        var urlRequest = URLRequest(url: request.target)
        urlRequest.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        for field in headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name) }
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await Self.collect(urlRequest, on: customSession, shown: request.shown)
        } catch let error as StoreError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw Self.storeError(for: error, request: request)
        }
        if let maximum = configuration.maximumBodySize, data.count > maximum {
            throw CurlTransfer.tooLarge(request.shown, maximum: maximum, received: data.count)
        }
        return (data, response)
    }

    /// Runs `request` on a session of the caller's own, which collects the body whole.
    private static func collect(_ request: URLRequest, on session: URLSession, shown: String) async throws -> (Data, URLResponse) {
        try await Transfer(shown: shown).run { transfer in
            session.dataTask(with: request) { data, response, error in
                transfer.finish(response: response, error: error, body: data)
            }
        }
    }

    private static func storeError(for error: any Error, request: Request) -> any Error {
        guard let urlError = error as? URLError else {
            return StoreError(.unavailable, "GET \(request.shown) failed", cause: error)
        }
        let description = urlError.localizedDescription
        // FoundationNetworking's error holds the URL with its secrets (NSErrorFailingURLKey):
        // the cause keeps only the code, the description and the URL as errors show it.
        var userInfo: [String: Any] = [NSLocalizedDescriptionKey: description]
        userInfo[NSURLErrorFailingURLErrorKey] = URL(string: request.shown)
        let cause = URLError(urlError.code, userInfo: userInfo)
        switch urlError.code {
        case .cancelled:
            return CancellationError()
        case .timedOut:
            return StoreError(.timeout, "GET \(request.shown) timed out", cause: cause)
        case .networkConnectionLost, .cannotParseResponse, .zeroByteResource:
            return StoreError(.missingData, "GET \(request.shown) ended before its body was complete", cause: cause)
        case .unknown where description.contains("bytes remaining to read"):
            // libcurl's CURLE_PARTIAL_FILE ("transfer closed with N bytes remaining to read"), which
            // FoundationNetworking passes on as an unknown error: a body shorter than its Content-Length.
            return StoreError(.missingData, "GET \(request.shown) ended before its body was complete", cause: cause)
        default:
            return StoreError(.unavailable, "GET \(request.shown) failed", cause: cause)
        }
    }

    /// `url` as error messages show it (``Redaction``), hiding the values of
    /// `configuration.sensitiveQueryItems`: `http://alice:***@host/path?token=***`.
    func redacted(_ url: String) -> String {
        Redaction.redactingURL(url, sensitiveQueryItems: configuration.sensitiveQueryItems.union(SensitiveQueryItems.current))
    }
}

/// The session that `NetworkFetcherSession.shared` names: ephemeral, its URL cache off. Never
/// used for a request (a fetcher given it runs its own transfers), only recognised.
let ownTransfersSession: URLSession = {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
    configuration.httpCookieStorage = nil
    configuration.timeoutIntervalForRequest = 30
    return URLSession(configuration: configuration)
}()

/// The session that stood for `NetworkFetcher`'s own transfers, which are the default: pass no
/// session instead.
@available(*, deprecated, message: "Pass no session: a NetworkFetcher runs its own transfers by default")
public enum NetworkFetcherSession {
    /// A session that a `NetworkFetcher` given it does not use: it runs its requests through
    /// libcurl itself, as with no session.
    public static var shared: URLSession { ownTransfersSession }
}

/// One request on a session of the caller's own: the fetch waiting for it, and its task. A fetch
/// resumes exactly once — when the task finishes, or at once when it is cancelled, the task then
/// cancelled in the background.
private final class Transfer: Sendable {
    private let shown: String
    private let state = Locked(State())

    private struct State {
        /// The fetch, until it is resumed.
        var continuation: CheckedContinuation<(Data, URLResponse), any Error>?
        var task: URLSessionTask?
        /// Whether the task is to be cancelled, or was.
        var cancelled = false
    }

    init(shown: String) {
        self.shown = shown
    }

    /// Runs the task `makeTask` makes, and returns what it fetched. A session's `dataTask`,
    /// `resume()` and `cancel()` wait for the session's own thread (`DispatchQueue.sync`), so they
    /// are called from a Dispatch thread, never a cooperative one.
    /// - Throws: `CancellationError` when the calling task is cancelled; otherwise
    ///   FoundationNetworking's error.
    func run(_ makeTask: @escaping @Sendable (Transfer) -> URLSessionTask) async throws -> (Data, URLResponse) {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.continuation = continuation }
                DispatchQueue.global().async { self.start(makeTask(self)) }
            }
        } onCancel: {
            end(throwing: CancellationError())
        }
    }

    /// Resumes `task`, or cancels it if the transfer has ended already. Waits for the session's
    /// thread: call it on a Dispatch queue.
    private func start(_ task: URLSessionTask) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() } else { task.resume() }
    }

    /// Resumes the fetch with `error` now, and cancels the task (which ends later).
    func end(throwing error: any Error) {
        let (continuation, task) = state.withLock { state in
            defer { state.continuation = nil }
            state.cancelled = true
            return (state.continuation, state.task)
        }
        continuation?.resume(throwing: error)
        if let task { DispatchQueue.global().async { task.cancel() } }
    }

    /// Resumes the fetch, if it still waits, with the session's error or the body.
    func finish(response: URLResponse?, error: (any Error)?, body: Data?) {
        let continuation = state.withLock { $0.continuation.take() }
        if let error {
            continuation?.resume(throwing: error)
        } else if let response {
            continuation?.resume(returning: (body ?? Data(), response))
        } else {
            continuation?.resume(throwing: StoreError(.unavailable, "GET \(shown) gave no response"))
        }
    }
}
