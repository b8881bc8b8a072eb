public import Foundation
public import HanekeProtocols
public import Logging
import Synchronization

/// One request's way through an HTTP cache — request → policy → store → response — for any
/// server in front of an origin: `haneke proxy` and the Hummingbird middleware both answer through
/// it, so they follow one set of rules and say what they did in one `Cache-Status` (RFC 9211).
///
/// - A stored response answers with its `Age` when fresh (or, where the policy allows, when the
///   request accepts it stale); a request's own `If-None-Match` or `If-Modified-Since` that holds
///   is answered `304`; a single byte range of a stored whole `200` is answered `206`; a `HEAD` is
///   answered by a stored `GET`, without a body; `only-if-cached` with nothing to serve is `504`.
/// - A stale response is validated with a conditional `GET` that carries none of the client's
///   credentials in a shared cache; a `304` updates it (and is checked again: a `304` saying
///   `private` removes it). Within `stale-while-revalidate` it is served at once and revalidated in
///   the background, once per entry at a time, where the caller gives an origin that may outlive
///   the request; within `stale-if-error` it is served when the origin fails or answers `500`,
///   `502`, `503` or `504`.
/// - A miss goes to the origin (a `HEAD` as a `GET`, with ``Configuration-swift.struct/fetchesHEADAsGET``),
///   and its answer is stored if the policy allows; a full answer to a validation a client forced
///   replaces a fresh response only where ``HTTPCachePolicy/mayBeReplaced(_:at:)`` allows.
/// - A successful unsafe request invalidates its target and same-origin `Location` and
///   `Content-Location`.
///
/// The caller owns the wire: it turns its request into an ``HTTPCacheRequest`` whose fields are
/// those the origin will see (the key is what reaches the origin), and writes the ``Answer``.
public final class HTTPCacheFrontEnd<Storage: Store>: Sendable where Storage.Key == String, Storage.Value == Data {
    /// How the front end treats requests.
    public struct Configuration: Sendable, Hashable {
        /// `true` by default: a `HEAD` miss goes to the origin as a `GET`, whose answer is stored
        /// (as nginx's `proxy_cache_convert_head` and Varnish do); `false` when the origin cannot
        /// be asked another method than the client's (a route), and a `HEAD`'s answer is not stored.
        public var fetchesHEADAsGET = true
        /// `64 MiB` by default: the largest body stored; a larger answer is passed on, not stored.
        public var maximumStoredBodySize = 64 << 20

        /// Creates the defaults.
        public init() {}
    }

    /// What to send the client.
    public enum Answer<Forwarded: HTTPCacheOriginResponse>: Sendable {
        /// A response the cache made: a stored one (with `Age` and `Cache-Status`), a `304`, a
        /// `206`, or a `504` for `only-if-cached`. A `HEAD`'s has an empty body and the
        /// `Content-Length` of the `GET`.
        case fromCache(HTTPResponse)
        /// The origin's answer, to send with `Cache-Status: <status>` added.
        case forwarded(Forwarded, status: HTTPCacheStatus)
        /// The origin could not answer, and no stored response may: send an error (`gatewayTimeout`:
        /// a stored response exists that must not be served stale, RFC 9111 §5.2.2.2, so `504`).
        case failed(any Error, status: HTTPCacheStatus, gatewayTimeout: Bool)
    }

    /// The cache.
    public let cache: HTTPCache<Storage>
    /// How requests are treated.
    public let configuration: Configuration
    private let logger: Logger
    /// The entries being revalidated in the background.
    private let revalidating = Mutex<Set<String>>([])
    private let background = Mutex(Background())
    private let nextTask = Atomic<Int>(0)

    /// The background revalidations running, and those that ended before they were recorded.
    private struct Background {
        var tasks: [Int: Task<Void, Never>] = [:]
        var endedEarly: Set<Int> = []
    }

    /// Creates a front end.
    /// - Parameters:
    ///   - cache: The cache (a shared cache's policy for a server in front of several users).
    ///   - configuration: How requests are treated; the defaults by default.
    ///   - logger: Where failures to read or keep a response are logged (URIs redacted).
    public init(cache: HTTPCache<Storage>, configuration: Configuration = Configuration(), logger: Logger = Logger(label: "haneke.http-cache")) {
        self.cache = cache
        self.configuration = configuration
        self.logger = logger
    }

    // MARK: - Answering

    /// Answers `request` from the cache, or through `origin`.
    /// - Parameters:
    ///   - request: The client's method, the key URI, and the fields the origin will see.
    ///   - origin: Sends a request to the origin (for a miss, a validation, an unsafe method).
    ///   - background: Sends a request to the origin after this call returns, for a revalidation
    ///     within `stale-while-revalidate`; `nil` when the origin cannot outlive the request (then
    ///     such a response is revalidated first, as if stale).
    /// - Returns: What to send.
    public func respond<Forwarded: HTTPCacheOriginResponse>(
        to request: HTTPCacheRequest, origin: (HTTPCacheRequest) async throws -> Forwarded,
        background: (@Sendable (HTTPCacheRequest) async throws -> Forwarded)? = nil
    ) async -> Answer<Forwarded> {
        guard request.method == "GET" || request.method == "HEAD" else {
            return await forward(request, status: HTTPCacheStatus(forward: "method"), origin: origin)
        }
        let hit: HTTPCache<Storage>.Hit?
        do {
            hit = try await cache.lookup(request)
        } catch {
            logger.warning("Reading the cache for \(Redaction.redactingURL(request.uri)) failed: \(error)")
            hit = nil
        }
        let onlyIfCached = CacheControl(request.headers).onlyIfCached
        guard let hit else {
            if onlyIfCached { return .fromCache(Self.gatewayTimeout(HTTPCacheStatus(forward: "uri-miss", detail: "only-if-cached"))) }
            return await forward(request, status: HTTPCacheStatus(forward: "uri-miss"), origin: origin)
        }
        switch hit.reuse {
        case .fresh:
            return .fromCache(serve(hit.stored, body: hit.body, for: request, status: HTTPCacheStatus(hit: true)))
        case .staleAccepted:
            return .fromCache(serve(hit.stored, body: hit.body, for: request, status: HTTPCacheStatus(hit: true, detail: "max-stale")))
        case .staleWhileRevalidate:
            guard let background else {
                return await validate(hit, request, servableOnError: true, origin: origin)
            }
            revalidateInBackground(hit, request, origin: background)
            return .fromCache(serve(hit.stored, body: hit.body, for: request, status: HTTPCacheStatus(hit: true, detail: "stale-while-revalidate")))
        case .validate(let servableOnError):
            if onlyIfCached { return .fromCache(Self.gatewayTimeout(HTTPCacheStatus(forward: "stale", detail: "only-if-cached"))) }
            return await validate(hit, request, servableOnError: servableOnError, origin: origin)
        case .unusable:
            if onlyIfCached { return .fromCache(Self.gatewayTimeout(HTTPCacheStatus(forward: "vary-miss", detail: "only-if-cached"))) }
            return await forward(request, status: HTTPCacheStatus(forward: "vary-miss"), origin: origin)
        }
    }

    /// Answers `request` at once from a memory layer read through `read`, when a fresh response
    /// there (or one the request accepts stale) answers it: no suspension, so a server can call it
    /// on a connection's thread. `nil` otherwise: ask ``respond(to:origin:background:)``.
    /// - Parameters:
    ///   - request: The request, as for ``respond(to:origin:background:)``.
    ///   - read: The memory layer's entry for a key, or `nil`.
    /// - Returns: The response, or `nil`.
    public func respondAtOnce(to request: HTTPCacheRequest, reading read: (String) -> StoreEntry<Data>?) -> HTTPResponse? {
        guard let hit = cache.lookup(request, reading: read) else { return nil }
        switch hit.reuse {
        case .fresh:
            return serve(hit.stored, body: hit.body, for: request, status: HTTPCacheStatus(hit: true))
        case .staleAccepted:
            return serve(hit.stored, body: hit.body, for: request, status: HTTPCacheStatus(hit: true, detail: "max-stale"))
        case .staleWhileRevalidate, .validate, .unusable:
            return nil
        }
    }

    /// Waits for the background revalidations started so far.
    public func waitForRevalidations() async {
        while true {
            let tasks = background.withLock { Array($0.tasks.values) }
            if tasks.isEmpty { return }
            for task in tasks { await task.value }
        }
    }

    // MARK: - Serving

    /// A stored response served for `request`: `304` when the request's own conditions hold for
    /// it, a byte range of it for a single `Range`, no body for `HEAD`.
    private func serve(_ stored: StoredHTTPResponse, body: Data, for request: HTTPCacheRequest, status: HTTPCacheStatus) -> HTTPResponse {
        let now = cache.clock.now()
        var headers = cache.policy.servedHeaders(of: stored, at: now)
        var status = status
        status.ttl = Int((cache.policy.freshnessLifetime(of: stored) - cache.policy.currentAge(of: stored, at: now)).rounded(.down))
        if cache.policy.requestIsNotModified(request, by: stored) {
            var notModified = HTTPCachePolicy.notModifiedHeaders(from: headers)
            notModified.add(name: "Cache-Status", value: status.value)
            return HTTPResponse(status: 304, headers: notModified)
        }
        headers.add(name: "Cache-Status", value: status.value)
        if request.method == "GET", stored.status == 200, let range = request.headers["Range"], Self.ifRangeHolds(request, for: stored),
           let (lower, upper) = ByteRanges.single(range, length: body.count) {
            headers.remove(name: "Content-Length")
            headers.replaceOrAdd(name: "Content-Range", value: "bytes \(lower)-\(upper)/\(body.count)")
            headers.add(name: "Content-Length", value: String(upper - lower + 1))
            return HTTPResponse(status: 206, headers: headers, body: body[body.startIndex + lower...body.startIndex + upper])
        }
        headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        let sent = request.method == "HEAD" || stored.status == 204 ? Data() : body
        return HTTPResponse(status: stored.status, headers: headers, body: sent)
    }

    /// Whether a request's `If-Range` (if any) names the stored response: its strong entity tag, or
    /// its `Last-Modified` exactly (RFC 9110 §13.1.5). Otherwise the whole response is sent.
    static func ifRangeHolds(_ request: HTTPCacheRequest, for stored: StoredHTTPResponse) -> Bool {
        guard let condition = request.headers["If-Range"]?.trimmingCharacters(in: .whitespaces) else { return true }
        if condition.hasPrefix("\"") { return stored.headers["ETag"] == condition }
        if condition.hasPrefix("W/") { return false }
        return stored.headers["Last-Modified"] == condition
    }

    private static func gatewayTimeout(_ status: HTTPCacheStatus) -> HTTPResponse {
        HTTPResponse(status: 504, headers: ["Content-Length": "0", "Cache-Control": "no-store", "Cache-Status": status.value])
    }

    // MARK: - The origin

    /// Validates a stale hit with a conditional `GET`, then answers with what it gives. In a
    /// shared cache the conditional request carries none of the client's credentials.
    private func validate<Forwarded: HTTPCacheOriginResponse>(
        _ hit: HTTPCache<Storage>.Hit, _ request: HTTPCacheRequest, servableOnError: Bool, origin: (HTTPCacheRequest) async throws -> Forwarded
    ) async -> Answer<Forwarded> {
        let policy = cache.policy
        var conditional = HTTPCacheRequest(method: "GET", uri: request.uri, headers: request.headers)
        conditional.headers.removeAll { name in
            let lowered = name.lowercased()
            return ConditionalFields.names.contains(lowered) || ConditionalFields.bodyFraming.contains(lowered)
                || (policy.kind == .shared && HTTPCachePolicy.credentialFields.contains(lowered))
        }
        for field in policy.validators(of: hit.stored) ?? HTTPHeaderFields() {
            conditional.headers.add(name: field.name, value: field.value)
        }
        let requestTime = cache.clock.now()
        // Fresh, yet validated: the request asked for it (RFC 9211's `fwd=request`).
        let reason = policy.isValidatedOnRequest(hit.stored, at: requestTime) ? "request" : "stale"
        var response: Forwarded
        do {
            response = try await origin(conditional)
        } catch {
            if servableOnError || policy.mayServeStaleWhenDisconnected(hit.stored) {
                logger.info("Serving a stale \(Redaction.redactingURL(request.uri)): revalidating it failed: \(error)")
                let detail = servableOnError ? "stale-if-error" : "disconnected"
                return .fromCache(serve(hit.stored, body: hit.body, for: request, status: HTTPCacheStatus(hit: true, detail: detail)))
            }
            return .failed(error, status: HTTPCacheStatus(forward: reason), gatewayTimeout: true)
        }
        let responseTime = cache.clock.now()
        if response.status == 304 {
            do {
                if let updated = try await cache.update(hit, with: response.headers, requestTime: requestTime, responseTime: responseTime) {
                    return .fromCache(serve(updated, body: hit.body, for: request, status: HTTPCacheStatus(forward: reason, forwardStatus: 304)))
                }
            } catch {
                logger.warning("Updating \(Redaction.redactingURL(request.uri)) after a 304 failed: \(error)")
            }
            // The 304 is for another response than the one stored: ask again, unconditionally.
            var unconditional = request
            unconditional.headers.removeAll { ConditionalFields.names.contains($0.lowercased()) }
            return await forward(unconditional, status: HTTPCacheStatus(forward: reason), origin: origin)
        }
        if servableOnError, [500, 502, 503, 504].contains(response.status) {
            return .fromCache(serve(hit.stored, body: hit.body, for: request, status: HTTPCacheStatus(hit: true, detail: "stale-if-error")))
        }
        let status = await finish(
            &response, sent: conditional, for: request, requestTime: requestTime, responseTime: responseTime,
            status: HTTPCacheStatus(forward: reason, forwardStatus: response.status), storing: policy.mayBeReplaced(hit.stored, at: requestTime)
        )
        return .forwarded(response, status: status)
    }

    /// Revalidates a hit in the background, unless that entry already is being revalidated.
    private func revalidateInBackground<Forwarded: HTTPCacheOriginResponse>(
        _ hit: HTTPCache<Storage>.Hit, _ request: HTTPCacheRequest, origin: @escaping @Sendable (HTTPCacheRequest) async throws -> Forwarded
    ) {
        guard revalidating.withLock({ $0.insert(hit.key).inserted }) else { return }
        let id = nextTask.wrappingAdd(1, ordering: .relaxed).oldValue
        var plain = HTTPCacheRequest(method: "GET", uri: request.uri, headers: request.headers)
        plain.headers.removeAll { ["range", "if-range"].contains($0.lowercased()) }
        let task = Task {
            _ = await self.validate(hit, plain, servableOnError: false, origin: origin)
            self.revalidating.withLock { _ = $0.remove(hit.key) }
            self.background.withLock { background in
                // It may end before it was recorded: then it is never recorded.
                if background.tasks.removeValue(forKey: id) == nil { background.endedEarly.insert(id) }
            }
        }
        background.withLock { background in
            if background.endedEarly.remove(id) == nil { background.tasks[id] = task }
        }
    }

    /// Sends `request` to the origin (a `HEAD` as a `GET` where configured), then stores,
    /// invalidates and answers.
    private func forward<Forwarded: HTTPCacheOriginResponse>(
        _ request: HTTPCacheRequest, status: HTTPCacheStatus, origin: (HTTPCacheRequest) async throws -> Forwarded
    ) async -> Answer<Forwarded> {
        var sent = request
        if request.method == "HEAD", configuration.fetchesHEADAsGET { sent.method = "GET" }
        let requestTime = cache.clock.now()
        var response: Forwarded
        do {
            response = try await origin(sent)
        } catch {
            return .failed(error, status: status, gatewayTimeout: false)
        }
        var status = status
        status.forwardStatus = response.status
        status = await finish(&response, sent: sent, for: request, requestTime: requestTime, responseTime: cache.clock.now(), status: status)
        return .forwarded(response, status: status)
    }

    /// Stores an origin's answer to `sent` if it may be (and `storing`), and invalidates what an
    /// unsafe request changed.
    /// - Returns: `status`, with `stored` when it was.
    private func finish<Forwarded: HTTPCacheOriginResponse>(
        _ response: inout Forwarded, sent: HTTPCacheRequest, for request: HTTPCacheRequest, requestTime: Date, responseTime: Date,
        status: HTTPCacheStatus, storing: Bool = true
    ) async -> HTTPCacheStatus {
        var status = status
        let fields = response.headers
        do {
            let head = HTTPResponse(status: response.status, headers: fields)
            if sent.method == "GET", storing, case .store = cache.policy.storability(of: head, for: sent),
               let body = try await response.body(upTo: configuration.maximumStoredBodySize) {
                // Stored as the answer to what was sent: its fields select the variant.
                let stored = try await cache.store(HTTPResponse(status: head.status, headers: fields, body: body), for: sent, requestTime: requestTime, responseTime: responseTime)
                status.stored = stored != nil
            }
            try await cache.invalidate(after: request, status: response.status, headers: fields)
        } catch {
            logger.warning("Keeping the response for \(sent.method) \(Redaction.redactingURL(request.uri)) failed: \(error)")
        }
        return status
    }
}

/// A response from an origin, as ``HTTPCacheFrontEnd`` sees it: its status and fields at once, its
/// body only when it is to be stored.
public protocol HTTPCacheOriginResponse: Sendable {
    /// The status code.
    var status: Int { get }
    /// The header fields as the origin sent them.
    var headers: HTTPHeaderFields { get }
    /// The whole body, when it is at most `limit` bytes; `nil` when it is larger. Called at most
    /// once, only for a response that may be stored; the response sends the same bytes afterwards.
    /// - Parameter limit: The most bytes to collect.
    /// - Returns: The body, or `nil`.
    /// - Throws: The origin's error while the body was read.
    mutating func body(upTo limit: Int) async throws -> Data?
}

/// One `Cache-Status` member (RFC 9211) for this cache, `haneke`: `haneke; hit; ttl=50`,
/// `haneke; fwd=uri-miss; fwd-status=200; stored`.
public struct HTTPCacheStatus: Sendable, Hashable {
    /// Whether a stored response answered.
    public var hit = false
    /// Why the request went to the origin (`uri-miss`, `vary-miss`, `stale`, `request`, `method`).
    public var forward: String?
    /// The status the origin answered.
    public var forwardStatus: Int?
    /// The response's freshness left, in seconds (negative when stale).
    public var ttl: Int?
    /// Whether the origin's answer was stored.
    public var stored = false
    /// More about what happened (`max-stale`, `stale-if-error`, `only-if-cached`, …).
    public var detail: String?

    /// A hit.
    /// - Parameters:
    ///   - hit: Whether a stored response answered.
    ///   - detail: More about it; none by default.
    public init(hit: Bool, detail: String? = nil) {
        self.hit = hit
        self.detail = detail
    }

    /// A request forwarded to the origin.
    /// - Parameters:
    ///   - forward: Why.
    ///   - forwardStatus: What the origin answered; none by default.
    ///   - detail: More about it; none by default.
    public init(forward: String, forwardStatus: Int? = nil, detail: String? = nil) {
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.detail = detail
    }

    /// The field's value.
    public var value: String {
        var parts = ["haneke"]
        if hit { parts.append("hit") }
        if let forward { parts.append("fwd=\(forward)") }
        if let forwardStatus { parts.append("fwd-status=\(forwardStatus)") }
        if let ttl { parts.append("ttl=\(ttl)") }
        if stored { parts.append("stored") }
        if let detail { parts.append("detail=\(detail)") }
        return parts.joined(separator: "; ")
    }
}

/// Single byte ranges (RFC 9110 §14.1.2) of a stored body.
enum ByteRanges {
    /// The first and last byte of a `Range: bytes=…` with one satisfiable range, or `nil` (several
    /// ranges, another unit, or none satisfiable: the whole response is sent).
    static func single(_ value: String, length: Int) -> (Int, Int)? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes="), length > 0 else { return nil }
        let spec = trimmed.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        func number(_ text: String) -> Int? { text.isEmpty || !text.allSatisfy(\.isASCII) || !text.allSatisfy(\.isNumber) ? nil : Int(text) }
        if first.isEmpty {
            guard let suffix = number(last), suffix > 0 else { return nil }
            return (max(0, length - suffix), length - 1)
        }
        guard let lower = number(first), lower < length else { return nil }
        if last.isEmpty { return (lower, length - 1) }
        guard let upper = number(last), upper >= lower else { return nil }
        return (lower, min(upper, length - 1))
    }
}

/// The request fields that make a request conditional (RFC 9110 §13.1).
enum ConditionalFields {
    static let names: Set<String> = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range"]
    /// The fields that describe a request's body, dropped when a request is sent without one.
    static let bodyFraming: Set<String> = ["content-length", "transfer-encoding", "expect"]
}
