// One "machine" of the shared-tier test (Tests/RedisStoreTests/SharedTierTests.swift): a process
// with its own memory and disk tiers in front of a Redis shared with other processes, and a
// network fetcher behind it. It fetches the URLs given on the command line and prints, as JSON,
// a digest of each value and what each layer did.
//
//     RedisStorePeer <redis URL> <key prefix> <cache directory> <url>...

import Foundation
import Haneke
import RedisStore

/// What the peer prints; SharedTierTests decodes it.
struct Report: Codable {
    struct Layer: Codable {
        var name: String
        var hits: Int
        var misses: Int
        var writes: Int
        var errors: Int
    }
    /// The value fetched for each URL, as text.
    var values: [String: String]
    var layers: [Layer]

    func layer(_ name: String) -> Layer? { layers.first { $0.name == name } }
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: RedisStorePeer <redis URL> <key prefix> <cache directory> <url>...\n".utf8))
    exit(2)
}
let (redisURL, prefix, directory) = (arguments[1], arguments[2], arguments[3])
let urls = Array(arguments.dropFirst(3))

do {
    let redis = try RedisStore(url: redisURL, keyPrefix: prefix)
    let stack = MemoryStore<String, Data>(countLimit: 1_000, name: "memory")
        .chained(to: try FileStore(directory: directory).compressed())
        .chained(to: redis)
        .fetching(from: NetworkFetcher<Data>())
    var values: [String: String] = [:]
    for url in urls {
        values[url] = String(decoding: try await stack.fetch(url), as: UTF8.self)
    }
    let layers = stack.layerStatistics.map {
        Report.Layer(name: $0.name, hits: $0.statistics.hits, misses: $0.statistics.misses, writes: $0.statistics.writes, errors: $0.statistics.errors)
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    FileHandle.standardOutput.write(try encoder.encode(Report(values: values, layers: layers)))
} catch {
    FileHandle.standardError.write(Data("RedisStorePeer: \(error)\n".utf8))
    exit(1)
}
