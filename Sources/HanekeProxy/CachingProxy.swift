package import Foundation
package import HTTPCaching
package import HanekeProtocols
package import Logging
package import NIOCore
import NIOHTTP1
import Synchronization

/// A caching reverse proxy's side of the wire: each request is answered through an
/// ``HTTPCacheFrontEnd`` (the rules: RFC 9111, RFC 5861, `Cache-Status`), whose origin is the
/// upstream server, at most ``Configuration-swift.struct/maximumConcurrentFetches`` exchanges at
/// once.
///
/// The key is what reaches the upstream: the fields sent are those ``OutgoingFields`` makes
/// (hop-by-hop fields dropped, the upstream's `Host`, `Via`, `X-Forwarded-For` and `Forwarded`
/// written by the proxy, and the fields that rewrite a request at an origin — `X-Forwarded-Host`,
/// `X-Original-URL`, `X-HTTP-Method-Override`, … — dropped unless the operator trusts or keys
/// them), and a stored variant records them; a `GET` or `HEAD` goes without a body, and a `HEAD`
/// miss as a `GET`. `CONNECT` and `TRACE` are answered `405`, `OPTIONS *` by the proxy itself;
/// a `502` or `504` says nothing of the upstream, whose error goes to the log.
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
        /// `[]` by default: request fields from ``UntrustedFields/names`` that reach the upstream
        /// as the client sent them although they are not in the key (lower-case names): those a
        /// trusted front of the proxy writes. With `x-forwarded-for` (or `forwarded`) the peer is
        /// appended to the client's value instead of replacing it.
        package var trustedFields: Set<String> = []
        /// `[]` by default: request fields that reach the upstream and select a stored response, as
        /// if every response named them in `Vary` (lower-case names).
        package var keyedFields: [String] = []

        /// Creates the default limits.
        package init() {}
    }

    /// The upstream's origin as cache keys start: `http://host:port`.
    package let upstreamOrigin: String
    /// The rules, and the cache they keep.
    package let frontEnd: HTTPCacheFrontEnd<Storage>
    private let upstream: UpstreamClient
    /// How a client's fields become those sent upstream.
    private let outgoing: OutgoingFields
    /// Reads the memory layer in front of the cache's store without a suspension, if there is one.
    private let peek: (@Sendable (String) -> StoreEntry<Data>?)?
    private let gate: FetchGate
    private let logger: Logger

    /// The cache.
    package var cache: HTTPCache<Storage> { frontEnd.cache }

    /// Creates a proxy in front of `upstream`.
    /// - Parameters:
    ///   - upstream: The upstream's origin: an `http` URL with a host and maybe a port (a path is ignored).
    ///   - cache: The cache (its policy should be a shared cache's, unless the proxy serves one user).
    ///   - group: The event loops for upstream connections.
    ///   - configuration: The limits.
    ///   - peek: Reads the memory layer in front of the cache's store synchronously (a
    ///     `MemoryStore`'s `entry(forKey:)`), so that fresh hits are answered on the connection's
    ///     event loop; `nil` (the default) when there is none.
    ///   - budget: The budget of bytes in flight that upstream bodies are collected in, shared
    ///     with the server's connections; `nil` (the default) for one of its own of
    ///     ``ProxyServer/Limits-swift.struct/memoryBudget``'s default.
    ///   - logger: Where failures are logged.
    /// - Throws: `StoreError` with code `invalidKey` when `upstream` is not an `http` URL with a host.
    package init(
        upstream: URL, cache: HTTPCache<Storage>, group: any EventLoopGroup, configuration: Configuration = Configuration(),
        peek: (@Sendable (String) -> StoreEntry<Data>?)? = nil, budget: MemoryBudget? = nil, logger: Logger = Logger(label: "haneke.proxy")
    ) throws {
        guard upstream.scheme == "http", let host = upstream.host, !host.isEmpty else {
            throw StoreError(.invalidKey, "The upstream \(Redaction.redactingURL(upstream.absoluteString)) is not an http URL with a host (https upstreams are not supported)")
        }
        let port = upstream.port ?? 80
        let authority = upstream.port.map { "\(host):\($0)" } ?? host
        self.upstreamOrigin = "http://\(authority)"
        var cache = cache
        cache.keyedFields = configuration.keyedFields.map { $0.lowercased() }
        var frontEndConfiguration = HTTPCacheFrontEnd<Storage>.Configuration()
        frontEndConfiguration.maximumStoredBodySize = configuration.maximumBodySize
        self.frontEnd = HTTPCacheFrontEnd(cache: cache, configuration: frontEndConfiguration, logger: logger)
        self.outgoing = OutgoingFields(
            authority: authority, trusted: Set(configuration.trustedFields.map { $0.lowercased() }).union(cache.keyedFields)
        )
        self.upstream = UpstreamClient(
            host: host, port: port, authority: authority, group: group, maximumBodySize: configuration.maximumBodySize,
            timeout: configuration.upstreamTimeout, maximumIdleConnections: configuration.maximumIdleConnections,
            budget: budget ?? MemoryBudget(limit: ProxyServer.Limits().memoryBudget)
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
        await frontEnd.waitForRevalidations()
    }

    // MARK: - Answering

    /// Answers one request.
    /// - Parameter request: The client's request.
    /// - Returns: The response to send, with its `Cache-Status`.
    package func respond(to request: ProxyRequest) async -> ProxyResponse {
        if let answer = Self.answeredByTheProxy(request) { return answer }
        let cacheRequest = self.cacheRequest(for: request)
        let body = Self.isBodiless(request) ? nil : request.body
        let answer = await frontEnd.respond(
            to: cacheRequest, origin: { try await self.exchange($0, body: body) }, background: { try await self.exchange($0, body: nil) }
        )
        switch answer {
        case .fromCache(let response):
            return ProxyResponse(response)
        case .forwarded(let response, let status):
            return forwarded(response, to: request.method, status: status)
        case .failed(let error, let status, let gatewayTimeout):
            return badGateway(error, cacheRequest, status, gatewayTimeout: gatewayTimeout)
        }
    }

    /// Answers a request at once from the memory layer, when a fresh response there (or one the
    /// request accepts stale) answers it: no suspension, so the server can call it on the
    /// connection's event loop. `nil` otherwise: ask ``respond(to:)``.
    /// - Parameter request: The client's request.
    /// - Returns: The response, or `nil`.
    package func respondAtOnce(to request: ProxyRequest) -> ProxyResponse? {
        guard let peek, Self.isBodiless(request) else { return nil }
        return frontEnd.respondAtOnce(to: cacheRequest(for: request, lookupOnly: true), reading: peek).map(ProxyResponse.init)
    }

    /// The request as the cache and the upstream see it: the client's method, the upstream's URI
    /// of its path and query, and the fields ``OutgoingFields`` makes (for a lookup alone, the
    /// client's own where ``OutgoingFields/fieldsForLookup(of:)`` allows, without a copy).
    private func cacheRequest(for request: ProxyRequest, lookupOnly: Bool = false) -> HTTPCacheRequest {
        let fields = (lookupOnly ? outgoing.fieldsForLookup(of: request) : nil)
            ?? outgoing.fields(for: request, bodiless: Self.isBodiless(request))
        return HTTPCacheRequest(method: request.method, uri: upstreamOrigin + Self.pathAndQuery(of: request.target), headers: fields)
    }

    /// Whether a request goes upstream without a body: a `GET` or a `HEAD`.
    private static func isBodiless(_ request: ProxyRequest) -> Bool {
        request.method == "GET" || request.method == "HEAD"
    }

    /// The answer the proxy gives itself, without the upstream: `405` to `CONNECT` and `TRACE`
    /// (no tunnel, no echo of a request's fields), and to `OPTIONS *` the methods it passes on.
    static func answeredByTheProxy(_ request: ProxyRequest) -> ProxyResponse? {
        let allow = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
        if request.method == "CONNECT" || request.method == "TRACE" {
            let text = "\(request.method) is not allowed through this proxy\n"
            let headers: HTTPHeaderFields = [
                "Allow": allow, "Content-Type": "text/plain; charset=utf-8", "Content-Length": String(text.utf8.count), "Cache-Control": "no-store",
            ]
            return ProxyResponse(status: 405, headers: headers, body: ByteBuffer(string: text), interim: [], closesConnection: request.method == "CONNECT")
        }
        if request.method == "OPTIONS", request.target == "*" {
            return ProxyResponse(status: 200, headers: ["Allow": allow, "Content-Length": "0"], body: ByteBuffer(), interim: [])
        }
        return nil
    }

    /// An upstream response as the client gets it: without hop-by-hop fields, with a `Date`, its
    /// length (a `HEAD` fetched as a `GET` is told the `GET`'s), its `Cache-Status`, and no body
    /// for `HEAD`, `204` and `304`.
    private func forwarded(_ response: UpstreamResponse, to clientMethod: String, status: HTTPCacheStatus) -> ProxyResponse {
        let code = Int(response.head.status.code)
        var headers = HTTPCachePolicy.withoutHopByHopFields(response.headers)
        if !headers.contains("Date") { headers.add(name: "Date", value: HTTPDate.format(cache.clock.now())) }
        let framed = code != 204 && code != 304
        if framed { headers.replaceOrAdd(name: "Content-Length", value: String(response.body.readableBytes)) }
        headers.add(name: "Cache-Status", value: status.value)
        let hasBody = framed && clientMethod != "HEAD"
        return ProxyResponse(status: code, headers: headers, body: hasBody ? response.body : ByteBuffer(), interim: response.interim)
    }

    /// One upstream exchange within the gate: `request` as the front end sends it (its URI's path
    /// and query as the target), with `body` framed by its length.
    private func exchange(_ request: HTTPCacheRequest, body: ProxyRequestBody?) async throws -> UpstreamResponse {
        var headers = request.headers
        if let body {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        } else if ["GET", "HEAD"].contains(request.method) {
            headers.remove(name: "Content-Length")
        } else {
            headers.replaceOrAdd(name: "Content-Length", value: "0")
        }
        let target = request.uri.hasPrefix(upstreamOrigin) ? String(request.uri.dropFirst(upstreamOrigin.count)) : Self.pathAndQuery(of: request.uri)
        let head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(named: request.method), uri: target.isEmpty ? "/" : target, headers: headers.nio)
        await gate.enter()
        defer { gate.leave() }
        return try await upstream.send(head, body: body)
    }

    /// The path and query of a request target (origin-form as is; absolute-form without its origin).
    static func pathAndQuery(of target: String) -> String {
        guard !target.hasPrefix("/"), let components = URLComponents(string: target), components.host != nil else {
            return target.isEmpty ? "/" : target
        }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return components.percentEncodedQuery.map { path + "?" + $0 } ?? path
    }

    /// `502` (or `504` past the deadline, or for a stored response that must not be served stale;
    /// `503` when the body did not fit the budget of bytes in flight) with a fixed text: the cause, which may name the upstream's address, goes to the log only.
    private func badGateway(_ error: any Error, _ request: HTTPCacheRequest, _ status: HTTPCacheStatus, gatewayTimeout: Bool) -> ProxyResponse {
        var status = status
        let (timedOut, overBudget) = switch error as? UpstreamFailure {
        case .timedOut: (true, false)
        case .overBudget: (false, true)
        default: (false, false)
        }
        status.detail = timedOut ? "upstream-timeout" : "upstream-error"
        let answer = overBudget ? 503 : timedOut || gatewayTimeout ? 504 : 502
        logger.error("\(request.method) \(Redaction.redactingURL(request.uri)) answered \(answer): \(error)")
        let text = switch answer {
        case 503: "The proxy is busy: too many bytes in flight. Try again shortly.\n"
        case 504: "The upstream server did not answer in time.\n"
        default: "The upstream server could not be reached.\n"
        }
        var headers: HTTPHeaderFields = [
            "Content-Type": "text/plain; charset=utf-8", "Content-Length": String(text.utf8.count),
            "Cache-Control": "no-store", "Cache-Status": status.value,
        ]
        if overBudget { headers.add(name: "Retry-After", value: "1") }
        return ProxyResponse(status: answer, headers: headers, body: ByteBuffer(string: text), interim: [])
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
