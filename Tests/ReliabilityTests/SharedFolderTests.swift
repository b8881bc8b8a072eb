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

    @Test(arguments: ["sqlite"])
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
            #expect(status == 0, "a worker failed: \(output.suffix(500)) \(errors.suffix(500))")
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
        // The room the store keeps for its log within the capacity.
        let store = try SQLiteStore(directory: folder, configuration: .init(capacity: Self.capacity))
        print("shared folder (\(engine), 4 writers): \(samples) samples, largest du \(largest.files) bytes (capacity \(Self.capacity)), largest log \(largest.log) bytes (room \(store.reserve)); \(totals)")
        #expect(samples >= 20)
        #expect(totals.writes > 1_000, "the workers wrote")
        #expect(totals.wrong == 0)
        #expect(largest.files <= Self.capacity + Self.capacity / 10)
        #expect(largest.log <= store.reserve)
    }

    /// A `FileStore` does not yet share its capacity with another process's on one folder: it
    /// says so when it opens a folder another process has open (nothing did), and does not once
    /// that process is gone.
    @Test func aFileStoreSaysWhenAnotherProcessHasItsFolderOpen() async throws {
        let directory = try TemporaryDirectory(prefix: "shared-files")
        let folder = directory.appending("original")
        let child = try await ChildProcess.start(ChildProcess.binary("HanekeFaultWorker"), ["touch-and-wait", directory.path])
        #expect(try await child.readLine() == "ready")
        let log = LogCapture()
        weak var released: FileStore?
        do {
            let store = try FileStore(directory: folder, configuration: .init(), logger: log.logger)
            await store.waitUntilIndexed()
            released = store
        }
        #expect(log.lines.contains { $0.contains("Another store has this folder open") }, "\(log.lines)")
        _ = await child.kill()
        // This process's store holds the folder's lock too until it is gone (a job of its
        // executor may keep it a moment after its last use).
        while released != nil { try await Task.sleep(for: .milliseconds(1)) }
        let alone = LogCapture()
        let store = try FileStore(directory: folder, configuration: .init(), logger: alone.logger)
        await store.waitUntilIndexed()
        #expect(!alone.lines.contains { $0.contains("Another store") }, "\(alone.lines)")
    }
}
