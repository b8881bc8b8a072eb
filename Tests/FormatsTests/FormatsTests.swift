import Foundation
import Formats
import HanekeProtocols
import Testing

struct FormatsTests {
    struct Article: Codable, Hashable, Sendable, DataConvertible, DataRepresentable {
        var title: String
        var tags: [String]
        var published: Date
        var rating: Double?
    }

    static let article = Article(
        title: "Haneke on Linux",
        tags: ["cache", "swift"],
        published: Date(timeIntervalSince1970: 1_700_000_000),
        rating: 4.5
    )

    @Test(arguments: [Data(), Data([0]), Data([0xFF, 0x00, 0x7F]), Data(repeating: 0xAB, count: 70_000)])
    func dataIsStoredAsItself(data: Data) throws {
        #expect(data.asData() == data)
        #expect(Data.convertFromData(data) == data)
    }

    @Test(arguments: ["", "plain", "ünïcödé ✓ 🙂", String(repeating: "long ", count: 10_000), "nul\u{0}inside"])
    func stringsRoundTripAsUTF8(text: String) throws {
        #expect(text.asData() == Data(text.utf8))
        #expect(try String.convertFromData(text.asData()) == text)
    }

    @Test(arguments: [Data([0xFF]), Data([0xC3]), Data([0xED, 0xA0, 0x80])])
    func invalidUTF8IsADecodingError(bytes: Data) {
        let error = #expect(throws: StoreError.self) { try String.convertFromData(bytes) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("UTF-8") == true)
    }

    @Test(arguments: [
        JSON.null, true, false, 0, -1.5, 1e300, "", "text with \"quotes\" and / slashes",
        [], [1, "two", .null, [3]],
        [:], ["nested": ["deep": [true, false]], "unicode": "ü"],
    ] as [JSON])
    func jsonValuesRoundTrip(value: JSON) throws {
        #expect(try JSON.convertFromData(value.asData()) == value)
    }

    @Test func jsonHasTheAccessorsHanekeSwiftHad() throws {
        let json = try JSON.convertFromData(Data(#"{"user":{"name":"Ada","langs":["swift","c"],"age":36,"admin":false,"bio":null}}"#.utf8))
        let user = try #require(json.dictionary?["user"])
        #expect(user["name"]?.string == "Ada")
        #expect(user["langs"]?.array == ["swift", "c"])
        #expect(user["langs"]?[1]?.string == "c")
        #expect(user["langs"]?[2] == nil)
        #expect(user["age"]?.int == 36)
        #expect(user["age"]?.number == 36)
        #expect(user["admin"]?.bool == false)
        #expect(user["bio"]?.isNull == true)
        #expect(user["missing"] == nil)
        #expect(json.array == nil)
        #expect(JSON.array([1]).dictionary == nil)
    }

    @Test func jsonEncodesWithSortedKeys() throws {
        let json: JSON = ["b": 1, "a": 2, "c": ["z": 0, "y": 1]]
        #expect(String(decoding: try json.asData(), as: UTF8.self) == #"{"a":2,"b":1,"c":{"y":1,"z":0}}"#)
    }

    @Test(arguments: [Data(), Data("{".utf8), Data("[1 2]".utf8), Data("{'a':1}".utf8), Data("nul".utf8),
                      Data([0xFF, 0xFE]), Data("{\"a\":}".utf8), Data([0x22, 0xC3, 0x22])])
    func malformedJSONIsADecodingError(bytes: Data) {
        let error = #expect(throws: StoreError.self) { try JSON.convertFromData(bytes) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("JSON") == true)
    }

    @Test func aCodableTypeNeedsNoCode() throws {
        let data = try Self.article.asData()
        #expect(try Article.convertFromData(data) == Self.article)
        #expect(String(decoding: data, as: UTF8.self).hasPrefix(#"{"published":"#))
    }

    @Test func bytesOfTheWrongShapeSayWhatWasExpected() {
        let error = #expect(throws: StoreError.self) {
            try Article.convertFromData(Data(#"{"title":"t","tags":"not an array","published":0}"#.utf8))
        }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("Article") == true)
        #expect(error?.cause is DecodingError)
        #expect("\(error.map { "\($0)" } ?? "")".contains(" at tags: "), "\(String(describing: error))")
    }

    @Test func aMissingFieldIsNamed() {
        let error = #expect(throws: StoreError.self) { try Article.convertFromData(Data(#"{"title":"t"}"#.utf8)) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("no value for key 'tags'"), "\(String(describing: error))")
    }

    /// What FuzzJSON found: Foundation's JSONDecoder on Linux crashes the process (building its
    /// error's source location) when text nested past its limit has a line break before that
    /// point. The codec refuses such text itself, with a decoding error; brackets inside strings
    /// do not count, and 500 levels still decode.
    @Test func textNestedPastTheLimitIsADecodingErrorNotACrash() throws {
        let found = Data(" ".utf8) + Data(repeating: UInt8(ascii: "["), count: 94) + Data("\n\n".utf8)
            + Data(repeating: UInt8(ascii: "["), count: 420)
        for text in [found, Data(repeating: UInt8(ascii: "{"), count: 600), Data(("[\n" + String(repeating: "[", count: 510)).utf8)] {
            let error = #expect(throws: StoreError.self) { try JSONCodec<[Int]>().decode(text) }
            #expect(error?.code == .decoding)
            #expect(error?.message.contains("nested more than 500 levels") == true, "\(String(describing: error))")
        }
        let deep = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        // Reaches JSONDecoder, which finds arrays where numbers should be.
        let shallowEnough = #expect(throws: StoreError.self) { try JSONCodec<[Int]>().decode(Data(deep.utf8)) }
        #expect(shallowEnough?.cause is DecodingError)
        let quoted = Data(("[\"" + String(repeating: "[", count: 2_000) + "\"]").utf8)
        #expect(try JSONCodec<[String]>().decode(quoted) == [String(repeating: "[", count: 2_000)])
    }

    /// The decoder's reason is the cause, printed once by the description, readably; the message
    /// says what failed.
    @Test func aDecodingErrorSaysItsCauseOnce() throws {
        let bytes = Data(#"{"title":"t"}"#.utf8)
        let decoders: [(String, () throws -> Article)] = [
            ("JSON", { try Article.convertFromData(bytes) }),
            ("property list", { try PropertyListCodec<Article>().decode(PropertyListCodec<[String: String]>().encode(["title": "t"])) }),
        ]
        for (name, decode) in decoders {
            let error = try #require(#expect(throws: StoreError.self, "\(name)") { _ = try decode() })
            let text = "\(error)"
            #expect(error.code == .decoding)
            #expect(error.message.contains("Could not decode Article from"), "\(text)")
            #expect(!error.message.contains("tags"), "\(text)")
            #expect(Self.occurrences(of: "no value for key 'tags'", in: text) == 1, "\(text)")
            #expect(!text.contains("CodingKeys") && !text.contains("\n"), "\(text)")
        }
    }

    @Test func anEncodingErrorSaysItsCauseOnce() throws {
        let error = try #require(#expect(throws: StoreError.self) { try JSONCodec<Double>().encode(.nan) })
        let text = "\(error)"
        #expect(error.code == .encoding)
        #expect(error.message == "Could not encode Double as JSON")
        #expect(error.cause is EncodingError)
        #expect(Self.occurrences(of: "cannot encode Double", in: text) == 1, "\(text)")
    }

    static func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    @Test(arguments: [JSONDateStrategy.deferredToDate, .secondsSince1970, .iso8601])
    func theJSONCodecRoundTrips(dates: JSONDateStrategy) throws {
        let codec = JSONCodec<Article>(dateEncodingStrategy: dates)
        #expect(try codec.decode(codec.encode(Self.article)) == Self.article)
    }

    @Test func theJSONCodecWritesDatesAsAsked() throws {
        let codec = JSONCodec<[String: Date]>(dateEncodingStrategy: .iso8601)
        let text = String(decoding: try codec.encode(["at": Date(timeIntervalSince1970: 0)]), as: UTF8.self)
        #expect(text == #"{"at":"1970-01-01T00:00:00Z"}"#)
    }

    @Test func thePropertyListCodecRoundTripsInBinary() throws {
        let codec = PropertyListCodec<Article>()
        let data = try codec.encode(Self.article)
        #expect(data.starts(with: Data("bplist00".utf8)))
        #expect(try codec.decode(data) == Self.article)
    }

    @Test(arguments: [Data(), Data("bplist00".utf8), Data("garbage".utf8), Data(repeating: 0, count: 64)])
    func malformedPropertyListsAreDecodingErrors(bytes: Data) {
        let error = #expect(throws: StoreError.self) { try PropertyListCodec<Article>().decode(bytes) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("Article") == true)
    }

    @Test func thePropertyListCodecTakesScalarsToo() throws {
        #expect(try PropertyListCodec<Int>().decode(PropertyListCodec<Int>().encode(42)) == 42)
        #expect(try PropertyListCodec<String>().decode(PropertyListCodec<String>().encode("ü")) == "ü")
        let date = Date(timeIntervalSince1970: 1_234.5)
        #expect(try PropertyListCodec<Date>().decode(PropertyListCodec<Date>().encode(date)) == date)
        #expect(try PropertyListCodec<[Int]>().decode(PropertyListCodec<[Int]>().encode([1, 2])) == [1, 2])
    }

    @Test func theJSONCodecTakesScalarsToo() throws {
        #expect(try JSONCodec<Int>().decode(JSONCodec<Int>().encode(42)) == 42)
        #expect(try JSONCodec<String>().decode(JSONCodec<String>().encode("ü")) == "ü")
        #expect(try JSON.convertFromData(Data("7".utf8)) == 7)
    }

    @Test func aJSONArticleIsNotAPropertyList() throws {
        let json = try JSONCodec<Article>().encode(Self.article)
        #expect(throws: StoreError.self) { try PropertyListCodec<Article>().decode(json) }
    }

    @Test func nanCannotBeEncodedAsJSON() {
        let error = #expect(throws: StoreError.self) { try JSON.number(.nan).asData() }
        #expect(error?.code == .encoding)
    }
}
