package import Foundation
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
    /// The body, if any: in memory, or spooled to a file.
    package var body: ProxyRequestBody?
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
        self.body = body.map { .buffer($0) }
        self.peerAddress = peer.flatMap { try? SocketAddress(ipAddress: $0, port: 0) }
    }
}

/// A response the proxy sends back, body included.
package struct ProxyResponse: Sendable {
    /// The status code.
    package var status: Int
    /// The header fields, `Content-Length` and `Cache-Status` included.
    package var headers: HTTPHeaderFields
    /// The body (empty for `HEAD`, `204` and `304`): bytes of this response's own, or a stored
    /// body shared with the cache's memory layer and with every other response that writes it.
    package var content: ProxyBody
    /// Informational responses to send first (such as `103 Early Hints`).
    package var interim: [HTTPResponseHead]
    /// Whether the connection closes once this is written.
    package var closesConnection = false

    /// Creates a response with a body of its own.
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: The header fields.
    ///   - body: The body.
    ///   - interim: Informational responses to send first.
    ///   - closesConnection: Whether the connection closes once this is written; `false` by default.
    package init(status: Int, headers: HTTPHeaderFields, body: ByteBuffer, interim: [HTTPResponseHead], closesConnection: Bool = false) {
        self.status = status
        self.headers = headers
        self.content = .buffer(body)
        self.interim = interim
        self.closesConnection = closesConnection
    }

    /// The body's bytes in one buffer (a copy, for a stored body).
    package var body: ByteBuffer {
        switch content {
        case .buffer(let buffer): buffer
        case .stored(let data): ByteBuffer(bytes: data)
        }
    }
}

/// A response's body as the server writes it, a piece at a time as the client reads.
package enum ProxyBody: Sendable {
    /// Bytes of the response's own.
    case buffer(ByteBuffer)
    /// A stored body, shared and never copied whole: each piece is copied as it is written.
    case stored(Data)

    /// The body's length in bytes.
    package var count: Int {
        switch self {
        case .buffer(let buffer): buffer.readableBytes
        case .stored(let data): data.count
        }
    }

    /// The bytes from `offset`, at most `length` of them.
    func piece(at offset: Int, length: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        let length = min(length, count - offset)
        switch self {
        case .buffer(let buffer):
            return buffer.getSlice(at: buffer.readerIndex + offset, length: length) ?? ByteBuffer()
        case .stored(let data):
            var piece = allocator.buffer(capacity: length)
            data.withUnsafeBytes { _ = piece.writeBytes(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + length)])) }
            return piece
        }
    }
}

extension ProxyResponse {
    /// A response the cache made, to send as it is: its body shared, not copied.
    /// - Parameter response: The response.
    package init(_ response: HTTPResponse) {
        self.init(status: response.status, headers: response.headers, body: ByteBuffer(), interim: [])
        content = .stored(response.body)
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
