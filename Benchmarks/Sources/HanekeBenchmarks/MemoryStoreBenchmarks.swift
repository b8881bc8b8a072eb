import BaselineLock
import Dispatch
import Foundation
import HanekeProtocols
import MemoryStore

/// Workload 1: MemoryStore get (hit) and set over 100,000 keys of 4 KiB values, on 1 and 2 threads,
/// through the synchronous API and through the async `Store` API, against a Dictionary behind a lock
/// and Foundation's NSCache, interleaved; the same get and set with the adaptive eviction policy; and
/// a write at capacity (one eviction each) in a store of 100,000 entries against one of 1,000.
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
        let adaptive = MemoryStore<String, Data>(countLimit: keyCount * 2, evictionPolicy: .adaptive)
        let dictionary = LockedDictionary()
        for (i, key) in keys.enumerated() {
            store.setValue(value, forKey: key)
            adaptive.setValue(value, forKey: key)
            dictionary.set(value, for: key)
            nsCache.set(value, at: i)
        }

        var rows: [Row] = []
        for threads in [1, 2] {
            let perThread = operations / threads
            /// Gets of `memory` against the locked Dictionary's, interleaved.
            func getAgainstDictionary(_ memory: MemoryStore<String, Data>) -> (subject: Double, baseline: Double) {
                Measure.interleaved(rounds: scale.rounds) {
                    rate(threads: threads, perThread: perThread) { i in _ = memory.value(forKey: keys[order[i]]) }
                } baseline: {
                    rate(threads: threads, perThread: perThread) { i in _ = dictionary.get(keys[order[i]]) }
                }
            }
            /// Overwrites in `memory` against the locked Dictionary's, interleaved.
            func setAgainstDictionary(_ memory: MemoryStore<String, Data>) -> (subject: Double, baseline: Double) {
                Measure.interleaved(rounds: scale.rounds) {
                    rate(threads: threads, perThread: perThread / 2) { i in memory.setValue(value, forKey: keys[order[i]]) }
                } baseline: {
                    rate(threads: threads, perThread: perThread / 2) { i in dictionary.set(value, for: keys[order[i]]) }
                }
            }
            // get, synchronous
            let get = getAgainstDictionary(store)
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
            let set = setAgainstDictionary(store)
            let setNS = Measure.interleaved(rounds: scale.rounds) {
                rate(threads: threads, perThread: perThread / 2) { i in store.setValue(value, forKey: keys[order[i]]) }
            } baseline: {
                rate(threads: threads, perThread: perThread / 2) { i in nsCache.set(value, at: order[i]) }
            }
            rows.append(row("set", threads: threads, api: "sync", subject: set.subject, baseline: set.baseline, baselineLabel: "locked Dictionary", goal: 0.6))
            rows.append(row("set", threads: threads, api: "sync", subject: setNS.subject, baseline: setNS.baseline, baselineLabel: "NSCache", goal: 4))
            // The same get and set under the adaptive policy (a read bumps a counter instead of
            // moving the entry).
            let adaptiveGet = getAgainstDictionary(adaptive)
            rows.append(row("(adaptive) get hit", threads: threads, api: "sync", subject: adaptiveGet.subject, baseline: adaptiveGet.baseline, baselineLabel: "locked Dictionary", goal: 0.75))
            let adaptiveSet = setAgainstDictionary(adaptive)
            rows.append(row("(adaptive) set", threads: threads, api: "sync", subject: adaptiveSet.subject, baseline: adaptiveSet.baseline, baselineLabel: "locked Dictionary", goal: 0.6))
        }
        return rows + writeAtCapacityRows(scale)
    }

    /// A write of a new key into a full store (so one eviction each), in a store of 100,000 entries
    /// against one of 1,000, for each policy: eviction must stay flat with the number of entries
    /// (issue 29: at most 1.5× the cost). Every entry is read once before the writes, so the adaptive
    /// store's evictions promote and go round its main queue as they would in use.
    static func writeAtCapacityRows(_ scale: Scale) -> [Row] {
        let writes = scale.pick(200_000, smoke: 5_000)
        let large = scale.pick(100_000, smoke: 10_000)
        let small = 1_000
        let keys = (0..<(large + writes)).map { "https://example.com/item/\($0)" }
        let value = Data(repeating: 0x2A, count: 64)
        func rate(_ policy: EvictionPolicy, entries: Int) -> Double {
            let store = MemoryStore<String, Data>(countLimit: entries, evictionPolicy: policy)
            for key in keys[0..<entries] {
                store.setValue(value, forKey: key)
                _ = store.value(forKey: key)
            }
            return Self.rate(threads: 1, perThread: writes) { i in store.setValue(value, forKey: keys[large + i]) }
        }
        /// The least any index keyed by a `Dictionary` does: insert the new key, remove the oldest
        /// (kept in a ring), no lock. Its own ratio is what the processor's caches make of 100,000
        /// entries against 1,000.
        func dictionaryRate(entries: Int) -> Double {
            let box = PthreadLocked((dictionary: [String: Data](minimumCapacity: entries), ring: [String](), head: 0))
            box.withLock { state in
                for key in keys[0..<entries] { state.dictionary[key] = value; state.ring.append(key) }
            }
            return Self.rate(threads: 1, perThread: writes) { i in
                box.withLock { state in
                    let key = keys[large + i]
                    state.dictionary[key] = value
                    state.dictionary.removeValue(forKey: state.ring[state.head])
                    state.ring[state.head] = key
                    state.head = state.head + 1 == entries ? 0 : state.head + 1
                }
            }
        }
        let measured: [(String, (subject: Double, baseline: Double))] = [EvictionPolicy.leastRecentlyUsed, .adaptive].map { policy in
            ("MemoryStore write at capacity (\(policy.rawValue))", Measure.interleaved(rounds: scale.rounds) {
                rate(policy, entries: large)
            } baseline: {
                rate(policy, entries: small)
            })
        } + [("Dictionary + FIFO ring write at capacity (reference)", Measure.interleaved(rounds: scale.rounds) {
            dictionaryRate(entries: large)
        } baseline: {
            dictionaryRate(entries: small)
        })]
        return measured.map { name, figures in
            Row(
                workload: "1", name: name, variant: "\(large) entries against \(small)",
                subject: Figure(label: "\(large) entries", value: figures.subject, unit: "ops/s"),
                baseline: Figure(label: "\(small) entries", value: figures.baseline, unit: "ops/s"),
                ratio: figures.subject / figures.baseline, goal: "≥ 0.67× (≤ 1.5× the cost)",
                met: figures.subject / figures.baseline >= 1 / 1.5
            )
        }
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
