#if Hummingbird
public import HanekeProtocols
public import HTTPCaching
public import Hummingbird
public import Foundation
import HTTPTypes
import Logging
import NIOCore

/// Caches the responses of the routes after it by HTTP's rules for a shared cache (RFC 9111): a
/// route says how long its response may be reused with `Cache-Control` (`public, max-age=60`,
/// `s-maxage`, `stale-while-revalidate`, `stale-if-error`, `Vary`, …), and the middleware answers
/// later requests from the cache for that long, with `Age`, without running the route.
///
/// The shared-cache rules hold: `private` and `no-store` responses are never kept, nor a response
/// to a request with `Authorization` unless it says `public`, `s-maxage` or `must-revalidate`; a
/// request's `If-None-Match` or `If-Modified-Since` that holds for the stored response gets a `304`;
/// a stale response is run through the route again, and served stale instead when the route fails
/// and `stale-if-error` allows it; a successful `POST`, `PUT`, `PATCH` or `DELETE` removes what is
/// stored for its path. Each answer says what the cache did in `Cache-Status` (RFC 9211).
///
/// The responses are kept in any store of data that keeps expiries and metadata: a memory layer,
/// or memory in front of LZ4-compressed files so that they survive a restart.
///
/// ```swift
/// import Foundation
/// import Hummingbird
/// import HanekeHummingbird
/// import MemoryStore
///
/// let router = Router()
/// router.add(middleware: ResponseCacheMiddleware(storage: MemoryStore<String, Data>(costLimit: 64 << 20)))
/// router.get("report") { _, _ -> Response in
///     var response = Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "slow to make")))
///     response.headers[.cacheControl] = "public, max-age=60"
///     return response
/// }
/// ```
public struct ResponseCacheMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The cache of responses.
    public let cache: HTTPCache<AnyStore<String, Data>>
    /// The largest body kept, in bytes; a larger response is served and not kept.
    public let maximumBodySize: Int

    /// Creates the middleware.
    /// - Parameters:
    ///   - storage: Where the responses are kept (body as value, status and fields as metadata).
    ///   - policy: The rules; a shared cache's (`HTTPCachePolicy(kind: .shared)`) by default.
    ///   - clock: The clock that decides ages; the system's by default.
    ///   - maximumBodySize: The largest body kept; 8 MiB by default.
    public init(
        storage: some Store<String, Data>,
        policy: HTTPCachePolicy = HTTPCachePolicy(kind: .shared),
        clock: any StoreClock = SystemClock(),
        maximumBodySize: Int = 8 << 20
    ) {
        cache = HTTPCache(storage: storage.eraseToAnyStore(), policy: policy, clock: clock)
        self.maximumBodySize = maximumBodySize
    }

    /// Answers from the cache when a stored response may answer the request; otherwise runs the
    /// route and keeps its response if the rules allow.
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Its context.
    ///   - next: The rest of the chain (the route).
    /// - Returns: The response.
    /// - Throws: What the route throws, unless a stale response may be served instead.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let cacheRequest = HTTPCacheRequest(
            method: request.method.rawValue,
            uri: "http://" + (request.head.authority ?? "localhost") + request.uri.description,
            headers: HTTPHeaderFields(request.headers.map { ($0.name.rawName, $0.value) })
        )
        guard request.method == .get || request.method == .head else {
            let response = try await next(request, context)
            do {
                try await cache.invalidate(after: cacheRequest, status: response.status.code, headers: Self.fields(of: response))
            } catch {
                context.logger.warning("Could not remove the responses stored for \(cacheRequest.uri): \(error)")
            }
            return response
        }
        let hit: HTTPCache<AnyStore<String, Data>>.Hit?
        do {
            hit = try await cache.lookup(cacheRequest)
        } catch {
            context.logger.warning("Could not read the response stored for \(cacheRequest.uri): \(error)")
            hit = nil
        }
        guard let hit else { return try await forward(request, context, cacheRequest, next: next, status: "fwd=uri-miss") }
        switch hit.reuse {
        case .fresh:
            return serve(hit.stored, body: hit.body, for: cacheRequest, status: "hit")
        case .staleAccepted:
            return serve(hit.stored, body: hit.body, for: cacheRequest, status: "hit; detail=max-stale")
        case .unusable:
            return try await forward(request, context, cacheRequest, next: next, status: "fwd=vary-miss")
        case .staleWhileRevalidate, .validate:
            // The route is the origin: it runs again. A response it cannot make now is served
            // stale where the stored one allows it.
            let servableOnError: Bool
            if case .validate(let allowed) = hit.reuse { servableOnError = allowed } else { servableOnError = true }
            let response: Response
            do {
                response = try await forward(request, context, cacheRequest, next: next, status: "fwd=stale")
            } catch {
                guard servableOnError else { throw error }
                context.logger.info("Serving a stale \(cacheRequest.uri): the route failed: \(error)")
                return serve(hit.stored, body: hit.body, for: cacheRequest, status: "hit; detail=stale-if-error")
            }
            if servableOnError, [500, 502, 503, 504].contains(response.status.code) {
                return serve(hit.stored, body: hit.body, for: cacheRequest, status: "hit; detail=stale-if-error")
            }
            return response
        }
    }

    /// Runs the route, and keeps its response when the rules allow and its body is small enough.
    private func forward(
        _ request: Request, _ context: Context, _ cacheRequest: HTTPCacheRequest,
        next: (Request, Context) async throws -> Response, status: String
    ) async throws -> Response {
        let requestTime = cache.clock.now()
        var response = try await next(request, context)
        let responseTime = cache.clock.now()
        let fields = Self.fields(of: response)
        var stored = false
        if request.method == .get,
           case .store = cache.policy.storability(of: HTTPCaching.HTTPResponse(status: response.status.code, headers: fields), for: cacheRequest),
           (response.body.contentLength ?? 0) <= maximumBodySize {
            let body = try await Self.collect(response.body)
            response.body = ResponseBody(byteBuffer: body)
            if body.readableBytes <= maximumBodySize {
                do {
                    let kept = HTTPCaching.HTTPResponse(status: response.status.code, headers: fields, body: Data(body.readableBytesView))
                    stored = try await cache.store(kept, for: cacheRequest, requestTime: requestTime, responseTime: responseTime) != nil
                } catch {
                    context.logger.warning("Could not keep the response for \(cacheRequest.uri): \(error)")
                }
            }
        }
        response.headers.append(HTTPField(name: Self.cacheStatus, value: "haneke; " + status + (stored ? "; stored" : "")))
        return response
    }

    /// A stored response, or `304` when the request's own conditions hold for it.
    private func serve(_ stored: StoredHTTPResponse, body: Data, for request: HTTPCacheRequest, status: String) -> Response {
        let served = cache.policy.servedHeaders(of: stored, at: cache.clock.now())
        if cache.policy.requestIsNotModified(request, by: stored) {
            var headers = Self.httpFields(HTTPCachePolicy.notModifiedHeaders(from: served))
            headers.append(HTTPField(name: Self.cacheStatus, value: "haneke; " + status))
            return Response(status: .notModified, headers: headers)
        }
        var headers = Self.httpFields(served)
        // The server frames the body it sends.
        headers[.contentLength] = nil
        headers[.transferEncoding] = nil
        headers.append(HTTPField(name: Self.cacheStatus, value: "haneke; " + status))
        return Response(status: .init(code: stored.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    private static var cacheStatus: HTTPField.Name { HTTPField.Name("Cache-Status")! }

    private static func fields(of response: Response) -> HTTPHeaderFields {
        HTTPHeaderFields(response.headers.map { ($0.name.rawName, $0.value) })
    }

    private static func httpFields(_ fields: HTTPHeaderFields) -> HTTPFields {
        var result = HTTPFields()
        for field in fields {
            if let name = HTTPField.Name(field.name) { result.append(HTTPField(name: name, value: field.value)) }
        }
        return result
    }

    /// The whole body of a response.
    private static func collect(_ body: ResponseBody) async throws -> ByteBuffer {
        let collector = Collector()
        try await body.write(CollectingWriter(collector: collector))
        return collector.buffer
    }
}

/// The bytes a response body writes.
private final class Collector {
    var buffer = ByteBuffer()
}

/// Writes a response body into a ``Collector``.
private struct CollectingWriter: ResponseBodyWriter {
    let collector: Collector

    mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        collector.buffer.writeBuffer(&buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
#endif
