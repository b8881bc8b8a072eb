// A fixed piece of work on FileStore for `valgrind --tool=callgrind`, which counts instructions the
// same way on every run however busy the machine (file timings swing widely here):
//
//   FileProbe DIR get|set KEYS OPERATIONS       4 KiB values; DIR must not exist yet
//   FileProbe DIR sget|sset KEYS OPERATIONS     the same on an SQLiteStore, 512 B values
//   FileProbe DIR warm KEYS OPERATIONS          workload 4's warm read: `fetch` through memory →
//                                               LZ4 file store → fetcher, each key first removed
//                                               from memory (so the file layer serves it and it is
//                                               promoted), 4 KiB of JSON, from one task
//   FileProbe DIR aget|cget KEYS OPERATIONS     the async get of 4 KiB of JSON from one task,
//                                               through FileStore (aget) or
//                                               CompressedStore(FileStore) (cget)
//   FileProbe DIR chain KEYS OPERATIONS         workload 9's warm chain: memory (new, unbounded) →
//                                               compressed files, each key read once
//   FileProbe DIR centry|promote KEYS OPS       the chain's halves: the compressed entry read
//                                               with its attributes (centry), and then written
//                                               into a new memory store (promote)
//   FileProbe DIR mix KEYS OPERATIONS           cget, promote and chain interleaved in one loop,
//                                               each on KEYS keys of its own (3 × KEYS files), so
//                                               that the three p50s share the same minutes: a
//                                               line each
//   FileProbe DIR mset|mblock KEYS OPERATIONS   the promotion without the read: entries of 4 KiB
//                                               made (and touched) beforehand, each written once
//                                               into a new, unbounded memory store (mset); or
//                                               only a new 4 KiB block allocated, filled and kept
//                                               per operation (mblock: what keeping a value read
//                                               costs in fresh memory). DIR is not used.
//   FileProbe DIR mchain|mpromote|mmiss K OPS   the chain with no I/O: a new memory store in
//                                               front of one holding K entries of 4 KiB of JSON,
//                                               each key read once through the chain (mchain), or
//                                               by hand: the entry read from the full store and
//                                               written into the empty one (mpromote), or a miss
//                                               in the empty one and the read (mmiss). DIR is
//                                               not used.
//   FileProbe DIR mget KEYS OPERATIONS          memory hits: KEYS plain values of 4 KiB in a
//                                               MemoryStore, read synchronously from the main
//                                               thread (workload 1's hit, alone). DIR is not used.
//
// FILEPROBE_REUSE=1 skips the async modes' fill, to profile the reads alone in a folder an earlier
// run filled (creating files is slow on some virtual disks).
// FILEPROBE_STARTED=FILE: the async modes create FILE when their timed loop starts, after the fill
// (to attach a profiler to the loop alone: `perf record -p PID` once FILE exists).
// FILEPROBE_SIZE=N cuts the JSON document to N bytes (4,096 by default).
// FILEPROBE_VALUES_ONLY=1 puts the chain mode's compressed files behind a store that forwards the
// value calls alone (as workload 9's wrapper did until 2026-12-03), so that the chain reads its
// bottom layer through `Store`'s default, generic entry read.
// FILEPROBE_TAIL=1 prints, after the async modes' line, their p90, p95, p99, p99.9 and maximum, and
// where in the loop the slowest 1 % fell (the first 60 indices): a cost that comes back every N
// operations (a buffer flushed, a chunk of memory taken, a table's resize) shows as a period.
// FILEPROBE_POLICY=lru|adaptive gives the get and set modes' store that eviction policy and a
// capacity of 1 GiB (which they never reach), so that the two policies' costs can be compared.
//
// Run it with OPERATIONS = 0 and with OPERATIONS = N: the difference, divided by N, is the cost of
// one operation in user space and in the system-call entry (the kernel's own work is not counted).
import BaselineLock
import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import MemoryStore
import SQLiteStore

let arguments = CommandLine.arguments
guard arguments.count == 5, let keyCount = Int(arguments[3]), let operations = Int(arguments[4]), ["get", "set", "sget", "sset", "warm", "aget", "cget", "chain", "centry", "promote", "mix", "mset", "mblock", "mget", "mchain", "mpromote", "mmiss"].contains(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: FileProbe DIR get|set|sget|sset|warm|aget|cget|chain|centry|promote|mix|mset|mblock|mget|mchain|mpromote|mmiss KEYS OPERATIONS\n".utf8))
    exit(2)
}
let keys = (0..<keyCount).map { "https://example.com/item/\($0)" }

/// 4 KiB of JSON text, as workload 4 stores.
func jsonDocument() -> Data {
    var json = "["
    var record = 0
    while json.utf8.count < 65536 {
        json += #"{"id":\#(record),"name":"user \#(record)","email":"user\#(record)@example.com","active":\#(record % 3 == 0)},"#
        record += 1
    }
    let size = ProcessInfo.processInfo.environment["FILEPROBE_SIZE"].flatMap(Int.init) ?? 4096
    return Data(json.utf8.prefix(size))
}

/// The CPU time of every thread of the process so far (user and system), in seconds.
@Sendable func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// The CPU time of every thread while `inOneTask`'s loop ran: with the wall time, it shows work a
/// loop hands to other threads (a preparing thread's page clearing).
let loopCPUSeconds = PthreadLocked(0.0)

/// Runs `fill`, then `operation` for each of `operations` keys, in one task, timing the loop; the
/// main thread waits on a semaphore rather than with a top-level `await` (valgrind 3.19 crashes
/// when the main thread parks in Swift's main executor). Returns how many operations found the
/// value, and when the loop started.
func inOneTask(
    fill: @escaping @Sendable () async throws -> Void,
    _ operation: @escaping @Sendable (String) async throws -> Bool
) -> (found: Int, start: ContinuousClock.Instant, latencies: [Double]) {
    let result = PthreadLocked<(found: Int, start: ContinuousClock.Instant, latencies: [Double])>((0, .now, []))
    let done = DispatchSemaphore(value: 0)
    Task.detached { [keys, keyCount, operations] in
        defer { done.signal() }
        do {
            if ProcessInfo.processInfo.environment["FILEPROBE_REUSE"] == nil { try await fill() }
            if let marker = ProcessInfo.processInfo.environment["FILEPROBE_STARTED"] {
                _ = FileManager.default.createFile(atPath: marker, contents: nil)
            }
            var latencies = [Double]()
            latencies.reserveCapacity(operations)
            let cpuBefore = processCPUSeconds()
            let start = ContinuousClock.now
            var found = 0
            for i in 0..<operations {
                let before = ContinuousClock.now
                if try await operation(keys[(i &* 7919) % keyCount]) { found += 1 }
                latencies.append(microseconds(ContinuousClock.now - before))
            }
            loopCPUSeconds.withLock { $0 = processCPUSeconds() - cpuBefore }
            result.withLock { [found, latencies] in $0 = (found, start, latencies) }
        } catch {
            FileHandle.standardError.write(Data("FileProbe: \(error)\n".utf8))
            exit(1)
        }
    }
    done.wait()
    return result.withLock { $0 }
}

let outcome: (found: Int, start: ContinuousClock.Instant, latencies: [Double])
switch arguments[2] {
case "warm":
    // Built as workload 4 builds its chain.
    let document = jsonDocument()
    let memory = MemoryStore<String, Data>(countLimit: keyCount * 2)
    let file = try FileStore(directory: arguments[1], configuration: .init(capacity: nil)).compressed()
    let chain = memory.chained(to: file).fetching { _ in document }
    outcome = inOneTask(fill: { for key in keys { _ = try await chain.fetch(key) } }) { key in
        memory.removeValue(forKey: key)
        return try await chain.fetch(key).count == document.count
    }
case "chain":
    // Workload 9's warm chain: a new, unbounded memory store in front of the compressed files, each
    // key read once (so each read is promoted, and memory keeps every value it read).
    let document = jsonDocument()
    let file = try FileStore(directory: arguments[1], configuration: .init(capacity: nil)).compressed()
    func readThroughChain<Bottom: Store>(to bottom: Bottom) -> (found: Int, start: ContinuousClock.Instant, latencies: [Double])
    where Bottom.Key == String, Bottom.Value == Data {
        let chain = MemoryStore<String, Data>().chained(to: bottom)
        return inOneTask(fill: { for key in keys { try await file.setValue(document, forKey: key) } }) { key in
            try await chain.value(forKey: key)?.count == document.count
        }
    }
    outcome = ProcessInfo.processInfo.environment["FILEPROBE_VALUES_ONLY"] == "1"
        ? readThroughChain(to: ValuesOnly(base: file)) : readThroughChain(to: file)
case "centry", "promote":
    // The warm chain's two halves alone: the compressed entry read with its attributes (what the
    // chain reads from its bottom layer), and that read followed by a write into a new, unbounded
    // memory store (the promotion, without the chain's gate).
    let document = jsonDocument()
    let file = try FileStore(directory: arguments[1], configuration: .init(capacity: nil)).compressed()
    let memory = MemoryStore<String, Data>()
    let promote = arguments[2] == "promote"
    outcome = inOneTask(fill: { for key in keys { try await file.setValue(document, forKey: key) } }) { key in
        guard let entry = try await file.entry(forKey: key) else { return false }
        if promote { try await memory.setEntry(entry, forKey: key) }
        return entry.value.count == document.count
    }
case "mix":
    // Each of the three reads has keys of its own, named after it, made beforehand.
    let document = jsonDocument()
    let file = try FileStore(directory: arguments[1], configuration: .init(capacity: nil)).compressed()
    let promoted = MemoryStore<String, Data>()
    let chain = MemoryStore<String, Data>().chained(to: file)
    let names = ["cget", "promote", "chain"]
    let variants = Dictionary(uniqueKeysWithValues: keys.map { key in (key, names.map { $0 + "/" + key }) })
    let laps = PthreadLocked<[[Double]]>([[], [], []])
    let reads: [@Sendable (String) async throws -> Bool] = [
        { try await file.value(forKey: $0)?.count == document.count },
        { key in
            guard let entry = try await file.entry(forKey: key) else { return false }
            try await promoted.setEntry(entry, forKey: key)
            return entry.value.count == document.count
        },
        { try await chain.value(forKey: $0)?.count == document.count },
    ]
    let mixed = inOneTask(fill: { for key in keys { for name in variants[key]! { try await file.setValue(document, forKey: name) } } }) { key in
        var found = true
        var times = [0.0, 0.0, 0.0]
        // The order turns with each key, so that no read always follows the same one.
        let first = abs(key.hashValue % 3)
        for step in 0..<3 {
            let index = (first + step) % 3
            let before = ContinuousClock.now
            found = try await reads[index](variants[key]![index]) && found
            times[index] = microseconds(ContinuousClock.now - before)
        }
        laps.withLock { [times] laps in for index in 0..<3 { laps[index].append(times[index]) } }
        return found
    }
    for (name, samples) in zip(names, laps.withLock { $0 }) {
        print("\(name) \(mixed.found) \(percentiles(samples))")
    }
    exit(0)
case "mset", "mblock":
    // Each key has an entry of its own; with OPERATIONS above KEYS, keys are written again.
    let document = jsonDocument()
    let attributes = EntryAttributes(storedAt: Date(timeIntervalSinceReferenceDate: 800_000_000))
    let entries = Dictionary(uniqueKeysWithValues: keys.enumerated().map { index, key in
        var value = document
        value[0] = UInt8(truncatingIfNeeded: index)   // a block of its own, touched
        return (key, StoreEntry(value: value, attributes: attributes))
    })
    let memory = MemoryStore<String, Data>()
    let kept = PthreadLocked<[Data]>([])
    let blocks = arguments[2] == "mblock"
    outcome = inOneTask(fill: {}) { key in
        let entry = entries[key]!
        if blocks {
            let block = entry.value.withUnsafeBytes { Data($0) }   // a new block, as a decoded value is
            kept.withLock { $0.append(block) }
        } else {
            try await memory.setEntry(entry, forKey: key)
        }
        return true
    }
case "mchain", "mpromote", "mmiss":
    let document = jsonDocument()
    let bottom = MemoryStore<String, Data>()
    let attributes = EntryAttributes(storedAt: Date(timeIntervalSinceReferenceDate: 800_000_000))
    for key in keys { try bottom.setEntry(StoreEntry(value: document, attributes: attributes), forKey: key) }
    let top = MemoryStore<String, Data>()
    let chain = top.chained(to: bottom)
    let mode = arguments[2]
    outcome = inOneTask(fill: {}) { key in
        if mode == "mchain" { return try await chain.value(forKey: key)?.count == document.count }
        if mode == "mmiss" {
            // Through `Store`, as the chain asks its top layer (not MemoryStore's synchronous get).
            let missed = try await asyncValue(of: top, forKey: key) == nil
            let found = try await bottom.entry(forKey: key) != nil
            return missed && found
        }
        guard let entry = try await bottom.entry(forKey: key) else { return false }
        try await top.setEntry(entry, forKey: key)
        return true
    }
case "mget":
    let memory = MemoryStore<String, Data>()
    let document = jsonDocument()
    for key in keys { memory.setValue(document, forKey: key) }
    var found = 0
    let start = ContinuousClock.now
    for i in 0..<operations where memory.value(forKey: keys[(i &* 7919) % keyCount]) != nil {
        found += 1
    }
    outcome = (found, start, [])
case "aget", "cget":
    let document = jsonDocument()
    let file = try FileStore(directory: arguments[1], configuration: .init(capacity: nil))
    let store: any Store<String, Data> = arguments[2] == "cget" ? file.compressed() : file
    outcome = inOneTask(fill: { for key in keys { try await store.setValue(document, forKey: key) } }) { key in
        try await store.value(forKey: key)?.count == document.count
    }
default:
    let policy = ProcessInfo.processInfo.environment["FILEPROBE_POLICY"].flatMap(EvictionPolicy.init(rawValue:))
    let capacity = policy == nil ? nil : 1 << 30
    let sqlite = arguments[2].hasPrefix("s")
    let value = Data(repeating: 0x2A, count: sqlite ? 512 : 4096)
    let store: any SyncStore = sqlite
        ? try SQLiteStore(directory: arguments[1], configuration: .init(capacity: capacity, evictionPolicy: policy ?? .leastRecentlyUsed))
        : try FileStore(directory: arguments[1], configuration: .init(capacity: capacity, evictionPolicy: policy ?? .leastRecentlyUsed))
    for key in keys { try store.setValue(value, forKey: key) }
    var found = 0
    let start = ContinuousClock.now
    for i in 0..<operations {
        let key = keys[(i &* 7919) % keyCount]
        if arguments[2].hasSuffix("get") {
            if try store.value(forKey: key) != nil { found += 1 }
        } else {
            try store.setValue(value, forKey: key)
        }
    }
    outcome = (found, start, [])
}
/// The synchronous get and set both disk engines have.
protocol SyncStore {
    func value(forKey key: String) throws -> Data?
    func setValue(_ value: Data, forKey key: String) throws
}

extension FileStore: SyncStore {}
extension SQLiteStore: SyncStore {}

/// The p50 and p99 of per-operation latencies in µs, as every timed mode prints them.
func percentiles(_ latencies: [Double]) -> String {
    let sorted = latencies.sorted()
    return String(format: "p50 %.2f µs p99 %.2f µs", quantile(sorted, perMille: 500), quantile(sorted, perMille: 990))
}

/// The sample at `perMille` thousandths of `sorted` (ascending, not empty).
func quantile(_ sorted: [Double], perMille: Int) -> Double {
    sorted[min(sorted.count - 1, sorted.count * perMille / 1000)]
}

/// `store`'s asynchronous `value(forKey:)`, the requirement of `Store` a generic caller reaches.
@Sendable func asyncValue<S: Store>(of store: S, forKey key: S.Key) async throws -> S.Value? {
    try await store.value(forKey: key)
}

/// A duration in microseconds.
@Sendable func microseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

let (found, start, latencies) = outcome
let elapsed = ContinuousClock.now - start
// The count, then the time per operation (for timing runs; callgrind ignores it), and for the async
// modes each operation's p50 and p99 (a mean hides where the time goes: a dictionary's resize or a
// new chunk of memory costs one operation much, the median none).
var line = "\(found) \(microseconds(elapsed) / Double(max(1, operations))) µs"
if !latencies.isEmpty {
    line += " " + percentiles(latencies) + String(format: " cpu %.2f µs", loopCPUSeconds.withLock { $0 } * 1e6 / Double(max(1, operations)))
}
print(line)

/// A store that forwards the value calls of `base` alone, and takes `Store`'s defaults for the
/// rest (entries, attributes): what FILEPROBE_VALUES_ONLY chains to.
struct ValuesOnly<Base: Store>: Store where Base.Key == String, Base.Value == Data {
    let base: Base
    func value(forKey key: String) async throws -> Data? { try await base.value(forKey: key) }
    func value<T: Sendable>(forKey key: String, transformedBy transform: @escaping @Sendable (Data) throws -> T) async throws -> T? {
        try await base.value(forKey: key, transformedBy: transform)
    }
    func setValue(_ value: Data, forKey key: String) async throws { try await base.setValue(value, forKey: key) }
    func removeValue(forKey key: String) async throws { try await base.removeValue(forKey: key) }
    func removeAll() async throws { try await base.removeAll() }
}
if ProcessInfo.processInfo.environment["FILEPROBE_TAIL"] == "1", !latencies.isEmpty {
    let sorted = latencies.sorted()
    let tail = [900, 950, 990, 999].map { quantile(sorted, perMille: $0) }
    print(String(format: "p90 %.2f p95 %.2f p99 %.2f p99.9 %.2f max %.2f µs", tail[0], tail[1], tail[2], tail[3], sorted[sorted.count - 1]))
    let threshold = tail[2]
    let slowest = latencies.indices.filter { latencies[$0] >= threshold }
    print("slowest 1 % at", slowest.prefix(60).map(String.init).joined(separator: " "))
}
