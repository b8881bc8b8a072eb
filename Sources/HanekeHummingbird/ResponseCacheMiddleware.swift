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
/// It answers through the same `HTTPCacheFrontEnd` as `haneke proxy`, so the rules and the
/// `Cache-Status` field (RFC 9211: `haneke; hit; ttl=42`, `haneke; fwd=uri-miss; fwd-status=200;
/// stored`, `fwd=request` when the client asked for a fresh answer) are the proxy's: `private` and
/// `no-store` responses are never kept, nor a response to a request with `Authorization` unless it
/// says `public`, `s-maxage` or `must-revalidate`; a response with `Set-Cookie` is not kept, and a
/// response to a request with `Cookie` only with an explicit lifetime (`max-age`, `s-maxage`,
/// `Expires`); a client's `max-stale` is not honoured; a request's `If-None-Match` or
/// `If-Modified-Since` that holds for the stored response gets a `304`, a single `Range` a `206`,
/// `only-if-cached` with nothing stored a `504`; a stale response is run through the route again
/// (without the client's `Cookie` and `Authorization`), and served stale instead when the route
/// fails and `stale-if-error` allows it; a successful `POST`, `PUT`, `PATCH` or `DELETE` removes
/// what is stored for its path. The policy's `HTTPCachePolicy.SharedCacheRelaxations` relax these.
///
/// The key is ``keyOrigin`` and the request's path and query — never the client's `Host`, which
/// any client may set: a route that answers by host says `Vary: Host`.
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
    /// The rules, and the cache of responses they keep.
    public let frontEnd: HTTPCacheFrontEnd<AnyStore<String, Data>>
    /// The origin every key starts with: `http://localhost` by default.
    public let keyOrigin: String

    /// The cache of responses.
    public var cache: HTTPCache<AnyStore<String, Data>> { frontEnd.cache }
    /// The largest body kept, in bytes; a larger response is served and not kept.
    public var maximumBodySize: Int { frontEnd.configuration.maximumStoredBodySize }

    /// Creates the middleware.
    /// - Parameters:
    ///   - storage: Where the responses are kept (body as value, status and fields as metadata).
    ///   - policy: The rules; a shared cache's (`HTTPCachePolicy(kind: .shared)`) by default.
    ///   - clock: The clock that decides ages; the system's by default.
    ///   - maximumBodySize: The largest body kept; 8 MiB by default.
    ///   - keyOrigin: The origin every key starts with, before the request's path and query;
    ///     `http://localhost` by default.
    public init(
        storage: some Store<String, Data>,
        policy: HTTPCachePolicy = HTTPCachePolicy(kind: .shared),
        clock: any StoreClock = SystemClock(),
        maximumBodySize: Int = 8 << 20,
        keyOrigin: String = "http://localhost"
    ) {
        var configuration = HTTPCacheFrontEnd<AnyStore<String, Data>>.Configuration()
        configuration.maximumStoredBodySize = maximumBodySize
        // A route answers the method it is asked.
        configuration.fetchesHEADAsGET = false
        let cache = HTTPCache(storage: storage.eraseToAnyStore(), policy: policy, clock: clock)
        frontEnd = HTTPCacheFrontEnd(cache: cache, configuration: configuration, logger: Logger(label: "haneke.hummingbird.response-cache"))
        self.keyOrigin = keyOrigin
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
            method: request.method.rawValue, uri: keyOrigin + request.uri.description,
            headers: HTTPHeaderFields(request.headers.map { ($0.name.rawName, $0.value) })
        )
        let answer = await frontEnd.respond(to: cacheRequest) { sent in
            // The route sees the request as the front end sends it: a validation carries its
            // conditions and no client's credentials. A miss sends the client's as it came.
            guard sent.headers != cacheRequest.headers else { return RouteResponse(response: try await next(request, context)) }
            var head = request.head
            head.headerFields = Self.httpFields(sent.headers)
            return RouteResponse(response: try await next(Request(head: head, body: request.body), context))
        }
        switch answer {
        case .fromCache(let stored):
            var headers = Self.httpFields(stored.headers)
            // The server frames the body it sends.
            headers[.contentLength] = nil
            headers[.transferEncoding] = nil
            return Response(status: .init(code: stored.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: stored.body)))
        case .forwarded(let route, let status):
            var response = route.response
            response.headers.append(HTTPField(name: Self.cacheStatus, value: status.value))
            return response
        case .failed(let error, _, _):
            throw error
        }
    }

    private static var cacheStatus: HTTPField.Name { HTTPField.Name("Cache-Status")! }

    private static func httpFields(_ fields: HTTPHeaderFields) -> HTTPFields {
        var result = HTTPFields()
        for field in fields {
            if let name = HTTPField.Name(field.name) { result.append(HTTPField(name: name, value: field.value)) }
        }
        return result
    }
}

/// A route's response as the front end sees it; its body is collected only to be stored.
struct RouteResponse: HTTPCacheOriginResponse {
    var response: Response

    var status: Int { response.status.code }

    var headers: HTTPHeaderFields { HTTPHeaderFields(response.headers.map { ($0.name.rawName, $0.value) }) }

    mutating func body(upTo limit: Int) async throws -> Data? {
        if let length = response.body.contentLength, length > limit { return nil }
        let collector = Collector()
        try await response.body.write(CollectingWriter(collector: collector))
        let body = collector.buffer
        // Sent as collected, whatever is kept.
        response.body = ResponseBody(byteBuffer: body)
        return body.readableBytes <= limit ? Data(body.readableBytesView) : nil
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
