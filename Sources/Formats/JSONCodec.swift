public import Foundation
public import HanekeProtocols

/// Stores `Codable` values as JSON, with sorted keys so that equal values give equal bytes.
///
/// ```swift
/// let users = fileStore.coded(with: JSONCodec<User>())
/// ```
public struct JSONCodec<Value: Codable>: DataCodec {
    /// How dates are written; `.deferredToDate` (Foundation's default) by default.
    public var dateEncodingStrategy: JSONDateStrategy

    /// Creates a JSON codec.
    /// - Parameter dateEncodingStrategy: How dates are written; `.deferredToDate` by default.
    public init(dateEncodingStrategy: JSONDateStrategy = .deferredToDate) {
        self.dateEncodingStrategy = dateEncodingStrategy
    }

    /// Encodes `value` as JSON.
    /// - Parameter value: The value to encode.
    /// - Returns: UTF-8 JSON with sorted keys.
    /// - Throws: `StoreError` with code `encoding`.
    public func encode(_ value: Value) throws -> Data {
        try JSONCoding.encode(value, dates: dateEncodingStrategy)
    }

    /// Decodes a value from JSON.
    /// - Parameter data: UTF-8 JSON.
    /// - Returns: The value.
    /// - Throws: `StoreError` with code `decoding`, naming the expected type, with the
    ///   `DecodingError` (what was wrong, and where) as its cause.
    public func decode(_ data: Data) throws -> Value {
        try JSONCoding.decode(Value.self, from: data, dates: dateEncodingStrategy)
    }
}
