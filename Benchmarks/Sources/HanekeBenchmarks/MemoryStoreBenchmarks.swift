import BaselineLock
import Dispatch
import Foundation
import HanekeProtocols
import MemoryStore

/// Workload 1: MemoryStore get (hit) and set over 100,000 keys of 4 KiB values, on 1 and 2 threads,
/// through the synchronous API and through the async `Store` API, against a Dictionary behind a lock
/// and Foundation's NSCache, interleaved.
enum MemoryStoreBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        let keyCount = scale.pick(100_000, smoke: 1_000)
        let operations = scale.pick(1_000_000, smoke: 10_000)
        let keys = (0..<keyCount).map { "https://example.com/item/\($0)" }
        let nsCache = NSCacheBaseline(keys: keys, countLimit: keyCount * 2)
        let value = Data(repeating: 0x2A, count: 4096)
        var random = SystemRandomNumberGenerator()
        let order = (0..<operations).map { _ in Int.random(in: 0..<keyCount, using: &random) }

        let store = MemoryStore<String, Data>(countLimit: keyCount * 2)
        let dictionary = LockedDictionary()
        for (i, key) in keys.enumerated() {
            store.setValue(value, forKey: key)
            dictionary.set(value, for: key)
            nsCache.set(value, at: i)
        }

        var rows: [Row] = []
        for threads in [1, 2] {
            let perThread = operations / threads
            // get, synchronous
            let get = Measure.interleaved(rounds: scale.rounds) {
                rate(threads: threads, perThread: perThread) { i in _ = store.value(forKey: keys[order[i]]) }
            } baseline: {
                rate(threads: threads, perThread: perThread) { i in _ = dictionary.get(keys[order[i]]) }
            }
            let getNS = Measure.interleaved(rounds: scale.rounds) {
                rate(threads: threads, perThread: perThread) { i in _ = store.value(forKey: keys[order[i]]) }
            } baseline: {
                rate(threads: threads, perThread: perThread) { i in _ = nsCache.get(order[i]) }
            }
            rows.append(row("get hit", threads: threads, api: "sync", subject: get.subject, baseline: get.baseline, baselineLabel: "locked Dictionary", goal: 0.75))
            rows.append(row("get hit", threads: threads, api: "sync", subject: getNS.subject, baseline: getNS.baseline, baselineLabel: "NSCache", goal: 4))
            // get, async Store API (generic, as a chain calls it)
            let asyncGet = try await Measure.interleaved(rounds: scale.rounds) {
                try await asyncRate(threads: threads, perThread: perThread, store: store, keys: keys, order: order)
            } baseline: {
                rate(threads: threads, perThread: perThread) { i in _ = dictionary.get(keys[order[i]]) }
            }
            rows.append(row("get hit", threads: threads, api: "async", subject: asyncGet.subject, baseline: asyncGet.baseline, baselineLabel: "locked Dictionary", goal: 0.75))
            // set (overwrite of present keys)
            let set = Measure.interleaved(rounds: scale.rounds) {
                rate(threads: threads, perThread: perThread / 2) { i in store.setValue(value, forKey: keys[order[i]]) }
            } baseline: {
                rate(threads: threads, perThread: perThread / 2) { i in dictionary.set(value, for: keys[order[i]]) }
            }
            let setNS = Measure.interleaved(rounds: scale.rounds) {
                rate(threads: threads, perThread: perThread / 2) { i in store.setValue(value, forKey: keys[order[i]]) }
            } baseline: {
                rate(threads: threads, perThread: perThread / 2) { i in nsCache.set(value, at: order[i]) }
            }
            rows.append(row("set", threads: threads, api: "sync", subject: set.subject, baseline: set.baseline, baselineLabel: "locked Dictionary", goal: 0.6))
            rows.append(row("set", threads: threads, api: "sync", subject: setNS.subject, baseline: setNS.baseline, baselineLabel: "NSCache", goal: 4))
        }
        return rows
    }

    static func row(_ name: String, threads: Int, api: String, subject: Double, baseline: Double, baselineLabel: String, goal: Double) -> Row {
        Row(
            workload: "1", name: "MemoryStore \(name)", variant: "\(threads) thread\(threads == 1 ? "" : "s"), \(api)",
            subject: Figure(label: "MemoryStore", value: subject, unit: "ops/s"),
            baseline: Figure(label: baselineLabel, value: baseline, unit: "ops/s"),
            ratio: subject / baseline, goal: String(format: "≥ %g×", goal), met: subject / baseline >= goal
        )
    }

    /// Operations per second of `body(i)` for `i` in `0..<perThread` on each of `threads` threads.
    static func rate(threads: Int, perThread: Int, _ body: @Sendable (Int) -> Void) -> Double {
        let seconds = Measure.seconds {
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                let offset = thread * perThread
                for i in offset..<(offset + perThread) { body(i) }
            }
        }
        return Double(threads * perThread) / seconds
    }

    /// The same reads through the async `Store` requirement, from `threads` tasks.
    static func asyncRate(threads: Int, perThread: Int, store: some Store<String, Data>, keys: [String], order: [Int]) async throws -> Double {
        let seconds = try await Measure.seconds {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for thread in 0..<threads {
                    group.addTask {
                        let offset = thread * perThread
                        for i in offset..<(offset + perThread) { _ = try await store.value(forKey: keys[order[i]]) }
                    }
                }
                try await group.waitForAll()
            }
        }
        return Double(threads * perThread) / seconds
    }
}

/// The baseline: a Dictionary behind a lock (a pthread lock box, the same code as MemoryStore's).
final class LockedDictionary: Sendable {
    private let storage = PthreadLocked<[String: Data]>([:])
    func get(_ key: String) -> Data? { storage.withLock { $0[key] } }
    func set(_ value: Data, for key: String) { storage.withLock { $0[key] = value } }
}

/// The other baseline: Foundation's NSCache, with its keys made `NSString`s before timing.
///
/// `@unchecked Sendable`: NSCache is documented thread-safe, but swift-corelibs-foundation does not
/// mark it (or NSString) `Sendable`; this wrapper only forwards to it, from benchmark threads.
final class NSCacheBaseline: @unchecked Sendable {
    private let cache = NSCache<NSString, NSData>()
    private let keys: [NSString]

    init(keys: [String], countLimit: Int) {
        self.keys = keys.map { $0 as NSString }
        cache.countLimit = countLimit
    }

    func get(_ index: Int) -> NSData? { cache.object(forKey: keys[index]) }
    func set(_ value: Data, at index: Int) { cache.setObject(value as NSData, forKey: keys[index]) }
}
