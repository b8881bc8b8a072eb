import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
@testable import HanekeFaultWorker
import MemoryStore
import Testing
import TestSupport

/// Many tasks doing mixed operations on one store at once. Each task owns some keys and checks that
/// every read returns its own last write (or nothing after its removal); every task also writes a
/// few shared keys, whose reads must be whole values written for that key. `make tsan` runs this
/// suite under ThreadSanitizer.
@Suite(.timeLimit(.minutes(5)), .tags(.disk, .slow))
struct StressTests {
    static let tasks = 8
    static let operationsPerTask = 10_000

    struct Report: CustomStringConvertible {
        var operations = 0
        var reads = 0
        var wrongValues = 0
        var problems: [String] = []
        var description: String { "\(operations) operations, \(reads) reads, \(wrongValues) wrong values \(problems.prefix(3))" }
    }

    static func stress(_ store: some Store<String, Data>, seed: UInt64 = 1) async throws -> Report {
        try await withThrowingTaskGroup(of: Report.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var random = SeededRandomNumberGenerator(seed: seed &* 1_000 &+ UInt64(task))
                    var report = Report()
                    var last: [String: Int?] = [:]
                    for operation in 1...operationsPerTask {
                        // A memory store's calls never suspend, nor a file store's reads served
                        // from the page cache: without a turn given back now and then, a task runs
                        // its 10,000 operations in one job (0.3 s of CPU), and the others only ever
                        // meet it at its ends. Every 16 operations: a debug build's 64 took 129 ms
                        // of CPU in one job on a loaded CI machine.
                        if operation % 16 == 0 { await Task.yield() }
                        let shared = random.next() % 8 == 0
                        let key = shared ? "shared-\(random.next() % 6)" : "task\(task)-\(random.next() % 16)"
                        let sequence = task * 1_000_000 + operation
                        switch random.next() % 10 {
                        case 0..<4:
                            try await store.setValue(WorkerValue.make(key: key, sequence: sequence, maximumLength: 1_000), forKey: key)
                            if !shared { last[key] = sequence }
                        case 4..<9:
                            report.reads += 1
                            let read = try await store.value(forKey: key)
                            if shared {
                                if let read, WorkerValue.parse(read)?.key != key {
                                    report.wrongValues += 1
                                    report.problems.append("shared \(key): a value that is not a whole one for it")
                                }
                            } else {
                                let expected = last[key] ?? nil
                                let found = read.flatMap(WorkerValue.parse)
                                if (read == nil ? nil : found?.sequence) != expected || (read != nil && found == nil) {
                                    report.wrongValues += 1
                                    report.problems.append("\(key): expected \(String(describing: expected)), read \(String(describing: found))")
                                }
                            }
                        default:
                            if !shared {
                                try await store.removeValue(forKey: key)
                                last[key] = .some(nil)
                            }
                        }
                        report.operations += 1
                    }
                    return report
                }
            }
            var total = Report()
            for try await report in group {
                total.operations += report.operations
                total.reads += report.reads
                total.wrongValues += report.wrongValues
                total.problems += report.problems
            }
            return total
        }
    }

    @Test func memoryStore() async throws {
        let report = try await Self.stress(MemoryStore<String, Data>())
        print("stress (MemoryStore): \(report)")
        #expect(report.wrongValues == 0, "\(report)")
        #expect(report.operations == Self.tasks * Self.operationsPerTask)
    }

    @Test func fileStore() async throws {
        let store = try TemporaryStore { try FileStore(directory: $0.path, configuration: .init(capacity: nil)) }
        let report = try await Self.stress(store)
        print("stress (FileStore): \(report)")
        #expect(report.wrongValues == 0, "\(report)")
        #expect(store.base.statistics.errors == 0)
        try Self.expectIndexMatchesFiles(store.base)
    }

    @Test func compressedFileStore() async throws {
        let store = try TemporaryStore { try FileStore(directory: $0.path, configuration: .init(capacity: nil)) }
        let report = try await Self.stress(store.base.compressed())
        print("stress (compressed FileStore): \(report)")
        #expect(report.wrongValues == 0, "\(report)")
        try Self.expectIndexMatchesFiles(store.base)
    }

    @Test func fullChain() async throws {
        let disk = try TemporaryStore { try FileStore(directory: $0.path, configuration: .init(capacity: nil)) }
        // A small memory layer: values are evicted and promoted back all the time.
        let chain = MemoryStore<String, Data>(countLimit: 32).chained(to: disk.base.compressed())
        let report = try await Self.stress(chain)
        print("stress (memory → compressed file chain): \(report)")
        #expect(report.wrongValues == 0, "\(report)")
        try Self.expectIndexMatchesFiles(disk.base)
    }

    @Test func fullChainEndingInAFetcher() async throws {
        let disk = try TemporaryStore { try FileStore(directory: $0.path, configuration: .init(capacity: 2 << 20)) }
        let calls = Locked(0)
        let store = MemoryStore<String, Data>(countLimit: 64)
            .chained(to: disk.base.compressed())
            .fetching { key in
                calls.withLock { $0 += 1 }
                return WorkerValue.make(key: key, sequence: 0, maximumLength: 1_000)
            }
        // Every read goes through fetch: whatever happened to the key, the value must be whole and its own.
        let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<Self.tasks {
                group.addTask {
                    var random = SeededRandomNumberGenerator(seed: UInt64(task))
                    var wrong = 0
                    for operation in 0..<Self.operationsPerTask {
                        let key = "key-\(random.next() % 500)"
                        if random.next() % 4 == 0 {
                            try await store.setValue(WorkerValue.make(key: key, sequence: task * 100_000 + operation, maximumLength: 1_000), forKey: key)
                        } else if WorkerValue.parse(try await store.fetch(key))?.key != key {
                            wrong += 1
                        }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        print("stress (chain with fetcher): \(Self.tasks * Self.operationsPerTask) operations, \(wrong) wrong values, \(calls.withLock { $0 }) fetcher calls")
        #expect(wrong == 0)
        #expect(calls.withLock { $0 } >= 1)
    }

    /// The store's count and size agree with the entry files on disk.
    static func expectIndexMatchesFiles(_ store: FileStore) throws {
        let files = try FileManager.default.subpathsOfDirectory(atPath: store.directory).filter {
            let parts = $0.split(separator: "/")
            return parts.count == 2 && parts[1].count == 32
        }
        var bytes = 0
        for file in files {
            var info = stat()
            lstat(store.directory + "/" + file, &info)
            bytes += Int(info.st_blocks) * 512   // blocks on disk, as the store counts them
        }
        #expect(store.count == files.count)
        #expect(store.totalSize == bytes)
    }
}
