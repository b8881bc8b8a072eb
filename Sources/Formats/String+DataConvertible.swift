public import Foundation
public import HanekeProtocols

extension String: DataConvertible, DataRepresentable {
    /// Decodes UTF-8 bytes.
    /// - Parameter data: UTF-8 bytes.
    /// - Returns: The string.
    /// - Throws: `StoreError` with code `decoding` when the bytes are not valid UTF-8.
    public static func convertFromData(_ data: Data) throws -> String {
        guard let string = String(validating: data, as: UTF8.self) else {
            throw StoreError(.decoding, "Expected UTF-8 text, but the \(data.count) stored bytes are not valid UTF-8")
        }
        return string
    }

    /// The string's UTF-8 bytes.
    /// - Returns: The UTF-8 encoding of `self`.
    public func asData() -> Data { Data(utf8) }
}
