package import Foundation
package import HTTPCaching
package import HanekeProtocols
package import Logging
package import NIOCore
import NIOHTTP1
import Synchronization

/// The decisions of a caching reverse proxy: each request is answered from the cache, revalidated
/// with the upstream, or forwarded to it, by an ``HTTPCachePolicy`` (RFC 9111, RFC 5861), and
/// each response says what happened in a `Cache-Status` field (RFC 9211).
///
/// - Stored responses are served with their `Age`; a request's own `If-None-Match` or
///   `If-Modified-Since` is answered `304` from the cache; a `HEAD` is answered by a stored `GET`,
///   and a single byte range by a stored whole `200` (`206`).
/// - A stale response is revalidated with a conditional request (`If-None-Match`,
///   `If-Modified-Since`); a `304` updates it. Within `stale-while-revalidate` it is served at once
///   and revalidated in the background, once per entry at a time; within `stale-if-error` it is
///   served when the upstream fails or answers `500`, `502`, `503` or `504`.
/// - A successful unsafe request (`POST`, `PUT`, `DELETE`, …) invalidates its target and the
///   same-origin `Location` and `Content-Location`.
/// - Everything else goes to the upstream as it came, without hop-by-hop fields and with the
///   upstream's `Host`; at most ``Configuration-swift.struct/maximumConcurrentFetches`` at once.
package final class CachingProxy<Storage: Store>: Sendable where Storage.Key == String, Storage.Value == Data {
    /// The proxy's limits.
    package struct Configuration: Sendable, Hashable {
        /// `64 MiB` by default: the largest upstream response body; a larger one answers `502`.
        package var maximumBodySize = 64 << 20
        /// `60 seconds` by default: the longest an upstream exchange may take; past it, `504`.
        package var upstreamTimeout = Duration.seconds(60)
        /// `64` by default: the most upstream exchanges at once; more wait their turn.
        package var maximumConcurrentFetches = 64
        /// `64` by default: the most idle upstream connections kept for reuse.
        package var maximumIdleConnections = 64

        /// Creates the default limits.
        package init() {}
    }

    /// The upstream's origin as cache keys start: `http://host:port`.
    package let upstreamOrigin: String
    /// The cache.
    package let cache: HTTPCache<Storage>
    private let upstream: UpstreamClient
    /// Reads the memory layer in front of the cache's store without a suspension, if there is one.
    private let peek: (@Sendable (String) -> StoreEntry<Data>?)?
    private let gate: FetchGate
    private let logger: Logger
    /// The entries being revalidated in the background.
    private let revalidating = Mutex<Set<String>>([])
    private let background = Mutex(Background())

    /// The background revalidations running, and those that ended before they were recorded.
    private struct Background {
        var tasks: [Int: Task<Void, Never>] = [:]
        var endedEarly: Set<Int> = []
    }
    private let nextTask = Atomic<Int>(0)

    /// Creates a proxy in front of `upstream`.
    /// - Parameters:
    ///   - upstream: The upstream's origin: an `http` URL with a host and maybe a port (a path is ignored).
    ///   - cache: The cache (its policy should be a shared cache's, unless the proxy serves one user).
    ///   - group: The event loops for upstream connections.
    ///   - configuration: The limits.
    ///   - peek: Reads the memory layer in front of the cache's store synchronously (a
    ///     `MemoryStore`'s `entry(forKey:)`), so that fresh hits are answered on the connection's
    ///     event loop; `nil` (the default) when there is none.
    ///   - logger: Where failures are logged.
    /// - Throws: `StoreError` with code `invalidKey` when `upstream` is not an `http` URL with a host.
    package init(
        upstream: URL, cache: HTTPCache<Storage>, group: any EventLoopGroup, configuration: Configuration = Configuration(),
        peek: (@Sendable (String) -> StoreEntry<Data>?)? = nil, logger: Logger = Logger(label: "haneke.proxy")
    ) throws {
        guard upstream.scheme == "http", let host = upstream.host, !host.isEmpty else {
            throw StoreError(.invalidKey, "The upstream \(upstream.absoluteString) is not an http URL with a host (https upstreams are not supported)")
        }
        let port = upstream.port ?? 80
        let authority = upstream.port.map { "\(host):\($0)" } ?? host
        self.upstreamOrigin = "http://\(authority)"
        self.cache = cache
        self.upstream = UpstreamClient(
            host: host, port: port, authority: authority, group: group, maximumBodySize: configuration.maximumBodySize,
            timeout: configuration.upstreamTimeout, maximumIdleConnections: configuration.maximumIdleConnections
        )
        self.gate = FetchGate(limit: configuration.maximumConcurrentFetches)
        self.peek = peek
        self.logger = logger
    }

    /// Closes idle upstream connections and waits for background revalidations.
    package func shutdown() async {
        await waitForRevalidations()
        upstream.close()
    }

    /// Waits for the background revalidations started so far.
    package func waitForRevalidations() async {
        while true {
            let tasks = background.withLock { Array($0.tasks.values) }
            if tasks.isEmpty { return }
            for task in tasks { await task.value }
        }
    }

    // MARK: - Answering

    /// Answers one request.
    /// - Parameter request: The client's request.
    /// - Returns: The response to send, with its `Cache-Status`.
    package func respond(to request: ProxyRequest) async -> ProxyResponse {
        let cacheRequest = HTTPCacheRequest(method: request.method, uri: upstreamOrigin + Self.pathAndQuery(of: request.target), headers: request.headers)
        guard request.method == "GET" || request.method == "HEAD" else {
            return await forward(request, cacheRequest, status: CacheStatus(forward: "method"))
        }
        let hit: HTTPCache<Storage>.Hit?
        do {
            hit = try await cache.lookup(cacheRequest)
        } catch {
            logger.warning("Reading the cache for \(cacheRequest.uri) failed: \(error)")
            hit = nil
        }
        let onlyIfCached = CacheControl(request.headers).onlyIfCached
        guard let hit else {
            if onlyIfCached { return Self.gatewayTimeout(CacheStatus(forward: "uri-miss", detail: "only-if-cached")) }
            return await forward(request, cacheRequest, status: CacheStatus(forward: "uri-miss"))
        }
        switch hit.reuse {
        case .fresh:
            return serve(hit.stored, body: hit.body, for: cacheRequest, status: CacheStatus(hit: true))
        case .staleAccepted:
            return serve(hit.stored, body: hit.body, for: cacheRequest, status: CacheStatus(hit: true, detail: "max-stale"))
        case .staleWhileRevalidate:
            revalidateInBackground(hit, request, cacheRequest)
            return serve(hit.stored, body: hit.body, for: cacheRequest, status: CacheStatus(hit: true, detail: "stale-while-revalidate"))
        case .validate(let servableOnError):
            if onlyIfCached { return Self.gatewayTimeout(CacheStatus(forward: "stale", detail: "only-if-cached")) }
            return await validate(hit, request, cacheRequest, servableOnError: servableOnError)
        case .unusable:
            if onlyIfCached { return Self.gatewayTimeout(CacheStatus(forward: "vary-miss", detail: "only-if-cached")) }
            return await forward(request, cacheRequest, status: CacheStatus(forward: "vary-miss"))
        }
    }

    /// Answers a request at once from the memory layer, when a fresh response there (or one the
    /// request accepts stale) answers it: no suspension, so the server can call it on the
    /// connection's event loop. `nil` otherwise: ask ``respond(to:)``.
    /// - Parameter request: The client's request.
    /// - Returns: The response, or `nil`.
    package func respondAtOnce(to request: ProxyRequest) -> ProxyResponse? {
        guard let peek, request.method == "GET" || request.method == "HEAD" else { return nil }
        let cacheRequest = HTTPCacheRequest(method: request.method, uri: upstreamOrigin + Self.pathAndQuery(of: request.target), headers: request.headers)
        guard let hit = cache.lookup(cacheRequest, reading: peek) else { return nil }
        switch hit.reuse {
        case .fresh:
            return serve(hit.stored, body: hit.body, for: cacheRequest, status: CacheStatus(hit: true))
        case .staleAccepted:
            return serve(hit.stored, body: hit.body, for: cacheRequest, status: CacheStatus(hit: true, detail: "max-stale"))
        case .staleWhileRevalidate, .validate, .unusable:
            return nil
        }
    }

    /// A stored response served for `request`: `304` when the request's own conditions hold for
    /// it, a byte range of it for a single `Range`, no body for `HEAD`.
    private func serve(_ stored: StoredHTTPResponse, body: Data, for request: HTTPCacheRequest, status: CacheStatus) -> ProxyResponse {
        let now = cache.clock.now()
        var headers = cache.policy.servedHeaders(of: stored, at: now)
        var status = status
        status.ttl = Int((cache.policy.freshnessLifetime(of: stored) - cache.policy.currentAge(of: stored, at: now)).rounded(.down))
        if cache.policy.requestIsNotModified(request, by: stored) {
            var notModified = HTTPCachePolicy.notModifiedHeaders(from: headers)
            notModified.add(name: "Cache-Status", value: status.value)
            return ProxyResponse(status: 304, headers: notModified, body: ByteBuffer(), interim: [])
        }
        headers.add(name: "Cache-Status", value: status.value)
        if request.method == "GET", stored.status == 200, let range = request.headers["Range"], Self.ifRangeHolds(request, for: stored),
           let (lower, upper) = ByteRanges.single(range, length: body.count) {
            headers.remove(name: "Content-Length")
            headers.replaceOrAdd(name: "Content-Range", value: "bytes \(lower)-\(upper)/\(body.count)")
            headers.add(name: "Content-Length", value: String(upper - lower + 1))
            return ProxyResponse(status: 206, headers: headers, body: ByteBuffer(bytes: body[body.startIndex + lower...body.startIndex + upper]), interim: [])
        }
        headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        let sent = request.method == "HEAD" || stored.status == 204 ? ByteBuffer() : ByteBuffer(bytes: body)
        return ProxyResponse(status: stored.status, headers: headers, body: sent, interim: [])
    }

    /// Whether a request's `If-Range` (if any) names the stored response: its strong entity tag, or
    /// its `Last-Modified` exactly (RFC 9110 §13.1.5). Otherwise the whole response is sent.
    static func ifRangeHolds(_ request: HTTPCacheRequest, for stored: StoredHTTPResponse) -> Bool {
        guard let condition = request.headers["If-Range"]?.trimmingCharacters(in: .whitespaces) else { return true }
        if condition.hasPrefix("\"") { return stored.headers["ETag"] == condition }
        if condition.hasPrefix("W/") { return false }
        return stored.headers["Last-Modified"] == condition
    }

    /// Revalidates a stale hit with a conditional request, then serves what it gives.
    private func validate(_ hit: HTTPCache<Storage>.Hit, _ request: ProxyRequest, _ cacheRequest: HTTPCacheRequest, servableOnError: Bool) async -> ProxyResponse {
        var conditional = request
        // A HEAD is validated with a HEAD (its answer is never stored), anything else with a GET.
        conditional.method = request.method == "HEAD" ? "HEAD" : "GET"
        conditional.body = nil
        conditional.headers.removeAll { ConditionalFields.names.contains($0.lowercased()) || ConditionalFields.bodyFraming.contains($0.lowercased()) }
        for field in cache.policy.validators(of: hit.stored) ?? HTTPHeaderFields() {
            conditional.headers.add(name: field.name, value: field.value)
        }
        let requestTime = cache.clock.now()
        let response: UpstreamResponse
        do {
            response = try await exchange(conditional)
        } catch {
            if servableOnError || cache.policy.mayServeStaleWhenDisconnected(hit.stored) {
                logger.info("Serving a stale \(cacheRequest.uri): revalidating it failed: \(error)")
                return serve(hit.stored, body: hit.body, for: cacheRequest, status: CacheStatus(hit: true, detail: servableOnError ? "stale-if-error" : "disconnected"))
            }
            // A response that must not be served stale, and no origin: 504 (RFC 9111 §5.2.2.2).
            return Self.badGateway(error, CacheStatus(forward: "stale"), status: 504)
        }
        let responseTime = cache.clock.now()
        let status = Int(response.head.status.code)
        if status == 304 {
            do {
                if let updated = try await cache.update(hit, with: HTTPHeaderFields(response.head.headers), requestTime: requestTime, responseTime: responseTime) {
                    return serve(updated, body: hit.body, for: cacheRequest, status: CacheStatus(forward: "stale", forwardStatus: 304))
                }
            } catch {
                logger.warning("Updating \(cacheRequest.uri) after a 304 failed: \(error)")
            }
            // The 304 is for another response than the one stored: ask again, unconditionally.
            var unconditional = request
            unconditional.headers.removeAll { ConditionalFields.names.contains($0.lowercased()) }
            return await forward(unconditional, cacheRequest, status: CacheStatus(forward: "stale"))
        }
        if servableOnError, [500, 502, 503, 504].contains(status) {
            return serve(hit.stored, body: hit.body, for: cacheRequest, status: CacheStatus(hit: true, detail: "stale-if-error"))
        }
        return await finish(response, for: conditional, clientMethod: request.method, cacheRequest, requestTime: requestTime, responseTime: responseTime, status: CacheStatus(forward: "stale", forwardStatus: status))
    }

    /// Revalidates a hit in the background, unless that entry already is being revalidated.
    private func revalidateInBackground(_ hit: HTTPCache<Storage>.Hit, _ request: ProxyRequest, _ cacheRequest: HTTPCacheRequest) {
        guard revalidating.withLock({ $0.insert(hit.key).inserted }) else { return }
        let id = nextTask.wrappingAdd(1, ordering: .relaxed).oldValue
        var plain = request
        plain.method = "GET"
        plain.headers.remove(name: "Range")
        plain.headers.remove(name: "If-Range")
        let task = Task {
            _ = await self.validate(hit, plain, HTTPCacheRequest(uri: cacheRequest.uri, headers: plain.headers), servableOnError: false)
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

    /// Sends `request` upstream as it came, then stores, invalidates and answers.
    private func forward(_ request: ProxyRequest, _ cacheRequest: HTTPCacheRequest, status: CacheStatus) async -> ProxyResponse {
        let requestTime = cache.clock.now()
        let response: UpstreamResponse
        do {
            response = try await exchange(request)
        } catch {
            return Self.badGateway(error, status)
        }
        var status = status
        status.forwardStatus = Int(response.head.status.code)
        return await finish(response, for: request, clientMethod: request.method, cacheRequest, requestTime: requestTime, responseTime: cache.clock.now(), status: status)
    }

    /// Stores an upstream response if it may be, invalidates what an unsafe request changed, and
    /// makes the response to send.
    private func finish(
        _ response: UpstreamResponse, for request: ProxyRequest, clientMethod: String, _ cacheRequest: HTTPCacheRequest,
        requestTime: Date, responseTime: Date, status: CacheStatus
    ) async -> ProxyResponse {
        var status = status
        let code = Int(response.head.status.code)
        let fields = HTTPHeaderFields(response.head.headers)
        let body = Data(response.body.readableBytesView)
        do {
            if request.method == "GET" {
                // Stored as the answer to what was sent (a stale HEAD is revalidated with a GET).
                let sent = HTTPCacheRequest(method: request.method, uri: cacheRequest.uri, headers: cacheRequest.headers)
                let stored = try await cache.store(HTTPResponse(status: code, headers: fields, body: body), for: sent, requestTime: requestTime, responseTime: responseTime)
                status.stored = stored != nil
            }
            try await cache.invalidate(after: cacheRequest, status: code, headers: fields)
        } catch {
            logger.warning("Keeping the response for \(request.method) \(cacheRequest.uri) failed: \(error)")
        }
        var headers = HTTPCachePolicy.withoutHopByHopFields(fields)
        if !headers.contains("Date") { headers.add(name: "Date", value: HTTPDate.format(responseTime)) }
        let hasBody = clientMethod != "HEAD" && code != 204 && code != 304
        if hasBody { headers.replaceOrAdd(name: "Content-Length", value: String(response.body.readableBytes)) }
        headers.add(name: "Cache-Status", value: status.value)
        return ProxyResponse(status: code, headers: headers, body: hasBody ? response.body : ByteBuffer(), interim: response.interim)
    }

    /// One upstream exchange within the gate: the request without hop-by-hop fields, with the
    /// upstream's `Host`.
    private func exchange(_ request: ProxyRequest) async throws -> UpstreamResponse {
        var headers = HTTPCachePolicy.withoutHopByHopFields(request.headers)
        headers.replaceOrAdd(name: "Host", value: upstream.authority)
        headers.remove(name: "Expect")   // the body is here already: nothing to wait for
        headers.add(name: "Via", value: "1.1 haneke")
        if let body = request.body {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
        } else if ["GET", "HEAD"].contains(request.method) {
            headers.remove(name: "Content-Length")
        } else {
            headers.replaceOrAdd(name: "Content-Length", value: "0")
        }
        let head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(named: request.method), uri: Self.pathAndQuery(of: request.target), headers: headers.nio)
        await gate.enter()
        defer { gate.leave() }
        return try await upstream.send(head, body: request.body)
    }


    /// The path and query of a request target (origin-form as is; absolute-form without its origin).
    static func pathAndQuery(of target: String) -> String {
        guard !target.hasPrefix("/"), let components = URLComponents(string: target), components.host != nil else {
            return target.isEmpty ? "/" : target
        }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return components.percentEncodedQuery.map { path + "?" + $0 } ?? path
    }

    private static func badGateway(_ error: any Error, _ status: CacheStatus, status code: Int? = nil) -> ProxyResponse {
        var status = status
        let timedOut: Bool
        if case UpstreamFailure.timedOut = error { timedOut = true } else { timedOut = false }
        status.detail = timedOut ? "upstream-timeout" : "upstream-error"
        let answer = code ?? (timedOut ? 504 : 502)
        let text = "\(error)\n"
        let headers: HTTPHeaderFields = [
            "Content-Type": "text/plain; charset=utf-8", "Content-Length": String(text.utf8.count),
            "Cache-Control": "no-store", "Cache-Status": status.value,
        ]
        return ProxyResponse(status: answer, headers: headers, body: ByteBuffer(string: text), interim: [])
    }

    private static func gatewayTimeout(_ status: CacheStatus) -> ProxyResponse {
        let headers: HTTPHeaderFields = ["Content-Length": "0", "Cache-Control": "no-store", "Cache-Status": status.value]
        return ProxyResponse(status: 504, headers: headers, body: ByteBuffer(), interim: [])
    }
}

/// One `Cache-Status` member (RFC 9211) for this cache, `haneke`.
struct CacheStatus: Sendable {
    var hit = false
    var forward: String?
    var forwardStatus: Int?
    var ttl: Int?
    var stored = false
    var detail: String?

    init(hit: Bool, detail: String? = nil) {
        self.hit = hit
        self.detail = detail
    }

    init(forward: String, forwardStatus: Int? = nil, detail: String? = nil) {
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.detail = detail
    }

    var value: String {
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

/// A limit on concurrent upstream exchanges: those past it wait, in order.
final class FetchGate: Sendable {
    private struct State {
        var inside = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    func enter() async {
        let admitted = state.withLock { state in
            guard state.inside < limit else { return false }
            state.inside += 1
            return true
        }
        if admitted { return }
        await withCheckedContinuation { continuation in
            let admittedNow = state.withLock { state in
                guard state.inside < limit else {
                    state.waiting.append(continuation)
                    return false
                }
                state.inside += 1
                return true
            }
            if admittedNow { continuation.resume() }
        }
    }

    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.inside -= 1
                return nil
            }
            return state.waiting.removeFirst()   // the slot passes to the next in line
        }
        next?.resume()
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
