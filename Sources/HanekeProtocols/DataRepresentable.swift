public import Foundation

/// A type that can be written to a store as bytes.
///
/// A type that is `Encodable` and declares this conformance gets an implementation from the
/// Codable bridge in the `Formats` module (JSON).
public protocol DataRepresentable {
    /// The bytes that represent this value.
    /// - Returns: Bytes that ``DataConvertible/convertFromData(_:)`` turns back into an equal value.
    /// - Throws: `StoreError` with code `encoding` when the value cannot be represented.
    func asData() throws -> Data
}
