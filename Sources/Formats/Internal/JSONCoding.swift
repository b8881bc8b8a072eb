import Foundation
import HanekeProtocols

/// The JSON encoding shared by `JSONCodec` and the Codable bridge, which needs `Encodable` and
/// `Decodable` separately.
enum JSONCoding {
    static func encode<T: Encodable>(_ value: T, dates: JSONDateStrategy = .deferredToDate) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        switch dates {
        case .deferredToDate: encoder.dateEncodingStrategy = .deferredToDate
        case .secondsSince1970: encoder.dateEncodingStrategy = .secondsSince1970
        case .iso8601: encoder.dateEncodingStrategy = .iso8601
        }
        do {
            return try encoder.encode(value)
        } catch {
            throw StoreError(.encoding, "Could not encode \(T.self) as JSON", cause: error)
        }
    }

    static func decode<T: Decodable>(
        _ type: T.Type,
        from data: Data,
        dates: JSONDateStrategy = .deferredToDate
    ) throws -> T {
        if let depth = nestingBeyondLimit(data) {
            throw StoreError(
                .decoding,
                "Could not decode \(T.self) from \(data.count) bytes of JSON: it is nested more than \(depth) levels deep"
            )
        }
        let decoder = JSONDecoder()
        switch dates {
        case .deferredToDate: decoder.dateDecodingStrategy = .deferredToDate
        case .secondsSince1970: decoder.dateDecodingStrategy = .secondsSince1970
        case .iso8601: decoder.dateDecodingStrategy = .iso8601
        }
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw StoreError(.decoding, "Could not decode \(T.self) from \(data.count) bytes of JSON", cause: error)
        }
    }

    /// The deepest nesting handed to `JSONDecoder`. Foundation on Linux (6.3) crashes instead of
    /// throwing when it refuses text nested past its own limit of 512 levels after a line break
    /// (building the error's line and column): deeper text is refused here first, a little below
    /// Foundation's limit so that its failing path is never reached.
    static let maximumNesting = 500

    /// ``maximumNesting`` when `data` opens more arrays and objects than that at once (brackets
    /// inside strings do not count); `nil` otherwise. One pass over the bytes, stopping early.
    static func nestingBeyondLimit(_ data: Data) -> Int? {
        data.withUnsafeBytes { bytes -> Int? in
            var depth = 0
            var inString = false
            var escaped = false
            for byte in bytes {
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                    if depth > maximumNesting { return maximumNesting }
                case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
                default: break
                }
            }
            return nil
        }
    }
}
