public import Foundation

/// Turns values into bytes and back, for types you do not own or that need a format other than
/// their own conformance (JSON, a property list, …). Select one per store with
/// ``Store/coded(with:)``.
public protocol DataCodec<Value>: Sendable {
    /// The type of the values.
    associatedtype Value

    /// The bytes for `value`.
    /// - Parameter value: The value to encode.
    /// - Returns: The encoded bytes.
    /// - Throws: `StoreError` with code `encoding`.
    func encode(_ value: Value) throws -> Data

    /// The value encoded in `data`.
    /// - Parameter data: Bytes produced by ``encode(_:)``.
    /// - Returns: The decoded value.
    /// - Throws: `StoreError` with code `decoding`, saying what was expected.
    func decode(_ data: Data) throws -> Value
}
