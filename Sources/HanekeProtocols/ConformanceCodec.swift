public import Foundation

/// The codec of a type that converts itself: it calls the type's ``DataRepresentable/asData()`` and
/// ``DataConvertible/convertFromData(_:)``. Used by ``Store/coded(as:)``.
public struct ConformanceCodec<Value: DataConvertible & DataRepresentable>: DataCodec {
    /// Creates the codec.
    public init() {}

    /// The value's own bytes.
    /// - Parameter value: The value to encode.
    /// - Returns: `value.asData()`.
    /// - Throws: What `asData()` throws.
    public func encode(_ value: Value) throws -> Data { try value.asData() }

    /// The value made from its bytes.
    /// - Parameter data: The stored bytes.
    /// - Returns: `Value.convertFromData(data)`.
    /// - Throws: What `convertFromData(_:)` throws.
    public func decode(_ data: Data) throws -> Value { try Value.convertFromData(data) }
}
