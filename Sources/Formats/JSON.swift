public import Foundation
public import HanekeProtocols

/// A JSON document as a value: what `Cache<JSON>` stores when you do not have a `Codable` model.
///
/// Build one from literals, read it through the typed accessors:
///
/// ```swift
/// let user: JSON = ["name": "Haneke", "stars": 5200, "tags": ["cache", "swift"]]
/// let name = user["name"]?.string            // "Haneke"
/// let tags = user.dictionary?["tags"]?.array // [.string("cache"), .string("swift")]
/// ```
///
/// Numbers are `Double`s, as in JavaScript: integers beyond ±2^53 lose precision (store such IDs as
/// strings, or use a `Codable` model).
public enum JSON: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSON])
    /// An object.
    case object([String: JSON])

    /// The members of an object, or `nil` for any other value (HanekeSwift's `dictionary`).
    public var dictionary: [String: JSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements of an array, or `nil` for any other value (HanekeSwift's `array`).
    public var array: [JSON]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The string, or `nil` for any other value.
    public var string: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The number, or `nil` for any other value.
    public var number: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The number as an `Int` when it is a whole number in range, or `nil`.
    public var int: Int? {
        guard let number, let int = Int(exactly: number) else { return nil }
        return int
    }

    /// The Boolean, or `nil` for any other value.
    public var bool: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }

    /// Whether the value is `null`.
    public var isNull: Bool { self == .null }

    /// The member named `key` of an object; `nil` when absent or when this is not an object.
    /// - Parameter key: The member's name.
    public subscript(key: String) -> JSON? {
        dictionary?[key]
    }

    /// The element at `index` of an array; `nil` when out of range or when this is not an array.
    /// - Parameter index: The element's position.
    public subscript(index: Int) -> JSON? {
        guard let array, array.indices.contains(index) else { return nil }
        return array[index]
    }
}

extension JSON: Codable {
    /// Decodes any JSON value.
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError` when the input is not JSON.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSON].self) {
            self = .array(array)
        } else if let object = try? container.decode([String: JSON].self) {
            self = .object(object)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Not a JSON value")
        }
    }

    /// Encodes the value as JSON.
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: `EncodingError` for numbers JSON cannot represent (NaN, infinity).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }
}

extension JSON: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// `true` or `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A whole number.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    /// A number.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSON: DataConvertible, DataRepresentable {
    /// Parses JSON text (any value at the top, as RFC 8259 allows).
    /// - Parameter data: UTF-8 JSON.
    /// - Returns: The value.
    /// - Throws: `StoreError` with code `decoding`, saying what was wrong and at which byte.
    public static func convertFromData(_ data: Data) throws -> JSON {
        try JSONParser.parse(data)
    }

    /// The value as compact JSON with sorted keys (equal values give equal bytes).
    /// - Returns: UTF-8 JSON.
    /// - Throws: `StoreError` with code `encoding` for a number JSON cannot represent (NaN, infinity).
    public func asData() throws -> Data {
        try JSONWriter.write(self)
    }
}

extension JSON: CostMeasurable {
    /// The memory the document takes, roughly: 16 bytes a value plus the UTF-8 bytes of its
    /// strings and keys; a walk of the tree, much cheaper than encoding it.
    public var cacheCost: Int {
        switch self {
        case .null, .bool, .number: 16
        case .string(let text): 16 + text.utf8.count
        case .array(let elements): elements.reduce(16) { $0 &+ $1.cacheCost }
        case .object(let members): members.reduce(16) { $0 &+ 16 &+ $1.key.utf8.count &+ $1.value.cacheCost }
        }
    }
}
