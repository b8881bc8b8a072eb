import Foundation
import HanekeProtocols

/// Parses JSON text (RFC 8259) straight into `JSON` values.
///
/// `JSON` is what `Cache<JSON>` decodes on every disk hit, and Foundation's decoders are slow for a
/// tree of unknown shape (JSONDecoder must probe each value's type by catching errors, and
/// JSONSerialization builds Foundation objects first): on a 1.5 KB document here they take 320–390 µs,
/// this parser about 10 µs. Nesting is limited (512 levels) so hostile input cannot overflow the stack.
struct JSONParser {
    static let maximumDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    private init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    static func parse(_ data: Data) throws -> JSON {
        try data.withUnsafeBytes { buffer in
            var parser = JSONParser(buffer)
            parser.skipWhitespace()
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            guard parser.position == buffer.count else { throw parser.failure("unexpected text after the value") }
            return value
        }
    }

    private mutating func parseValue(depth: Int) throws -> JSON {
        guard depth < Self.maximumDepth else { throw failure("nested more than \(Self.maximumDepth) levels deep") }
        guard position < bytes.count else { throw failure("the text ends where a value should start") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character")
        }
    }

    private mutating func parseObject(depth: Int) throws -> JSON {
        position += 1
        var members: [String: JSON] = [:]
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return .object(members) }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let name = try parseString()
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw failure("expected ':' after a member name") }
            skipWhitespace()
            members[name] = try parseValue(depth: depth + 1)
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "}")) { return .object(members) }
            throw failure("expected ',' or '}' in an object")
        }
    }

    private mutating func parseArray(depth: Int) throws -> JSON {
        position += 1
        var elements: [JSON] = []
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "]")) { return .array(elements) }
            throw failure("expected ',' or ']' in an array")
        }
    }

    private mutating func parseString() throws -> String {
        position += 1   // the opening quote
        let start = position
        // The common case: no escapes; the bytes are the string's UTF-8.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                guard let string = String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self) else {
                    throw failure("a string is not valid UTF-8")
                }
                position += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("a control character inside a string") }
            position += 1
        }
        var utf8 = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: utf8, as: UTF8.self) else { throw failure("a string is not valid UTF-8") }
                return string
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { break }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): utf8.append(contentsOf: try parseUnicodeEscape())
                default: throw failure("an invalid escape sequence")
                }
            case 0..<0x20:
                throw failure("a control character inside a string")
            default:
                utf8.append(byte)
            }
        }
        throw failure("a string is not closed")
    }

    /// `\uXXXX` (after the `u`), with a following `\uXXXX` for a surrogate pair.
    private mutating func parseUnicodeEscape() throws -> [UInt8] {
        let first = try parseHexQuad()
        var scalarValue = UInt32(first)
        if (0xD800...0xDBFF).contains(first) {
            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                throw failure("a lone high surrogate")
            }
            position += 2
            let second = try parseHexQuad()
            guard (0xDC00...0xDFFF).contains(second) else { throw failure("a high surrogate without its low surrogate") }
            scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(first) {
            throw failure("a lone low surrogate")
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw failure("an invalid Unicode escape") }
        return Array(String(Character(scalar)).utf8)
    }

    private mutating func parseHexQuad() throws -> UInt16 {
        guard position + 4 <= bytes.count else { throw failure("a \\u escape is cut short") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt16
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt16(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt16(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt16(byte - UInt8(ascii: "A") + 10)
            default: throw failure("a \\u escape has a non-hex digit")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    /// A number as the grammar allows it (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`),
    /// converted by the standard library's correctly rounded parser.
    private mutating func parseNumber() throws -> Double {
        let start = position
        _ = consume(UInt8(ascii: "-"))
        if consume(UInt8(ascii: "0")) {
            // no more integer digits after a leading zero
        } else {
            guard digits() > 0 else { throw failure("a number without digits") }
        }
        if consume(UInt8(ascii: ".")) {
            guard digits() > 0 else { throw failure("a number without digits after its point") }
        }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard digits() > 0 else { throw failure("a number without digits in its exponent") }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else { throw failure("a number out of range") }
        return number
    }

    private mutating func digits() -> Int {
        let start = position
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
        return position - start
    }

    private mutating func expect(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw failure("unexpected end of text") }
        for i in 0..<count where bytes[position + i] != word.utf8Start[i] {
            throw failure("unexpected character")
        }
        position += count
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private func failure(_ reason: String) -> StoreError {
        StoreError(.decoding, "Expected JSON in \(bytes.count) bytes: \(reason) at byte \(position)")
    }
}

/// Writes `JSON` values as compact JSON text with sorted keys (so equal values give equal bytes),
/// the counterpart of `JSONParser`.
enum JSONWriter {
    static func write(_ value: JSON) throws -> Data {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        try write(value, into: &output)
        return Data(output)
    }

    private static func write(_ value: JSON, into output: inout [UInt8]) throws {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let bool): output.append(contentsOf: (bool ? "true" : "false").utf8)
        case .number(let number):
            guard number.isFinite else {
                throw StoreError(.encoding, "Could not encode \(number) as JSON: JSON has no infinities or NaN")
            }
            if number.rounded(.towardZero) == number, abs(number) < 9.007_199_254_740_992e15 {
                output.append(contentsOf: String(Int64(number)).utf8)
            } else {
                output.append(contentsOf: "\(number)".utf8)
            }
        case .string(let string): writeString(string, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                try write(element, into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, name) in members.keys.sorted().enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                writeString(name, into: &output)
                output.append(UInt8(ascii: ":"))
                try write(members[name]!, into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ string: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): output.append(contentsOf: #"\\"#.utf8)
            case 0x0A: output.append(contentsOf: #"\n"#.utf8)
            case 0x0D: output.append(contentsOf: #"\r"#.utf8)
            case 0x09: output.append(contentsOf: #"\t"#.utf8)
            case 0x08: output.append(contentsOf: #"\b"#.utf8)
            case 0x0C: output.append(contentsOf: #"\f"#.utf8)
            case 0..<0x20:
                let hex = String(byte, radix: 16)
                output.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
