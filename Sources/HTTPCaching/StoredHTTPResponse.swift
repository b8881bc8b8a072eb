public import Foundation
import HanekeProtocols

/// A response as an HTTP cache keeps it (RFC 9111 §3): its status and stored header fields, when
/// the request that brought it was sent and when the response arrived (for its age, §4.2.3), and
/// the request's values of the fields its `Vary` names (its secondary key, §4.1). The body is kept
/// beside it, as the entry's value; this travels as the entry's metadata.
public struct StoredHTTPResponse: Sendable, Hashable {
    /// The status code.
    public var status: Int
    /// The header fields kept: the response's, without hop-by-hop fields and those its
    /// `Connection` names, with a `Date` added when it had none.
    public var headers: HTTPHeaderFields {
        didSet { parsed = Parsed(headers) }
    }
    /// What the policy reads of `headers` on every use, parsed once.
    private(set) var parsed: Parsed
    /// When the request that brought this response was sent (`request_time`).
    public var requestTime: Date
    /// When the response arrived (`response_time`).
    public var responseTime: Date
    /// The request's fields named by the response's `Vary`, as they were sent (absent ones absent).
    public var variantRequestHeaders: HTTPHeaderFields

    /// Creates a stored response.
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: The stored header fields.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response arrived.
    ///   - variantRequestHeaders: The request's fields that the response's `Vary` names.
    public init(status: Int, headers: HTTPHeaderFields, requestTime: Date, responseTime: Date, variantRequestHeaders: HTTPHeaderFields = HTTPHeaderFields()) {
        self.status = status
        self.headers = headers
        self.parsed = Parsed(headers)
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.variantRequestHeaders = variantRequestHeaders
    }

    /// The record as bytes, for an entry's metadata.
    /// - Returns: The bytes.
    /// - Throws: `StoreError` with code `valueTooLarge` when the fields take more than an entry's
    ///   metadata may (`EntryAttributes.metadataLimit`).
    public func encoded() throws -> Data {
        var writer = ByteWriter()
        writer.append(Self.magic)
        writer.append(byte: 1)
        writer.append(uint16: UInt16(clamping: status))
        writer.append(int64: requestTime.millisecondsSince1970)
        writer.append(int64: responseTime.millisecondsSince1970)
        guard writer.append(headers), writer.append(variantRequestHeaders), writer.data.count <= EntryAttributes.metadataLimit else {
            throw StoreError(.valueTooLarge, "A response's header fields take more than the \(EntryAttributes.metadataLimit) bytes an entry's metadata may hold")
        }
        return writer.data
    }

    /// Reads a record that ``encoded()`` wrote.
    /// - Parameter data: The bytes.
    /// - Throws: `StoreError` with code `decoding` when they are not such a record.
    public init(decoding data: Data) throws {
        var reader = ByteReader(data)
        guard let magic = reader.bytes(4), magic.elementsEqual(Self.magic), reader.byte() == 1,
              let status = reader.uint16(), let requestTime = reader.int64(), let responseTime = reader.int64(),
              let headers = reader.headers(), let variant = reader.headers(), reader.isAtEnd else {
            throw StoreError(.decoding, "The \(data.count) bytes of metadata are not a stored HTTP response's")
        }
        self.init(
            status: Int(status), headers: headers,
            requestTime: Date(millisecondsSince1970: requestTime), responseTime: Date(millisecondsSince1970: responseTime),
            variantRequestHeaders: variant
        )
    }

    private static let magic = Data("hnkH".utf8)
}

extension StoredHTTPResponse {
    /// The `Cache-Control` directives, the `CDN-Cache-Control` ones (a shared cache's, when valid)
    /// and the `Date` of stored fields.
    struct Parsed: Sendable, Hashable {
        var directives: CacheControl
        var targetedDirectives: CacheControl?
        var date: Date?

        init(_ headers: HTTPHeaderFields) {
            directives = CacheControl(headers)
            targetedDirectives = CDNCacheControl.directives(of: headers)
            date = headers["Date"].flatMap(HTTPDate.parse)
        }
    }
}
