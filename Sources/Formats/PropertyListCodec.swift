public import Foundation
public import HanekeProtocols

/// Stores `Codable` values as binary property lists: more compact than JSON for numeric data and
/// exact for `Double` and `Date`.
///
/// The value is stored as the only element of a top-level array, because a property list cannot
/// have a single number, string or date at its top: so `PropertyListCodec<Int>` works like
/// `PropertyListCodec<User>`.
///
/// ```swift
/// let samples = fileStore.coded(with: PropertyListCodec<[Sample]>())
/// ```
public struct PropertyListCodec<Value: Codable>: DataCodec {
    /// Creates a binary property-list codec.
    public init() {}

    /// Encodes `value` as a binary property list.
    /// - Parameter value: The value to encode.
    /// - Returns: The property list's bytes (`bplist00…`).
    /// - Throws: `StoreError` with code `encoding`.
    public func encode(_ value: Value) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        do {
            return try encoder.encode([value])
        } catch {
            throw StoreError(.encoding, "Could not encode \(Value.self) as a property list", cause: error)
        }
    }

    /// Decodes a value from a property list (binary or XML).
    /// - Parameter data: The property list's bytes.
    /// - Returns: The value.
    /// - Throws: `StoreError` with code `decoding`, naming the expected type, with the
    ///   `DecodingError` as its cause.
    public func decode(_ data: Data) throws -> Value {
        let wrapped: [Value]
        do {
            wrapped = try PropertyListDecoder().decode([Value].self, from: data)
        } catch {
            throw StoreError(.decoding, "Could not decode \(Value.self) from a property list of \(data.count) bytes", cause: error)
        }
        guard wrapped.count == 1, let value = wrapped.first else {
            throw StoreError(.decoding, "Expected one \(Value.self) in the property list, found \(wrapped.count)")
        }
        return value
    }
}
