import Foundation
import HanekeProtocols
import HanekeServer
import MemoryStore
import SQLiteStore

/// Workload 16: what a `KeyValueCache` memory hit costs now that the memory layer checks the
/// folder's change counters (another process's removal or overwrite is seen at once): the default
/// stack beside a `KeyValueCache` over the same layers without the check (memory, chained to an
/// `SQLiteStore`, as the default stack was before), interleaved. A hit checks one 64-bit counter in
/// shared memory; the goal is at most 1.05× the unchecked hit's time.
enum KeyValueCoherenceBenchmarks {
    struct Session: Codable, Sendable {
        var user: String
        var roles: [String]
        var issued: Double
    }

    static func run(_ scale: Scale) async throws -> [Row] {
        let keys = 1_000
        let reads = scale.pick(1_000_000, smoke: 5_000)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("haneke-bench-16-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let configuration = KeyValueCache.Configuration(eviction: .never)
        let checked = KeyValueCache(name: "sessions", directory: root + "/checked", configuration: configuration)
        // The default stack's layers without the check: memory (the same limits and costs), then
        // the database of small values.
        try FileManager.default.createDirectory(atPath: root + "/unchecked", withIntermediateDirectories: true)
        let database = try SQLiteStore(directory: root + "/unchecked")
        let memory = MemoryStore<String, Data>(countLimit: configuration.memoryCountLimit, costLimit: configuration.memoryCostLimit, cost: { $0.count + 256 })
        let unchecked = KeyValueCache(name: "sessions", stack: memory.chained(to: database))
        let names = (0..<keys).map { "session-\($0)" }
        for name in names {
            let session = Session(user: name, roles: ["reader", "writer"], issued: 1_765_000_000)
            try await checked.set(name, to: session, timeToLive: .seconds(1_800))
            try await unchecked.set(name, to: session, timeToLive: .seconds(1_800))
        }
        // A key whose bucket another key's write moved since its own is read from disk once (its
        // counter is shared by the keys of its bucket): read each once before measuring.
        for name in names { _ = try await checked.get(name, as: Session.self) }
        func diskReads() throws -> Int {
            try checked.cache.layerStatistics().filter { $0.name.hasPrefix("disk") }.reduce(0) { $0 + $1.statistics.hits + $1.statistics.misses }
        }
        let diskReadsBefore = try diskReads()
        func rate(_ read: (String) async throws -> Bool) async throws -> Double {
            let seconds = try await Measure.seconds {
                for index in 0..<reads where try await !read(names[index % keys]) {
                    throw BenchmarkFailure(message: "a read missed")
                }
            }
            return Double(reads) / seconds
        }
        // What the caller gets: the session decoded from its JSON.
        let decoded = try await Measure.interleaved(rounds: scale.rounds) {
            try await rate { try await checked.get($0, as: Session.self) != nil }
        } baseline: {
            try await rate { try await unchecked.get($0, as: Session.self) != nil }
        }
        // The layers alone: the entry's JSON, undecoded.
        let raw = try await Measure.interleaved(rounds: scale.rounds) {
            try await rate { try await checked.cache.entry(forKey: $0) != nil }
        } baseline: {
            try await rate { try await unchecked.cache.entry(forKey: $0) != nil }
        }
        guard try diskReads() == diskReadsBefore else {
            throw BenchmarkFailure(message: "the checked stack read its disk: \((try? checked.cache.layerStatistics()) ?? [])")
        }
        try await checked.shutdown()
        func row(_ variant: String, _ result: (subject: Double, baseline: Double), goal: Double?) -> Row {
            let ratio = result.subject / result.baseline
            return Row(
                workload: "16", name: "KeyValueCache memory hit", variant: variant,
                subject: Figure(label: "checks the change counter", value: 1e6 / result.subject, unit: "µs"),
                baseline: Figure(label: "no check (memory → SQLite)", value: 1e6 / result.baseline, unit: "µs"),
                ratio: ratio, goal: goal.map { "≤ \($0)× the unchecked hit's time" } ?? "figure", met: goal.map { ratio >= 1 / $0 },
                note: "median of \(scale.rounds) interleaved rounds of \(reads) reads, \(keys) sessions, 1 task"
            )
        }
        return [
            row("get(_:as:), JSON decoded", decoded, goal: 1.05),
            row("cache.entry(forKey:), JSON bytes", raw, goal: nil),
        ]
    }

    struct BenchmarkFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
