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
if arguments.first == "coherent" {
    await runCoherentMachine(Array(arguments.dropFirst()))
    exit(0)
}
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

/// The monotonic clock's time in nanoseconds: the same clock in every process of the machine, so
/// that a parent can subtract a child's reading from its own.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// The other mode: one machine of the coherence test (Tests/RedisStoreTests/CoherentStoreTests.swift),
/// with memory and disk tiers kept coherent with Redis.
///
///     RedisStorePeer coherent <redis URL> <key prefix> <cache directory> <rounds>
///
/// Once coherent, the machine reads "v0" of key "k" (which the parent wrote first) until its memory
/// tier holds it, and prints "holding 0". Round i (from 1): the parent writes "v<i>" in Redis; the
/// machine waits until "k" has left both local tiers, prints "gone i <monotonic nanoseconds>",
/// reads "v<i>" through its store until it is kept locally again, and prints "holding i". After
/// the last round the parent removes "k": the machine waits until its tiers lost it, reads it
/// 10,000 times, and prints "stale <reads that were not a miss>" and "noticed <keys noticed>".
func runCoherentMachine(_ arguments: [String]) async {
    guard arguments.count == 4, let rounds = Int(arguments[3]) else {
        FileHandle.standardError.write(Data("usage: RedisStorePeer coherent <redis URL> <key prefix> <cache directory> <rounds>\n".utf8))
        exit(2)
    }
    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    do {
        let redis = try RedisStore(url: arguments[0], keyPrefix: arguments[1])
        let memory = MemoryStore<String, Data>(countLimit: 100, name: "memory")
        let disk = try FileStore(directory: arguments[2]).compressed()
        let store = memory.chained(to: disk).coherent(with: redis)
        func holdsLocally() async throws -> Bool {
            if memory.value(forKey: "k") != nil { return true }
            return try await disk.value(forKey: "k") != nil
        }
        while !store.coherence.isCoherent { try await Task.sleep(for: .milliseconds(1)) }
        // The count of keys noticed moves once a key has left both tiers.
        func untilNoticed(_ count: Int) async throws {
            while store.coherence.invalidations < count { await Task.yield() }
            if try await holdsLocally() { throw StoreError(.io, "a noticed key is still held locally") }
        }
        for round in 0...rounds {
            if round > 0 {
                try await untilNoticed(round)
                say("gone \(round) \(monotonicNanoseconds())")
            }
            // A read that a late notice overtook keeps nothing locally: read until it does.
            while memory.value(forKey: "k") != Data("v\(round)".utf8) {
                _ = try await store.value(forKey: "k")
            }
            say("holding \(round)")
        }
        try await untilNoticed(rounds + 1)
        var stale = 0
        for _ in 0..<10_000 where try await store.value(forKey: "k") != nil { stale += 1 }
        say("stale \(stale)")
        say("noticed \(store.coherence.invalidations)")
    } catch {
        FileHandle.standardError.write(Data("RedisStorePeer coherent: \(error)\n".utf8))
        exit(1)
    }
}
