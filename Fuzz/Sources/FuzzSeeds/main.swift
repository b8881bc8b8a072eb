// Writes the fuzzers' seed corpora with the library itself: entry files written by a FileStore for
// key "k", LZ4 frames from CompressedStore, JSON from the JSON writer.
//
//   swift run -c release FuzzSeeds Corpus
import CompressedStore
import FileStore
import Formats
import Foundation
import HanekeProtocols
import SQLiteStore

let output = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "Corpus"
func write(_ data: Data, _ target: String, _ name: String) throws {
    let folder = output + "/" + target
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    try data.write(to: URL(fileURLWithPath: folder + "/" + name))
}

let values: [(String, Data)] = [
    ("empty", Data()),
    ("text", Data("Hello, Haneke! Hello, Haneke! Hello, Haneke!".utf8)),
    ("bytes", Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 73) })),
    ("json", Data(#"{"id":1,"name":"a","tags":["x","y"],"score":2.5,"nested":{"a":[1,2]}}"#.utf8)),
]

// Entry files: plain and compressed payloads, with and without an expiry.
let scratch = NSTemporaryDirectory() + "haneke-seeds-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: scratch) }
for (ttl, label) in [(Duration?.none, "forever"), (.seconds(3600), "expiring")] {
    let store = try FileStore(directory: scratch + "/" + label, configuration: .init(capacity: nil, timeToLive: ttl))
    for (name, value) in values {
        try store.setValue(value, forKey: "k")
        try write(try Data(contentsOf: URL(fileURLWithPath: store.path(forKey: "k"))), "FuzzEntryFile", "\(label)-\(name)")
        try await store.compressed().setValue(value, forKey: "k")
        try write(try Data(contentsOf: URL(fileURLWithPath: store.path(forKey: "k"))), "FuzzEntryFile", "\(label)-\(name)-lz4")
    }
}

// LZ4 frames: every level, and block sizes that make several blocks.
for (name, value) in values + [("long", Data(String(repeating: "abcdefgh", count: 20_000).utf8))] {
    for (level, label) in [(CompressionLevel.fast, "fast"), (.high, "high")] {
        try write(try LZ4Frame.compress(value, configuration: .init(level: level)), "FuzzLZ4Frame", "\(name)-\(label)")
    }
}

// JSON: every kind of value, escapes, numbers, nesting.
let documents: [JSON] = [
    .null, true, 0, -1.5e300, "", "esc \"\\/\u{8}\u{c}\n\r\t \u{1} é 😀",
    [1, "two", .null, [3, [4]]],
    ["id": 1, "name": "a", "tags": ["x", "y"], "score": 2.5, "nested": ["a": [1, 2]]],
    ["deep": [[[[[["x"]]]]]]],
]
for (index, document) in documents.enumerated() {
    try write(try document.asData(), "FuzzJSON", "document-\(index)")
}
try write(Data(#" { "spaced" : [ 1 , 2 ] } "#.utf8), "FuzzJSON", "whitespace")
try write(Data(#""\ud83d\ude00 surrogate""#.utf8), "FuzzJSON", "surrogate")
// Databases: SQLiteStore's, with keys k0…k7 (values as FuzzSQLiteDatabase expects them), one
// with an expiry on every row and one with a row removed.
for (label, ttl) in [("forever", Duration?.none), ("expiring", .seconds(3600))] {
    let folder = scratch + "/sqlite-" + label
    do {
        let store = try SQLiteStore(directory: folder, configuration: .init(capacity: nil, timeToLive: ttl))
        for index in 0..<8 {
            try store.setValue(Data(String(repeating: "value \(index) ", count: 1 + index * 37).utf8), forKey: "k\(index)")
        }
        if label == "expiring" { try store.removeValue(forKey: "k3") }
        try store.flush()
    }
    try write(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + SQLiteStore.databaseFileName)), "FuzzSQLiteDatabase", label)
}
print("seeds written to \(output)")
