import BaselineLock
import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import MemoryStore

/// Workloads 4, 6 and 7: a full chain (memory → LZ4 file → fetcher) read hot, warm and cold; writes
/// at capacity with 1,000 and 100,000 entries; and single flight under 1,000 concurrent fetches.
enum ChainBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        var rows: [Row] = []
        rows += try await chainReads(scale)
        rows += try writesAtCapacity(scale)
        rows.append(try await singleFlight(scale))
        return rows
    }

    // MARK: - 4: hot, warm, cold

    static func chainReads(_ scale: Scale) async throws -> [Row] {
        let root = RawFiles.scratchDirectory("chain")
        defer { RawFiles.removeDirectory(root) }
        let keyCount = scale.pick(2_000, smoke: 100)
        let keys = (0..<keyCount).map { "https://api.example.com/users/\($0)" }
        let document = CompressedStoreBenchmarks.jsonCorpus(bytes: 4096).prefix(4096)
        let memory = MemoryStore<String, Data>(countLimit: keyCount * 2, name: "memory")
        let file = try FileStore(directory: root + "/chain", configuration: .init(capacity: nil)).compressed()
        let chain = memory.chained(to: file).fetching { _ in Data(document) }

        // Cold: every read misses both layers and asks the fetcher (which answers at once).
        var cold: [Double] = []
        for key in keys {
            let start = ContinuousClock.now
            _ = try await chain.fetch(key)
            cold.append(microseconds(ContinuousClock.now - start))
        }

        // Warm (the key not in memory, so the file layer serves and the value is promoted) against the
        // file layer alone, interleaved key by key so that neither side warms caches for the other.
        var warm: [Double] = []
        var fileAlone: [Double] = []
        for round in 0..<min(scale.rounds, 5) {
            for key in keys {
                memory.removeValue(forKey: key)
                let chainFirst = round % 2 == 0
                if !chainFirst { fileAlone += try await latencies([key]) { try await file.value(forKey: $0)! } }
                warm += try await latencies([key]) { try await chain.fetch($0) }
                if chainFirst { fileAlone += try await latencies([key]) { try await file.value(forKey: $0)! } }
            }
        }

        // Hot (memory hits through the chain) against a memory-only lookup.
        var hot: [Double] = []
        var memoryAlone: [Double] = []
        for key in keys { _ = try await chain.fetch(key) }
        for round in 0..<scale.rounds {
            if round % 2 == 0 {
                hot += try await latencies(keys) { try await chain.fetch($0) }
                memoryAlone += try await latencies(keys) { memory.value(forKey: $0)! }
            } else {
                memoryAlone += try await latencies(keys) { memory.value(forKey: $0)! }
                hot += try await latencies(keys) { try await chain.fetch($0) }
            }
        }

        let hotP50 = Measure.percentile(hot, 50)
        let warmP50 = Measure.percentile(warm, 50)
        let fileP50 = Measure.percentile(fileAlone, 50)
        return [
            Row(
                workload: "4", name: "chain read", variant: "hot (memory)",
                subject: Figure(label: "p50", value: hotP50, unit: "µs"),
                baseline: Figure(label: "memory only", value: Measure.percentile(memoryAlone, 50), unit: "µs"),
                ratio: Measure.percentile(memoryAlone, 50) / hotP50, goal: "p50 < 1 µs", met: hotP50 < 1,
                note: String(format: "p99 %.2f µs (memory only: %.2f µs)", Measure.percentile(hot, 99), Measure.percentile(memoryAlone, 99))
            ),
            Row(
                workload: "4", name: "chain read", variant: "warm (LZ4 file)",
                subject: Figure(label: "p50", value: warmP50, unit: "µs"),
                baseline: Figure(label: "file layer alone", value: fileP50, unit: "µs"),
                ratio: fileP50 / warmP50, goal: "≤ 1.3× file layer", met: warmP50 <= 1.3 * fileP50,
                note: String(format: "p99 %.1f µs (file layer alone: %.1f µs); includes the promotion into memory", Measure.percentile(warm, 99), Measure.percentile(fileAlone, 99))
            ),
            Row(
                workload: "4", name: "chain read", variant: "cold (fetcher)",
                subject: Figure(label: "p50", value: Measure.percentile(cold, 50), unit: "µs"),
                baseline: nil, ratio: nil, goal: "report", met: nil,
                note: String(format: "p99 %.1f µs: two misses, an instant fetcher, a compressed file write and a memory write", Measure.percentile(cold, 99))
            ),
        ]
    }

    static func latencies(_ keys: [String], _ read: (String) async throws -> Data) async throws -> [Double] {
        var samples: [Double] = []
        samples.reserveCapacity(keys.count)
        for key in keys {
            let start = ContinuousClock.now
            _ = try await read(key)
            samples.append(microseconds(ContinuousClock.now - start))
        }
        return samples
    }

    // MARK: - 6: writes at capacity

    static func writesAtCapacity(_ scale: Scale) throws -> [Row] {
        let sizes = scale.smoke ? [1_000, 2_000] : [1_000, 100_000]
        let writes = scale.pick(2_000, smoke: 200)
        let value = Data(count: 100)
        var fileCosts: [Int: (atCapacity: Double, below: Double)] = [:]
        var memoryCosts: [Int: (atCapacity: Double, below: Double)] = [:]
        for entries in sizes {
            let root = RawFiles.scratchDirectory("capacity-\(entries)")
            defer { RawFiles.removeDirectory(root) }
            // Full by its entry count: each write evicts the least recently used entry, as it would
            // at a capacity in bytes (one small file is one block either way).
            let full = try FileStore(directory: root + "/full", configuration: .init(capacity: nil, countLimit: entries))
            let roomy = try FileStore(directory: root + "/roomy", configuration: .init(capacity: nil))
            for i in 0..<entries {
                let key = "fill-" + padded(i)
                try full.setValue(value, forKey: key)
                try roomy.setValue(value, forKey: key)
            }
            precondition(full.count == entries)
            var round = 0
            let file = try Measure.interleaved(rounds: min(scale.rounds, 5)) {
                round += 1
                let seconds = try Measure.seconds {
                    for i in 0..<writes { try full.setValue(value, forKey: "new-" + padded(round, to: 2) + padded(i, to: 6)) }
                }
                return Double(writes) / seconds
            } baseline: {
                let seconds = try Measure.seconds {
                    for i in 0..<writes { try roomy.setValue(value, forKey: "new-" + padded(round, to: 2) + padded(i, to: 6)) }
                }
                return Double(writes) / seconds
            }
            precondition(full.count == entries, "the full store should stay at capacity")
            fileCosts[entries] = (1e6 / file.subject, 1e6 / file.baseline)

            let memoryFull = MemoryStore<String, Data>(countLimit: entries)
            let memoryRoomy = MemoryStore<String, Data>()
            for i in 0..<entries {
                memoryFull.setValue(value, forKey: "fill-\(i)")
                memoryRoomy.setValue(value, forKey: "fill-\(i)")
            }
            let memoryWrites = writes * 100
            var memoryRound = 0
            let memory = Measure.interleaved(rounds: scale.rounds) {
                memoryRound += 1
                let seconds = Measure.seconds {
                    for i in 0..<memoryWrites { memoryFull.setValue(value, forKey: "new-\(memoryRound)-\(i)") }
                }
                return Double(memoryWrites) / seconds
            } baseline: {
                let seconds = Measure.seconds {
                    for i in 0..<memoryWrites { memoryRoomy.setValue(value, forKey: "new-\(memoryRound)-\(i)") }
                }
                return Double(memoryWrites) / seconds
            }
            memoryCosts[entries] = (1e6 / memory.subject, 1e6 / memory.baseline)
        }
        let (small, large) = (sizes[0], sizes[1])
        func rows(_ layer: String, _ costs: [Int: (atCapacity: Double, below: Double)]) -> [Row] {
            let growth = costs[large]!.atCapacity / costs[small]!.atCapacity
            return [
                Row(
                    workload: "6", name: "\(layer) write at capacity", variant: "\(small) entries",
                    subject: Figure(label: "per write", value: costs[small]!.atCapacity, unit: "µs"),
                    baseline: Figure(label: "below capacity", value: costs[small]!.below, unit: "µs"),
                    ratio: costs[small]!.below / costs[small]!.atCapacity, goal: "report", met: nil
                ),
                Row(
                    workload: "6", name: "\(layer) write at capacity", variant: "\(large) entries",
                    subject: Figure(label: "per write", value: costs[large]!.atCapacity, unit: "µs"),
                    baseline: Figure(label: "below capacity", value: costs[large]!.below, unit: "µs"),
                    ratio: costs[large]!.below / costs[large]!.atCapacity, goal: "≤ 1.5× the cost at \(small)", met: growth <= 1.5,
                    note: String(format: "per-write cost at %d entries is %.2f× the cost at %d", large, growth, small)
                ),
            ]
        }
        return rows("FileStore", fileCosts) + rows("MemoryStore", memoryCosts)
    }

    // MARK: - 7: single flight

    static func singleFlight(_ scale: Scale) async throws -> Row {
        let calls = PthreadLocked(0)
        let fetches = scale.pick(1_000, smoke: 100)
        let store = MemoryStore<String, Data>().fetching { key in
            calls.withLock { $0 += 1 }
            try await Task.sleep(for: .milliseconds(5))   // a source that takes a while
            return Data(key.utf8)
        }
        let latencies = try await withThrowingTaskGroup(of: Double.self) { group in
            for i in 0..<fetches {
                group.addTask {
                    let start = ContinuousClock.now
                    let value = try await store.fetch("key-\(i % 10)")
                    precondition(value == Data("key-\(i % 10)".utf8))
                    return microseconds(ContinuousClock.now - start)
                }
            }
            var all: [Double] = []
            for try await latency in group { all.append(latency) }
            return all
        }
        let count = calls.withLock { $0 }
        return Row(
            workload: "7", name: "single flight", variant: "\(fetches) fetches, 10 keys",
            subject: Figure(label: "fetcher calls", value: Double(count), unit: "calls"),
            baseline: nil, ratio: nil, goal: "exactly 10 calls", met: count == 10,
            note: String(format: "latency p50 %.2f ms, p99 %.2f ms (the source takes 5 ms)", Measure.percentile(latencies, 50) / 1000, Measure.percentile(latencies, 99) / 1000)
        )
    }

    /// `value` with leading zeros (String(format:) ignores field widths on Linux).
    static func padded(_ value: Int, to width: Int = 7) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    static func microseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
    }
}
