package import HTTPCaching
package import NIOCore
package import NIOHTTP1

/// A request as a client sent it to the proxy, body included.
package struct ProxyRequest: Sendable {
    /// The method.
    package var method: String
    /// The request target as sent: `/path?query`, or an absolute URI.
    package var target: String
    /// The header fields.
    package var headers: HTTPHeaderFields
    /// The body, if any.
    package var body: ByteBuffer?
    /// The client's address; `nil` when unknown.
    package var peerAddress: SocketAddress?

    /// The client's IP address, as `X-Forwarded-For` writes it (made only when a request goes
    /// upstream, not for a hit); `nil` when unknown.
    package var peer: String? { peerAddress?.ipAddress }

    /// Creates a request.
    /// - Parameters:
    ///   - method: The method; `GET` by default.
    ///   - target: The request target as sent.
    ///   - headers: The header fields; none by default.
    ///   - body: The body; none by default.
    ///   - peer: The client's IP address; unknown by default.
    package init(method: String = "GET", target: String, headers: HTTPHeaderFields = HTTPHeaderFields(), body: ByteBuffer? = nil, peer: String? = nil) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.peerAddress = peer.flatMap { try? SocketAddress(ipAddress: $0, port: 0) }
    }
}

/// A response the proxy sends back, body included.
package struct ProxyResponse: Sendable {
    /// The status code.
    package var status: Int
    /// The header fields, `Content-Length` and `Cache-Status` included.
    package var headers: HTTPHeaderFields
    /// The body (empty for `HEAD`, `204` and `304`).
    package var body: ByteBuffer
    /// Informational responses to send first (such as `103 Early Hints`).
    package var interim: [HTTPResponseHead]
    /// Whether the connection closes once this is written.
    package var closesConnection = false
}

extension ProxyResponse {
    /// A response the cache made, to send as it is.
    /// - Parameter response: The response.
    package init(_ response: HTTPResponse) {
        self.init(status: response.status, headers: response.headers, body: ByteBuffer(bytes: response.body), interim: [])
    }
}

extension HTTPHeaderFields {
    /// NIO's header fields as this module's, in order.
    init(_ headers: HTTPHeaders) {
        self.init(headers.map { ($0.name, $0.value) })
    }

    /// These fields as NIO's, in order.
    var nio: HTTPHeaders {
        HTTPHeaders(fields.map { ($0.name, $0.value) })
    }
}

extension HTTPMethod {
    /// The method as sent on the wire: NIO spells `M-SEARCH` as `MSEARCH`.
    var name: String {
        self == .MSEARCH ? "M-SEARCH" : rawValue
    }

    /// The method named `name`, written as given.
    init(named name: String) {
        self = name == "M-SEARCH" ? .RAW(value: name) : HTTPMethod(rawValue: name)
    }
}
