import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
@testable import SQLiteStore
import Testing
import TestSupport

/// Several processes on one store folder, as a server's workers use one cache: four workers write,
/// read and remove random keys in one 4 MiB folder for 20 seconds while the folder is sampled every
/// 100 ms. The capacity holds for the folder as a whole — `du` of its files within the capacity
/// plus 10 % — and SQLite's log within the room the store keeps for it, whatever the number of
/// writers; no worker reads a wrong value or a key it removed.
///
/// Before the store ran its own checkpoints, two writers made the log grow without bound (each
/// keeps reading the log, so SQLite's passive checkpoints could never start it over): 852 MB in
/// 10 s for a 4 MiB store.
@Suite(.serialized, .timeLimit(.minutes(3)), .offThePool, .tags(.disk, .process, .slow))
struct SharedFolderTests {
    static let capacity = 4 << 20

    struct Sample {
        var files = 0
        var log = 0
    }

    /// What `du` counts for the regular files of `path` (shard folders aside), and for the log.
    static func sample(_ path: String) -> Sample {
        var sample = Sample()
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []
        for name in names {
            var info = stat()
            guard lstat(path + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            sample.files += Int(info.st_blocks) * 512
            if name == SQLiteStore.databaseFileName + "-wal" { sample.log = Int(info.st_size) }
        }
        return sample
    }

    @Test(arguments: ["files", "sqlite", "routed"])
    func fourWritersKeepTheFolderWithinItsCapacity(engine: String) async throws {
        let directory = try TemporaryDirectory(prefix: "shared-\(engine)")
        let folder = directory.appending("store")
        let worker = ChildProcess.binary("HanekeFaultWorker")
        var children: [ChildProcess.Running] = []
        for index in 1...4 {
            children.append(try await ChildProcess.start(worker, ["churn", folder, engine, String(Self.capacity), "20", String(index)]))
        }
        // Sampling starts once every worker has written.
        for child in children {
            let first = try await child.readLine()
            #expect(first == "ready", "a worker did not start: \(first ?? "(no output)")")
        }
        var largest = Sample()
        var samples = 0
        var running = true
        while running {
            let sample = Self.sample(folder)
            largest.files = max(largest.files, sample.files)
            largest.log = max(largest.log, sample.log)
            samples += 1
            try await Task.sleep(for: .milliseconds(100))
            running = children.contains { $0.process.isRunning }
        }
        var totals = (writes: 0, reads: 0, removals: 0, wrong: 0)
        for child in children {
            let status = await child.status()
            let output = String(decoding: try await child.readOutput(), as: UTF8.self)
            let errors = await child.errorOutput()
            #expect(status == 0, "a worker failed: \(output.suffix(500)) \(errors.prefix(1_000))")
            #expect(!errors.contains("deleted or replaced"), "no worker took another's database for a replaced one: \(errors.suffix(500))")
            for line in output.split(separator: "\n") where line.hasPrefix("wrong") {
                Issue.record("\(line)")
            }
            let done = output.split(separator: "\n").last { $0.hasPrefix("done ") }?.split(separator: " ").dropFirst().compactMap { Int($0) } ?? []
            #expect(done.count == 4, "no summary: \(output.suffix(500))")
            if done.count == 4 {
                totals.writes += done[0]
                totals.reads += done[1]
                totals.removals += done[2]
                totals.wrong += done[3]
            }
        }
        // The room the database keeps for its log within its capacity (half the folder's, routed).
        let room = engine == "files" ? 0 : try SQLiteStore(directory: folder, configuration: .init(capacity: engine == "routed" ? Self.capacity / 2 : Self.capacity)).reserve
        print("shared folder (\(engine), 4 writers): \(samples) samples, largest du \(largest.files) bytes (capacity \(Self.capacity)), largest log \(largest.log) bytes (room \(room)); \(totals)")
        #expect(samples >= 20)
        #expect(totals.writes > 1_000, "the workers wrote")
        #expect(totals.wrong == 0)
        #expect(largest.files <= Self.capacity + Self.capacity / 10)
        #expect(largest.log <= room)
    }

    /// Two stores on `folder`, the second opened while the first has it open, each indexed.
    static func twoStores(on folder: String, capacity: Int) async throws -> (FileStore, FileStore) {
        let first = try FileStore(directory: folder, configuration: .init(capacity: capacity))
        await first.waitUntilIndexed()
        let second = try FileStore(directory: folder, configuration: .init(capacity: capacity))
        await second.waitUntilIndexed()
        return (first, second)
    }

    /// Two `FileStore`s on one folder share its capacity, whichever wrote last: each counts what the
    /// other wrote (read from the journal before each write) and evicts over the whole folder.
    /// Before, each enforced the capacity over what it knew, and two stores of 1 MiB held 1,972 KiB.
    @Test func twoFileStoresOnOneFolderShareItsCapacity() async throws {
        let directory = try TemporaryDirectory(prefix: "shared-files")
        let folder = directory.appending("store")
        let capacity = 256 << 10
        let (first, second) = try await Self.twoStores(on: folder, capacity: capacity)
        let value = Data(repeating: 7, count: 6_000)
        var largest = 0
        for round in 0..<40 {
            for (name, store) in [("first", first), ("second", second)] {
                try await store.setValue(value, forKey: "\(name)-\(round)")
                largest = max(largest, Self.sample(folder).files)
            }
        }
        #expect(largest <= capacity + capacity / 10, "du \(largest) bytes for a capacity of \(capacity)")
        // Each one's index is the folder's: the same entries, the most recent of both stores.
        #expect(Set(first.keys()) == Set(second.keys()))
        #expect(first.totalSize == second.totalSize)
        #expect(try await second.value(forKey: "first-39") == value)
        #expect(try await first.value(forKey: "second-39") == value)
        #expect(try await first.value(forKey: "first-0") == nil)
    }

    /// What one store reads counts for the other's eviction: a key read through the second store
    /// outlives keys written after it through the first.
    @Test func readsThroughOneStoreKeepAnEntryForTheOther() async throws {
        let directory = try TemporaryDirectory(prefix: "shared-recency")
        let folder = directory.appending("store")
        let capacity = 128 << 10
        let (writer, reader) = try await Self.twoStores(on: folder, capacity: capacity)
        let value = Data(repeating: 1, count: 6_000)
        for index in 0..<10 { try await writer.setValue(value, forKey: "key-\(index)") }
        #expect(try await reader.value(forKey: "key-0") == value)
        // The reader's record reaches the journal with its next flush (within the flush interval).
        try reader.flush()
        for index in 10..<20 { try await writer.setValue(value, forKey: "key-\(index)") }
        #expect(try await writer.value(forKey: "key-0") == value, "the entry the other store read was kept")
        #expect(try await writer.value(forKey: "key-1") == nil, "the least recently used went first")
    }
}
