import FileStore
import Foundation
import Haneke
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The recency a process records reaches the disk without it releasing its stores: after a plain
/// `exit(0)` all of it, after SIGKILL all but its last moments. The bodies call the synchronous
/// `FileStore` API (`keys()` waits for the store's index), so they run off the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(2)), .offThePool, .tags(.disk, .process, .slow))
struct RecencyTests {
    static let worker = ChildProcess.binary("HanekeFaultWorker")

    /// The child wrote a, b, c, d, then read b, then a: most recently used first.
    static let order = ["a", "b", "d", "c"]

    @Test func theOrderAndTheLastSessionSurviveAPlainExit() async throws {
        let directory = try TemporaryDirectory(prefix: "exit")
        let run = try await ChildProcess.run(Self.worker, ["touch-and-exit", directory.path])
        #expect(run.status == 0, "\(run.stderr)")
        try await expectTheChildsSessionPreloaded(directory)
    }

    /// A process that ends while its store still indexes (its records wait for the index) leaves
    /// its session marked before them: the next store knows which entries it used. (Before, the
    /// records were appended without the marker and the next session preloaded nothing.)
    @Test func theLastSessionSurvivesAnExitWhileTheStoreIndexes() async throws {
        let directory = try TemporaryDirectory(prefix: "exit-indexing")
        let run = try await ChildProcess.run(Self.worker, ["touch-while-indexing-and-exit", directory.path])
        #expect(run.status == 0, "\(run.stderr)")
        try await expectTheChildsSessionPreloaded(directory)
    }

    /// A cache over the child's folder preloads what the child's session used, in its order.
    func expectTheChildsSessionPreloaded(_ directory: TemporaryDirectory) async throws {
        var format = Format<String>(name: Cache<String>.originalFormatName)
        format.preloadPolicy = .lastSession
        let cache = Cache<String>(name: "exit", directory: directory.path, originalFormat: format)
        await cache.waitForPreloading()
        let disk = try #require(try await cache.diskStore())
        #expect(disk.keys() == Self.order)
        for key in Self.order {
            #expect(try await cache.fetch(key: key) == "value of \(key)")
        }
        let memory = try cache.layerStatistics().first { $0.name == "memory" }
        #expect(memory?.statistics.hits == 4, "\(String(describing: memory))")
    }

    @Test func theOrderSurvivesSIGKILLOnceTheFlushIntervalHasPassed() async throws {
        let directory = try TemporaryDirectory(prefix: "killed")
        let child = try await ChildProcess.start(Self.worker, ["touch-and-wait", directory.path])
        let ready = try await child.readLine()
        #expect(ready == "ready")
        let start = ContinuousClock.now
        // The flush after the interval writes the child's reads, however long the machine takes
        // (the time limit ends a wait for records that never come). A read-only inspection tells
        // the order the journal holds; the journal's size did not: once the child's index was
        // complete, its rewrite of the journal could reach the awaited size before the reads'
        // records were appended, and the child was killed before they were.
        let folder = directory.appending("original")
        try await waitUntil("the child's reads in its journal") {
            let inspection = try? await IOExecutor.shared.run { try FileStore.inspect(directory: folder) }
            return inspection?.entries.map(\.key) == Self.order
        }
        let delay = ContinuousClock.now - start
        await child.kill()
        print("recency: the killed child's records reached its journal \(delay) after its last read (flush interval 1 s)")

        let store = try FileStore(directory: directory.appending("original"), configuration: .init(capacity: nil))
        #expect(store.keys() == Self.order)
        #expect(Set(store.entriesUsedInLastSession().map(\.key)) == Set(Self.order))
    }
}
