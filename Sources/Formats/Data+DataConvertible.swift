public import Foundation
public import HanekeProtocols

extension Data: DataConvertible, DataRepresentable {
    /// The bytes themselves.
    /// - Parameter data: Stored bytes.
    /// - Returns: `data`, unchanged.
    public static func convertFromData(_ data: Data) -> Data { data }

    /// The bytes themselves.
    /// - Returns: `self`, unchanged.
    public func asData() -> Data { self }
}
