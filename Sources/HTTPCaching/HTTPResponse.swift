public import Foundation
public import HanekeProtocols

/// An HTTP response: status, header fields and body.
///
/// It converts to and from bytes (`DataConvertible`, `DataRepresentable`), so a cache can keep
/// whole responses: `NetworkFetcher<HTTPResponse>` hands callers the status and headers as well as
/// the body.
public struct HTTPResponse: Sendable, Hashable {
    /// The status code.
    public var status: Int
    /// The header fields.
    public var headers: HTTPHeaderFields
    /// The body; empty for a response without one.
    public var body: Data

    /// Creates a response.
    /// - Parameters:
    ///   - status: The status code; `200` by default.
    ///   - headers: The header fields; none by default.
    ///   - body: The body; empty by default.
    public init(status: Int = 200, headers: HTTPHeaderFields = HTTPHeaderFields(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

extension HTTPResponse: DataConvertible, DataRepresentable {
    /// Makes a response from the bytes ``asData()`` wrote.
    /// - Parameter data: The bytes.
    /// - Returns: The response.
    /// - Throws: `StoreError` with code `decoding` when the bytes are not a response's.
    public static func convertFromData(_ data: Data) throws -> HTTPResponse {
        var reader = ByteReader(data)
        guard let magic = reader.bytes(4), magic.elementsEqual(Self.magic), reader.byte() == 1,
              let status = reader.uint16(), let headers = reader.headers(), let body = reader.rest() else {
            throw StoreError(.decoding, "The \(data.count) bytes are not an HTTPResponse's (a magic, a version, a status, headers and a body)")
        }
        return HTTPResponse(status: Int(status), headers: headers, body: body)
    }

    /// The response as bytes: a magic, a version, the status, the header fields and the body.
    /// - Returns: The bytes.
    /// - Throws: `StoreError` with code `encoding` when a field name or value is longer than 65,535
    ///   bytes, or there are more than 65,535 fields.
    public func asData() throws -> Data {
        var writer = ByteWriter()
        writer.append(Self.magic)
        writer.append(byte: 1)
        writer.append(uint16: UInt16(clamping: status))
        guard writer.append(headers) else {
            throw StoreError(.encoding, "An HTTPResponse's header fields do not fit its format (at most 65,535 fields of at most 65,535 bytes each)")
        }
        writer.append(body)
        return writer.data
    }

    private static let magic = Data("hnkR".utf8)
}
