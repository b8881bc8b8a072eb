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
}
