public import Foundation
public import HanekeProtocols

// The Codable bridge: a `Codable` type that declares `DataConvertible` and `DataRepresentable`
// needs no code of its own; it is stored as JSON. A type can still implement either method itself,
// or be stored in another format with `coded(with: PropertyListCodec<T>())`.

extension DataConvertible where Self: Decodable {
    /// Decodes the value from JSON.
    /// - Parameter data: JSON bytes.
    /// - Returns: The value.
    /// - Throws: `StoreError` with code `decoding`, naming the type, with the `DecodingError` (what
    ///   was wrong, and where) as its cause.
    public static func convertFromData(_ data: Data) throws -> Self {
        try JSONCoding.decode(Self.self, from: data)
    }
}

extension DataRepresentable where Self: Encodable {
    /// Encodes the value as JSON.
    /// - Returns: JSON bytes.
    /// - Throws: `StoreError` with code `encoding`.
    public func asData() throws -> Data {
        try JSONCoding.encode(self)
    }
}
