// Fuzzes the value decoders of Formats: the JSON parser (and its writer, by round trip), the Codable
// bridge through JSONCodec, PropertyListCodec, and UTF-8 strings.
import Formats
import Foundation
import HanekeProtocols

struct Sample: Codable, Equatable {
    var id: Int
    var name: String
    var tags: [String]
    var score: Double?
    var nested: [String: [Int]]?
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    if let json = try? JSON.convertFromData(data) {
        // What parses is written back and parses to the same value.
        guard let written = try? json.asData() else { return 0 }   // NaN cannot come from text; other values write
        guard let again = try? JSON.convertFromData(written) else { fatalError("the writer wrote what the parser refuses: \(String(decoding: written, as: UTF8.self))") }
        precondition(again == json, "a JSON round trip changed the value")
    }
    _ = try? JSONCodec<Sample>().decode(data)
    _ = try? PropertyListCodec<Sample>().decode(data)
    _ = try? String.convertFromData(data)
    return 0
}
