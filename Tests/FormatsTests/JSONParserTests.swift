import Foundation
import Formats
import HanekeProtocols
import Testing
import TestSupport

/// The JSON parser and writer behind `JSON.convertFromData` and `asData`.
struct JSONParserTests {
    func parse(_ text: String) throws -> JSON { try JSON.convertFromData(Data(text.utf8)) }

    @Test(arguments: [
        (#""\u00e9\u4e2d\ud83d\ude00""#, "é中😀"),
        (#""tab\tnew\nline\r\"quote\" back\\slash \/""#, "tab\tnew\nline\r\"quote\" back\\slash /"),
        (#""\b\f""#, "\u{8}\u{C}"),
        (#""plain ünïcödé 🙂""#, "plain ünïcödé 🙂"),
        (#""""#, ""),
    ])
    func stringsAndEscapes(text: String, expected: String) throws {
        #expect(try parse(text) == .string(expected))
    }

    @Test(arguments: [
        ("0", 0.0), ("-0", -0.0), ("12", 12), ("-3.25", -3.25), ("1e3", 1000), ("1E+2", 100), ("2.5e-3", 0.0025),
        ("123456789012345680", 123_456_789_012_345_680), ("1.7976931348623157e308", 1.7976931348623157e308),
    ])
    func numbers(text: String, expected: Double) throws {
        #expect(try parse(text) == .number(expected))
    }

    @Test(arguments: [
        "01", "1.", ".5", "-", "+1", "1e", "1e+", "0x10", "NaN", "Infinity", "1e400",
        #""\u12""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\x""#, "\"unterminated", "\"a\u{1}b\"",
        "[1,]", "[,1]", "{\"a\" 1}", "{\"a\":1,}", "{1:2}", "tru", "nulll", "[1 2]", "{} {}", "",
    ])
    func invalidTextIsADecodingError(text: String) {
        let error = #expect(throws: StoreError.self) { try parse(text) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("byte") == true)
    }

    @Test func invalidUTF8InAStringIsRejected() {
        #expect(throws: StoreError.self) { try JSON.convertFromData(Data([0x22, 0xC3, 0x28, 0x22])) }
        #expect(throws: StoreError.self) { try JSON.convertFromData(Data([0x22, 0x5C, 0x6E, 0xFF, 0x22])) }
    }

    @Test func nestingIsLimited() throws {
        let deep = String(repeating: "[", count: 511) + String(repeating: "]", count: 511)
        #expect(try parse(deep).array != nil)
        let tooDeep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let error = #expect(throws: StoreError.self) { try parse(tooDeep) }
        #expect(error?.message.contains("nested") == true)
    }

    @Test func whitespaceIsAllowedAroundTokens() throws {
        #expect(try parse(" \t\n{ \"a\" : [ 1 , true , null ] }\r\n") == ["a": [1, true, .null]])
    }

    @Test func aDuplicateMemberKeepsTheLastValue() throws {
        #expect(try parse(#"{"a":1,"a":2}"#) == ["a": 2])
    }

    @Test func theWriterEscapesWhatItMustAndSortsKeys() throws {
        let value: JSON = ["z": "line\nbreak \"q\" \u{1}", "a": [1.5, -0.0, 1e21, 3], "m": .null]
        let text = String(decoding: try value.asData(), as: UTF8.self)
        #expect(text == #"{"a":[1.5,0,1e+21,3],"m":null,"z":"line\nbreak \"q\" \u0001"}"#)
        #expect(try JSON.convertFromData(Data(text.utf8)) == value)
    }

    @Test func theParserAgreesWithFoundationOnARealisticDocument() async throws {
        struct Item: Codable, Equatable, Sendable {
            var id: Int
            var name: String
            var score: Double
            var tags: [String]
            var active: Bool
            var note: String?
        }
        // 0.13 s of CPU in a debug build: made and parsed off the cooperative pool.
        let (items, roundTripped, parsed, parsedByFoundation) = try await offThePool { () throws -> ([Item], [Item], JSON, JSON) in
            var random = SystemRandomNumberGenerator()
            let items = (0..<300).map { i in
                Item(id: i, name: "item \(i) \"quoted\" é 🙂", score: Double(Int.random(in: 0...1_000_000, using: &random)) / 7,
                     tags: ["a", "b/c", "\\d"], active: i % 2 == 0, note: i % 3 == 0 ? nil : "n\t\(i)")
            }
            let data = try JSONEncoder().encode(items)
            let parsed = try JSON.convertFromData(data)
            // Round-trip through our writer, then through Foundation's decoder: the same items.
            return (items, try JSONDecoder().decode([Item].self, from: parsed.asData()), parsed, try JSONDecoder().decode(JSON.self, from: data))
        }
        #expect(roundTripped == items)
        #expect(parsedByFoundation == parsed)
    }
}
