public import Foundation

/// A type that can be made from bytes read back from a store.
///
/// A type that is `Decodable` and declares this conformance gets an implementation from the
/// Codable bridge in the `Formats` module (JSON); `Data`, `String` and `JSON` conform there too.
public protocol DataConvertible {
    /// Makes a value from stored bytes.
    /// - Parameter data: The bytes a ``DataRepresentable`` value produced.
    /// - Returns: The value.
    /// - Throws: `StoreError` with code `decoding` when the bytes are not a valid value.
    static func convertFromData(_ data: Data) throws -> Self
}
