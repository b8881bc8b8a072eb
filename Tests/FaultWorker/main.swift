// A child process for the reliability tests: it writes to a store until it is killed, or until a
// resource limit stops it, and reports on stdout what was acknowledged.
//
//   HanekeFaultWorker write-forever DIR FIRST [compressed|sqlite|routed]
//                                                       write and overwrite keys until killed, with
//                                                       sequence numbers from FIRST up; prints
//                                                       "ack <key> <seq>" after each write (to a
//                                                       FileStore, through LZ4, to an SQLiteStore,
//                                                       or routed between both at 16 KiB)
//   HanekeFaultWorker fill DIR LIMIT                    RLIMIT_FSIZE = LIMIT bytes, then write values
//                                                       of growing size until one fails; prints
//                                                       "failed <code> <message>"
//   HanekeFaultWorker write-once DIR KEY VALUE          one write; prints "ok" or "failed <code> ..."
//   HanekeFaultWorker touch-and-exit DIR                writes a, b, c, d (LZ4 frames of UTF-8 text, as
//                                                       a Cache<String> keeps them) in DIR/original,
//                                                       reads b then a, and calls exit(0) without
//                                                       releasing the store or flushing its journal
//   HanekeFaultWorker touch-and-wait DIR                the same, then prints "ready" and waits to be
//                                                       killed
//   HanekeFaultWorker touch-while-indexing-and-exit DIR the same as touch-and-exit, with the store's
//                                                       index held at its walk until the exit (a
//                                                       process that ends before its store is ready)
//   HanekeFaultWorker churn DIR ENGINE CAPACITY SECONDS WORKER
//                                                       one of several processes sharing one store
//                                                       folder (ENGINE files, sqlite or routed):
//                                                       writes, reads and removes random keys for
//                                                       SECONDS; prints
//                                                       "ready" after its first write, "wrong ..."
//                                                       for a value that is not whole or not its
//                                                       key's or a removed key read back, and at the
//                                                       end "done <writes> <reads> <removals> <wrong>"

import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import SeededRandom
import SQLiteStore

#if canImport(Glibc)
import Glibc
#endif

/// The value for a key and a sequence number: it names both and carries a body derived from them,
/// so a reader can tell a whole value from a torn or foreign one.
enum WorkerValue {
    static func make(key: String, sequence: Int, maximumLength: Int = 30_000) -> Data {
        make(key: key, sequence: sequence, length: 200 + (sequence * 7919) % max(1, maximumLength - 200))
    }

    static func make(key: String, sequence: Int, length: Int) -> Data {
        var bytes = Array("\(key)|\(sequence)|\(length)|".utf8)
        // Only the key's bytes, the sequence and the length: the same in every process (no
        // hashValue, which Swift seeds per process).
        var state = key.utf8.reduce(UInt64(truncatingIfNeeded: sequence &* 2_654_435_761 &+ length)) { $0 &* 31 &+ UInt64($1) }
        while bytes.count < length {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes.append(UInt8(truncatingIfNeeded: state >> 56))
        }
        return Data(bytes)
    }

    /// The key and sequence of a whole, valid value; `nil` for anything else.
    static func parse(_ data: Data) -> (key: String, sequence: Int)? {
        guard let end = data.firstIndex(of: UInt8(ascii: "|")).flatMap({ first in
            data[(first + 1)...].firstIndex(of: UInt8(ascii: "|")).flatMap { data[($0 + 1)...].firstIndex(of: UInt8(ascii: "|")) }
        }) else { return nil }
        let parts = String(decoding: data[..<end], as: UTF8.self).split(separator: "|", omittingEmptySubsequences: false)
        guard parts.count == 3, let sequence = Int(parts[1]), let length = Int(parts[2]), data.count == length else { return nil }
        let key = String(parts[0])
        return make(key: key, sequence: sequence, length: length) == data ? (key, sequence) : nil
    }
}

func line(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: HanekeFaultWorker write-forever|fill|write-once DIR ...\n".utf8))
    exit(2)
}
let directory = arguments[2]

switch arguments[1] {
case "write-forever":
    guard arguments.count >= 4, let first = Int(arguments[3]) else { exit(2) }
    let mode = arguments.count > 4 ? arguments[4] : "plain"
    // Only the stores the mode writes with: a FileStore opened for nothing would index (and
    // rewrite its journal) while the SQLiteStore alone is being killed.
    let file = mode == "sqlite" ? nil : try FileStore(directory: directory, configuration: .init(capacity: nil))
    let store = file?.compressed()
    let small = mode == "sqlite" || mode == "routed" ? try SQLiteStore(directory: directory, configuration: .init(capacity: nil)) : nil
    let routed = mode == "routed" ? small!.routingLargeValues(over: 16 << 10, to: file!) : nil
    var sequence = first
    while true {
        sequence += 1
        let key = "key-\(sequence % 40)"
        let value = WorkerValue.make(key: key, sequence: sequence)
        switch mode {
        case "compressed": try await store!.setValue(value, forKey: key)
        case "sqlite": try small!.setValue(value, forKey: key)
        case "routed": try await routed!.setValue(value, forKey: key)
        default: try file!.setValue(value, forKey: key)
        }
        line("ack \(key) \(sequence)")
    }

case "fill":
    guard arguments.count >= 4, let limit = rlim_t(arguments[3]) else { exit(2) }
    signal(SIGXFSZ, SIG_IGN)   // a write past the limit then fails with EFBIG instead of killing us
    var limits = rlimit(rlim_cur: limit, rlim_max: limit)
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limits)
    let store = try FileStore(directory: directory, configuration: .init(capacity: nil))
    var written = 0
    for i in 0..<1_000 {
        do {
            // Values grow by 1 KiB a write, so one soon needs a file over the limit.
            try store.setValue(WorkerValue.make(key: "fill-\(i)", sequence: i, length: 1_000 + 1_024 * i), forKey: "fill-\(i)")
            written += 1
        } catch let error as StoreError {
            line("failed \(error.code) after \(written) writes: \(error.message)")
            exit(0)
        }
    }
    line("never failed")

case "write-once":
    guard arguments.count >= 5 else { exit(2) }
    do {
        let store = try FileStore(directory: directory, configuration: .init(capacity: nil))
        try store.setValue(Data(arguments[4].utf8), forKey: arguments[3])
        line("ok")
    } catch let error as StoreError {
        line("failed \(error)")
    }

case "touch-and-exit", "touch-and-wait", "touch-while-indexing-and-exit":
    // A global that is never released, like a `Shared` cache.
    var configuration = FileStore.Configuration(capacity: nil)
    if arguments[1] == "touch-while-indexing-and-exit" {
        // The builder waits at its walk until the process ends (on a thread of the indexing
        // executor, not of the cooperative pool).
        let never = DispatchSemaphore(value: 0)
        configuration.indexingHook = { step in if step == .walking { never.wait() } }
    }
    let store = try FileStore(directory: directory + "/original", configuration: configuration)
    let compressed = store.compressed()
    for key in ["a", "b", "c", "d"] {
        try await compressed.setValue(Data("value of \(key)".utf8), forKey: key)
    }
    _ = try await compressed.value(forKey: "b")
    _ = try await compressed.value(forKey: "a")
    if arguments[1] != "touch-and-wait" { exit(0) }
    line("ready")
    _ = readLine()
    exit(0)

case "churn":
    // An error says what it was on the first line of the output (a Swift trap's message would be
    // lost in its backtrace).
    do {
        guard arguments.count >= 7, let capacity = Int(arguments[4]), let seconds = Int(arguments[5]), let worker = UInt64(arguments[6]) else { exit(2) }
        let engine = arguments[3]
        // As a `Cache` builds them: with small values routed to a database, it and the files each
        // have half the capacity; values over 2 KiB (half of them here) go to files.
        let store: AnyStore<String, Data>
        switch engine {
        case "sqlite": store = AnyStore(try SQLiteStore(directory: directory, configuration: .init(capacity: capacity)))
        case "files": store = AnyStore(try FileStore(directory: directory, configuration: .init(capacity: capacity)))
        case "routed":
            let files = try FileStore(directory: directory, configuration: .init(capacity: capacity / 2))
            let small = try SQLiteStore(directory: directory, configuration: .init(capacity: capacity / 2))
            store = AnyStore(small.routingLargeValues(over: 2 << 10, to: files))
        default: exit(2)
        }
        var random = SeededRandomNumberGenerator(seed: worker)
        var (writes, reads, removals, wrong) = (0, 0, 0, 0)
        // Keys every worker writes (values checked whole and of their key), and keys of this worker's
        // own, which it removes: a removed key of its own must never be read back until it writes it again.
        var removed: Set<String> = []
        let end = ContinuousClock.now + .seconds(seconds)
        var sequence = Int(worker) * 1_000_000_000
        while ContinuousClock.now < end {
            sequence += 1
            // More keys than the capacity holds, in every engine.
            let shared = "shared-\(random.next() % 2_000)"
            let own = "w\(worker)-\(random.next() % 100)"
            switch random.next() % 10 {
            case 0..<5:
                let key = random.next() % 2 == 0 ? shared : own
                try await store.setValue(WorkerValue.make(key: key, sequence: sequence, length: 500 + Int(random.next() % 3_000)), forKey: key)
                removed.remove(key)
                writes += 1
                if writes == 1 { line("ready") }
            case 5..<8:
                for key in [shared, own] {
                    reads += 1
                    guard let value = try await store.value(forKey: key) else { continue }
                    if removed.contains(key) {
                        wrong += 1
                        line("wrong \(key): removed, then read back")
                    } else if WorkerValue.parse(value)?.key != key {
                        wrong += 1
                        line("wrong \(key): not a whole value of its own")
                    }
                }
            default:
                try await store.removeValue(forKey: own)
                removed.insert(own)
                removals += 1
            }
        }
        line("done \(writes) \(reads) \(removals) \(wrong)")
    } catch {
        line("failed \(error)")
        exit(1)
    }

default:
    exit(2)
}

