import BaselineLock
import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore

/// Workload 11: reads of values due for a refresh (past `refreshAfter`, their background refresh
/// in flight) against fresh memory hits, both through a `FetchingStore` over a `MemoryStore`, under
/// 1,000 concurrent readers; and the number of refreshes that reach the fetcher.
enum RefreshBenchmarks {
    static let freshness = Freshness(timeToLive: .seconds(300), refreshAfter: .seconds(60), serveStaleFor: .seconds(600))

    static func run(_ scale: Scale) async throws -> [Row] {
        let readers = scale.pick(1_000, smoke: 100)
        let readsPerReader = scale.pick(10, smoke: 2)
        let keyCount = scale.pick(100, smoke: 10)
        let rounds = scale.rounds
        let keys = (0..<keyCount).map { "https://api.example.com/users/\($0)" }
        let value = Data(repeating: 0x2A, count: 4096)

        // Due reads: a clock moved past `refreshAfter` before each round, so every key is due; the
        // fetcher takes 1 ms and then holds its answer until the round's reads are done, so every
        // read of the round finds its key due with its one refresh in flight.
        let dueClock = TestClock()
        let calls = PthreadLocked<[String: Int]>([:])
        let gate = PthreadLocked(Gate())
        let due = MemoryStore<String, Data>(countLimit: keyCount * 2, clock: dueClock)
            .fetching(from: ClosureFetcher { key in
                calls.withLock { $0[key, default: 0] += 1 }
                try await Task.sleep(for: .milliseconds(1))
                await gate.withLock { $0 }.wait()
                return value
            }, freshness: freshness, clock: dueClock)
        // Fresh hits: the same kind of store on a clock that stands still, so no read is due.
        let freshClock = TestClock()
        let fresh = MemoryStore<String, Data>(countLimit: keyCount * 2, clock: freshClock)
            .fetching(from: ClosureFetcher { _ in value }, freshness: freshness, clock: freshClock)
        for key in keys {
            try await due.setValue(value, forKey: key)
            try await fresh.setValue(value, forKey: key)
        }

        var dueLatencies: [Double] = []
        var freshLatencies: [Double] = []
        var mixedRounds = 0
        for round in 0..<rounds {
            for side in round % 2 == 0 ? [true, false] : [false, true] {
                if side {
                    dueClock.advance(by: freshness.refreshAfter! + .seconds(1))
                    gate.withLock { $0 = Gate() }
                    let before = due.freshnessStatistics
                    dueLatencies += try await read(due, keys, readers: readers, readsPerReader: readsPerReader)
                    let after = due.freshnessStatistics
                    gate.withLock { $0 }.open()
                    await due.waitForRefreshes()
                    if after.freshHits != before.freshHits || after.staleHits - before.staleHits != readers * readsPerReader { mixedRounds += 1 }
                } else {
                    let before = fresh.freshnessStatistics
                    freshLatencies += try await read(fresh, keys, readers: readers, readsPerReader: readsPerReader)
                    if fresh.freshnessStatistics.freshHits - before.freshHits != readers * readsPerReader { mixedRounds += 1 }
                }
            }
        }

        let callsPerKey = calls.withLock { $0 }
        let fetcherCalls = callsPerKey.values.reduce(0, +)
        let onePerKeyPerWindow = fetcherCalls == keyCount * rounds && callsPerKey.count == keyCount
            && callsPerKey.values.allSatisfy { $0 == rounds } && due.freshnessStatistics.refreshes == keyCount * rounds
        let dueP50 = Measure.percentile(dueLatencies, 50)
        let dueP99 = Measure.percentile(dueLatencies, 99)
        let freshP50 = Measure.percentile(freshLatencies, 50)
        let freshP99 = Measure.percentile(freshLatencies, 99)
        let variant = "\(readers) readers, \(keyCount) keys"
        let purity = mixedRounds == 0
            ? "every read of a due round found its key due, every read of a fresh round a fresh hit"
            : "\(mixedRounds) round(s) had reads of the other kind"
        print(String(
            format: "#11 refresh: %d due reads p50 %.2f µs p99 %.2f µs; %d fresh hits p50 %.2f µs p99 %.2f µs; p99(due)/p99(fresh) = %.2f; fetcher calls %d for %d keys × %d windows (%@)",
            dueLatencies.count, dueP50, dueP99, freshLatencies.count, freshP50, freshP99, dueP99 / freshP99,
            fetcherCalls, keyCount, rounds, onePerKeyPerWindow ? "one per key per window" : "NOT one per key per window"
        ))
        return [
            Row(
                workload: "11", name: "refresh: due read", variant: variant + ", p50",
                subject: Figure(label: "p50", value: dueP50, unit: "µs"),
                baseline: Figure(label: "fresh hit", value: freshP50, unit: "µs"),
                ratio: freshP50 / dueP50, goal: "report", met: nil,
                note: String(format: "%d reads each, due (1 ms fetcher, refresh in flight) and fresh, alternating round by round; %@", dueLatencies.count, purity)
            ),
            Row(
                workload: "11", name: "refresh: due read", variant: variant + ", p99",
                subject: Figure(label: "p99", value: dueP99, unit: "µs"),
                baseline: Figure(label: "fresh hit", value: freshP99, unit: "µs"),
                ratio: freshP99 / dueP99, goal: "p99 ≤ 2× fresh", met: dueP99 <= 2 * freshP99 && mixedRounds == 0,
                note: String(format: "p99(due) / p99(fresh) = %.2f", dueP99 / freshP99)
            ),
            Row(
                workload: "11", name: "refresh: fetcher calls", variant: "\(keyCount) keys × \(rounds) windows",
                subject: Figure(label: "fetcher calls", value: Double(fetcherCalls), unit: "calls"),
                baseline: nil, ratio: nil, goal: "exactly \(keyCount * rounds) calls", met: onePerKeyPerWindow,
                note: "refreshes counted by the store: \(due.freshnessStatistics.refreshes); per key: \(Set(callsPerKey.values).sorted())"
            ),
        ]
    }

    /// `readers` tasks, each reading `readsPerReader` keys (yielding between reads, so that the
    /// readers' reads interleave); the latency of every read, in microseconds.
    static func read(
        _ store: FetchingStore<MemoryStore<String, Data>, ClosureFetcher<String, Data>>,
        _ keys: [String], readers: Int, readsPerReader: Int
    ) async throws -> [Double] {
        try await withThrowingTaskGroup(of: [Double].self) { group in
            for reader in 0..<readers {
                group.addTask {
                    var samples: [Double] = []
                    samples.reserveCapacity(readsPerReader)
                    for j in 0..<readsPerReader {
                        let key = keys[(reader &+ j &* 7) % keys.count]
                        let start = ContinuousClock.now
                        _ = try await store.fetch(key)
                        samples.append(ChainBenchmarks.microseconds(ContinuousClock.now - start))
                        await Task.yield()
                    }
                    return samples
                }
            }
            var all: [Double] = []
            for try await samples in group { all += samples }
            return all
        }
    }
}

/// A one-shot gate: `wait()` suspends until `open()` (at once if already open).
final class Gate: Sendable {
    private let state = PthreadLocked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
