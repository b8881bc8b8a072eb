import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore
import RedisStore

/// Workload RC: a memory tier kept coherent with Redis (`CoherentStore`), on a private
/// redis-server.
///
/// - The read cost: a memory hit through the coherent store beside the same hit through a plain
///   chain (memory → Redis), interleaved; the goal is at most 1.1× the chain's time.
/// - How soon another machine's write reaches this machine: from the writer's `SET` reply until
///   the key has left this machine's memory tier (p50 and p99; the goal is a p99 of 1 ms).
/// - The memory tier's hit ratio on a 95 %-read workload of this machine's own (skewed keys, a
///   tier of a fifth of them), beside the same workload through the plain chain: this machine's
///   own writes must not empty its own tier (`NOLOOP`). The goal is at least 95 % of the chain's.
enum CoherenceBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        let server = try await RedisTestServer()
        var rows: [Row] = []
        rows += try await readCost(server, scale)
        rows += try await noticeLatency(server, scale)
        rows.append(try await hitRatio(server, scale))
        await server.stop()
        return rows
    }

    static let value = Data(repeating: 0x5A, count: 4096)

    /// Suspends until `store` uses its local tier.
    static func untilCoherent<Local, Shared>(_ store: CoherentStore<Local, Shared>) async throws {
        while !store.coherence.isCoherent { try await Task.sleep(for: .milliseconds(1)) }
    }

    /// The read cost, beside a chain whose memory tier keeps the same values without a lifetime
    /// (the goal), and beside one whose memory entries each have an expiry: a memory tier that
    /// holds an entry with an expiry reads the clock on every hit, which the coherent store's
    /// local values avoid (their bound, `maximumLocalLifetime`, is kept by a sweep).
    static func readCost(_ server: RedisTestServer, _ scale: Scale) async throws -> [Row] {
        let keys = 1_000
        let reads = scale.pick(500_000, smoke: 5_000)
        let redis = try RedisStore(url: server.url, keyPrefix: "cost:")
        let coherentMemory = MemoryStore<String, Data>(countLimit: keys * 2)
        let coherent = coherentMemory.coherent(with: redis)
        let chain = MemoryStore<String, Data>(countLimit: keys * 2).chained(to: redis)
        let expiringChain = MemoryStore<String, Data>(countLimit: keys * 2).chained(to: redis)
        try await untilCoherent(coherent)
        for key in 0..<keys {
            try await coherent.setValue(value, forKey: "k\(key)")
            try await chain.setValue(value, forKey: "k\(key)")
            try await expiringChain.setEntry(StoreEntry(value: value, expiresAt: Date().addingTimeInterval(3600)), forKey: "k\(key)")
        }
        func rate(_ read: (String) async throws -> Data?) async throws -> Double {
            let names = (0..<keys).map { "k\($0)" }
            let seconds = try await Measure.seconds {
                for index in 0..<reads where try await read(names[index % keys]) == nil {
                    throw RedisStoreBenchmarks.BenchmarkFailure(message: "a read missed")
                }
            }
            return Double(reads) / seconds
        }
        let result = try await Measure.interleaved(rounds: scale.rounds) {
            try await rate { try await coherent.value(forKey: $0) }
        } baseline: {
            try await rate { try await chain.value(forKey: $0) }
        }
        let withLifetimes = try await Measure.interleaved(rounds: scale.rounds) {
            try await rate { try await coherent.value(forKey: $0) }
        } baseline: {
            try await rate { try await expiringChain.value(forKey: $0) }
        }
        guard coherent.coherence.isCoherent, coherentMemory.statistics.misses == 0 else {
            throw RedisStoreBenchmarks.BenchmarkFailure(message: "the coherent tier missed: \(coherent.coherence)")
        }
        let ratio = result.subject / result.baseline
        return [
            Row(
                workload: "RC", name: "coherent memory hit", variant: "4 KiB, 1,000 keys, 1 task",
                subject: Figure(label: "CoherentStore value(forKey:)", value: 1e6 / result.subject, unit: "µs"),
                baseline: Figure(label: "memory → Redis chain", value: 1e6 / result.baseline, unit: "µs"),
                ratio: ratio, goal: "≤ 1.1× the chain's time", met: ratio >= 1 / 1.1,
                note: "median of \(scale.rounds) interleaved rounds of \(reads) reads"
            ),
            Row(
                workload: "RC", name: "coherent memory hit", variant: "beside entries with an expiry",
                subject: Figure(label: "CoherentStore value(forKey:)", value: 1e6 / withLifetimes.subject, unit: "µs"),
                baseline: Figure(label: "chain, memory entries with an expiry", value: 1e6 / withLifetimes.baseline, unit: "µs"),
                ratio: withLifetimes.subject / withLifetimes.baseline, goal: "figure", met: nil,
                note: "the chain's hit reads the clock (its entries expire); the coherent store's does not (its local bound is kept by a sweep)"
            ),
        ]
    }

    static func noticeLatency(_ server: RedisTestServer, _ scale: Scale) async throws -> [Row] {
        let samples = scale.pick(2_000, smoke: 50)
        let reader = try RedisStore(url: server.url, keyPrefix: "notice:")
        let writer = try RedisStore(url: server.url, keyPrefix: "notice:")
        let memory = MemoryStore<String, Data>(countLimit: 100)
        let store = memory.coherent(with: reader)
        try await untilCoherent(store)
        try await writer.setValue(value, forKey: "k")
        var latencies: [Double] = []
        for _ in 0..<samples {
            // Kept locally: a read that a late notice overtook keeps nothing, so read until it does.
            while memory.value(forKey: "k") == nil { _ = try await store.value(forKey: "k") }
            try await writer.setValue(value, forKey: "k")
            let written = ContinuousClock.now
            while memory.value(forKey: "k") != nil { await Task.yield() }
            latencies.append((ContinuousClock.now - written).seconds * 1e6)
        }
        let p99 = Measure.percentile(latencies, 99)
        return [
            Row(
                workload: "RC", name: "another machine's write noticed", variant: "p50, \(samples) writes",
                subject: Figure(label: "SET reply → key gone locally", value: Measure.percentile(latencies, 50), unit: "µs"),
                baseline: nil, ratio: nil, goal: "figure", met: nil, note: "loopback; a second RedisStore writes"
            ),
            Row(
                workload: "RC", name: "another machine's write noticed", variant: "p99, \(samples) writes",
                subject: Figure(label: "SET reply → key gone locally", value: p99, unit: "µs"),
                baseline: nil, ratio: nil, goal: "p99 ≤ 1 ms", met: p99 <= 1_000, note: "loopback; a second RedisStore writes"
            ),
        ]
    }

    static func hitRatio(_ server: RedisTestServer, _ scale: Scale) async throws -> Row {
        let keys = 10_000
        let operations = scale.pick(200_000, smoke: 2_000)
        var random = SystemRandomNumberGenerator()
        // Skewed: the cube of a uniform number favours the low keys.
        let plan = (0..<operations).map { _ in
            (key: "k\(Int(pow(Double.random(in: 0..<1, using: &random), 3) * Double(keys)))", write: Double.random(in: 0..<1, using: &random) < 0.05)
        }
        func replay<S: Store<String, Data>>(_ store: S, _ memory: MemoryStore<String, Data>) async throws -> Double {
            for step in plan {
                if step.write {
                    try await store.setValue(value, forKey: step.key)
                } else {
                    _ = try await store.value(forKey: step.key)
                }
            }
            let statistics = memory.statistics
            return Double(statistics.hits) / Double(max(1, statistics.hits + statistics.misses))
        }
        let seed = try RedisStore(url: server.url, keyPrefix: "ratio:")
        for key in 0..<keys { try await seed.setValue(value, forKey: "k\(key)") }

        let coherentMemory = MemoryStore<String, Data>(countLimit: keys / 5)
        let coherent = coherentMemory.coherent(with: try RedisStore(url: server.url, keyPrefix: "ratio:"))
        try await untilCoherent(coherent)
        let chainMemory = MemoryStore<String, Data>(countLimit: keys / 5)
        let chain = chainMemory.chained(to: try RedisStore(url: server.url, keyPrefix: "ratio:"))
        let withCoherence = try await replay(coherent, coherentMemory)
        let without = try await replay(chain, chainMemory)
        let ratio = withCoherence / without
        return Row(
            workload: "RC", name: "memory tier hit ratio", variant: "95 % reads, 5 % own writes, \(operations) ops",
            subject: Figure(label: "coherent", value: withCoherence * 100, unit: "%"),
            baseline: Figure(label: "plain chain", value: without * 100, unit: "%"),
            ratio: ratio, goal: "≥ 0.95× the chain's", met: ratio >= 0.95,
            note: "10,000 keys (cube-skewed), a tier of 2,000; \(coherent.coherence.invalidations) keys noticed"
        )
    }
}
