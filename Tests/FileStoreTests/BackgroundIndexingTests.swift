import Dispatch
import Foundation
@testable import FileStore
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

/// A store opens without waiting for its index: these hold the thread that builds it at one of its
/// steps (``FileStore/IndexingStep``), act on the store meanwhile, then let it finish.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct BackgroundIndexingTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "filestore-indexing")
    }

    /// Holds the index's builder when it reaches `step`, until ``release()``.
    final class IndexGate: Sendable {
        let step: FileStore.IndexingStep
        private let arrived = DispatchSemaphore(value: 0)
        private let proceed = DispatchSemaphore(value: 0)

        init(at step: FileStore.IndexingStep) {
            self.step = step
        }

        var hook: @Sendable (FileStore.IndexingStep) -> Void {
            { [self] step in
                guard step == self.step else { return }
                arrived.signal()
                proceed.wait()
            }
        }

        /// Blocks until the builder is held at the step.
        func waitUntilHeld() {
            arrived.wait()
        }

        /// Lets the builder go on.
        func release() {
            proceed.signal()
        }
    }

    func open(capacity: Int? = 100 << 20, countLimit: Int? = nil, gate: IndexGate? = nil, clock: any StoreClock = SystemClock(), executor: IOExecutor = .shared) throws -> FileStore {
        var configuration = FileStore.Configuration(capacity: capacity, countLimit: countLimit, clock: clock)
        configuration.indexingHook = gate?.hook
        return try FileStore(directory: directory.path, configuration: configuration, executor: executor)
    }

    /// Opens a store with a gate, and waits until its builder is held there.
    func openHeld(at step: FileStore.IndexingStep, capacity: Int? = 100 << 20, clock: any StoreClock = SystemClock(), executor: IOExecutor = .shared) throws -> (FileStore, IndexGate) {
        let gate = IndexGate(at: step)
        let store = try open(capacity: capacity, gate: gate, clock: clock, executor: executor)
        gate.waitUntilHeld()
        return (store, gate)
    }

    /// Writes `keys` (100 bytes each, in order) in a store that is then released.
    func fill(_ keys: [String], size: Int = 100) throws {
        let store = try open()
        for key in keys { try store.setValue(Data(repeating: 1, count: size), forKey: key) }
    }

    var block: Int {
        var info = stat()
        lstat(directory.path, &info)
        return Int(info.st_blksize)
    }

    /// The blocks every regular file below the folder takes, as `du` counts them.
    func allocatedBytesOfFiles() throws -> Int {
        try FileManager.default.subpathsOfDirectory(atPath: directory.path).reduce(0) { total, path in
            var info = stat()
            lstat(directory.appending(path), &info)
            return (info.st_mode & S_IFMT) == S_IFREG ? total + Int(info.st_blocks) * 512 : total
        }
    }

    func entryFiles() throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: directory.path).filter { path in
            let parts = path.split(separator: "/")
            return parts.count == 2 && parts[1].count == 32 && !parts[1].hasPrefix(".")
        }
    }

    /// What a store that walks the folder from scratch counts: the reference for the index built
    /// while the store was in use.
    func freshWalk() throws -> (count: Int, totalSize: Int) {
        let inspection = try FileStore.inspect(directory: directory.path)
        #expect(inspection.problems.isEmpty, "\(inspection.problems)")
        return (inspection.entries.count, inspection.entries.reduce(0) { $0 + $1.allocatedSize })
    }

    @Test func openingReturnsBeforeTheWalkAndReadsWritesAndRemovalsWorkMeanwhile() async throws {
        try fill(["a", "b", "c"])
        let (store, gate) = try openHeld(at: .walking)
        defer { gate.release() }
        let read: (String) throws -> Data? = store.value(forKey:)   // the synchronous one
        #expect(!store.isIndexed)
        #expect(try read("a") == Data(repeating: 1, count: 100))
        #expect(try await store.value(forKey: "b") == Data(repeating: 1, count: 100))
        #expect(store.containsValue(forKey: "c"))
        try await store.setValue(Data([2]), forKey: "d")
        #expect(try read("d") == Data([2]))
        try await store.removeValue(forKey: "c")
        #expect(try await store.value(forKey: "c") == nil)
        #expect(!store.isIndexed)

        gate.release()
        await store.waitUntilIndexed()
        #expect(store.isIndexed)
        #expect(Set(store.keys()) == ["a", "b", "d"])
        #expect(store.keys().first == "d")
        #expect(store.count == 3)
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
        #expect(try freshWalk() == (store.count, store.totalSize))
    }

    @Test func anEntryRemovedAfterTheWalkFoundItStaysRemoved() throws {
        try fill(["a", "b", "c"])
        let (store, gate) = try openHeld(at: .merging)
        defer { gate.release() }
        try store.removeValue(forKey: "b")
        gate.release()
        store.waitUntilIndexed()
        #expect(Set(store.keys()) == ["a", "c"])
        #expect(store.count == 2)
        #expect(try store.value(forKey: "b") == nil)
        #expect(try freshWalk() == (store.count, store.totalSize))
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
    }

    @Test func anEntryWrittenAfterTheWalkFoundItCountsOnceWithItsNewSize() throws {
        try fill(["a", "b"])
        let (store, gate) = try openHeld(at: .merging)
        defer { gate.release() }
        try store.setValue(Data(count: 3 * block), forKey: "a")   // bigger than the file the walk saw
        try store.setValue(Data(count: 10), forKey: "new")
        try store.setValue(Data(count: 20), forKey: "new")        // twice
        gate.release()
        store.waitUntilIndexed()
        #expect(store.count == 3)
        #expect(store.totalSize == 4 * block + block + block)
        #expect(store.keys() == ["new", "a", "b"])
        #expect(try freshWalk() == (store.count, store.totalSize))
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
    }

    @Test func entriesReadDuringTheWalkAreTheMostRecentlyUsedAfterIt() throws {
        try fill(["a", "b", "c", "d"])
        let (store, gate) = try openHeld(at: .merging)
        defer { gate.release() }
        #expect(try store.value(forKey: "b") != nil)
        #expect(try store.value(forKey: "a") != nil)
        gate.release()
        #expect(store.keys() == ["a", "b", "d", "c"])
        #expect(store.count == 4)
        #expect(try freshWalk() == (store.count, store.totalSize))
    }

    @Test func theCapacityIsEnforcedOnceTheIndexIsComplete() throws {
        try fill(["a", "b", "c", "d"])
        // The marker, the journal, the two blocks kept for the journal, and two entries.
        let capacity = 6 * block
        let (store, gate) = try openHeld(at: .merging, capacity: capacity)
        defer { gate.release() }
        try store.setValue(Data(count: 100), forKey: "e")
        #expect(try entryFiles().count == 5)   // nothing is evicted before the index is complete
        gate.release()
        store.waitUntilIndexed()
        #expect(store.keys() == ["e", "d"])
        #expect(try entryFiles().count == 2)
        #expect(store.totalSize + store.metadataSize <= capacity)
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
        #expect(store.statistics.evictions == 3)
    }

    @Test func aStoreReopenedOverItsCapacityTrimsOnceIndexed() throws {
        try fill(["a", "b", "c", "d", "e"])
        let store = try open(capacity: 6 * block)
        store.waitUntilIndexed()
        #expect(store.count == 2)
        #expect(store.keys() == ["e", "d"])
        #expect(try entryFiles().count == 2)
    }

    @Test func whatNeedsTheWholeIndexWaitsForIt() async throws {
        try fill(["a", "b", "c"])
        let (store, gate) = try openHeld(at: .walking)
        defer { gate.release() }
        async let count = offThePool { store.count }
        async let keys = offThePool { Set(store.keys()) }
        async let waited: Void = store.waitUntilIndexed()
        gate.release()
        #expect(try await count == 3)
        #expect(try await keys == ["a", "b", "c"])
        await waited
        #expect(store.isIndexed)
    }

    @Test func callersWaitingOnEveryThreadOfTheExecutorDoNotKeepTheIndexFromCompleting() async throws {
        try fill(["a", "b"])
        let executor = IOExecutor(width: 2, label: "haneke.test.narrow")
        let (store, gate) = try openHeld(at: .walking, executor: executor)
        defer { gate.release() }
        // Both of the executor's threads block in synchronous members that wait for the index.
        async let first = executor.run { store.count }
        async let second = executor.run { store.entries().count }
        async let third = executor.run { store.totalSize }
        gate.release()
        #expect(try await first == 2)
        #expect(try await second == 2)
        #expect(try await third > 0)
        try await store.removeAll()
        #expect(store.count == 0)
    }

    @Test func removeAllAndTrimDuringTheWalkActOnTheWholeIndex() async throws {
        try fill(["a", "b", "c"])
        do {
            let (store, gate) = try openHeld(at: .walking)
            defer { gate.release() }
            let size = 5 * block
            async let trimmed: Void = offThePool { try store.trim(toSize: size) }
            gate.release()
            try await trimmed
            #expect(store.keys() == ["c"])
            #expect(try entryFiles().count == 1)
        }
        let (store, gate) = try openHeld(at: .walking)
        defer { gate.release() }
        async let removed: Void = offThePool { try store.removeAll() }
        gate.release()
        try await removed
        #expect(store.count == 0)
        #expect(try entryFiles().isEmpty)
    }

    /// Reads, writes and removals racing the walk (not held anywhere): whatever the interleaving,
    /// the index agrees with the folder once complete.
    @Test func operationsRacingTheWalkLeaveTheIndexAgreeingWithTheFolder() async throws {
        let keys = (0..<600).map { "key-\($0)" }
        try fill(Array(keys.prefix(400)))
        let (store, gate) = try openHeld(at: .walking, capacity: nil)
        defer { gate.release() }
        var expected = Set(keys.prefix(400))
        var random = SeededRandomNumberGenerator(seed: 16)
        let operations = (0..<600).map { _ in (Int(random.next() % 3), keys[Int(random.next() % 600)], Int(random.next() % 3)) }
        gate.release()
        for (operation, key, blocks) in operations {
            switch operation {
            case 0:
                try await store.setValue(Data(count: blocks * block + 10), forKey: key)
                expected.insert(key)
            case 1:
                try await store.removeValue(forKey: key)
                expected.remove(key)
            default:
                #expect((try await store.value(forKey: key) != nil) == expected.contains(key))
            }
        }
        await store.waitUntilIndexed()
        #expect(Set(store.keys()) == expected)
        #expect(store.count == expected.count)
        #expect(try freshWalk() == (store.count, store.totalSize))
        // A timed flush of the journal appends without measuring it again (two blocks are kept
        // for that): an explicit flush measures it.
        try store.flush()
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
    }

    @Test func aStoreReleasedWhileIndexingKeepsTheOrderItSawForTheNextStore() throws {
        try fill(["a", "b", "c"])
        do {
            let (store, gate) = try openHeld(at: .walking)
            #expect(try store.value(forKey: "a") != nil)
            gate.release()
        }
        // The next store builds its index after the released one has written its journal.
        let next = try open()
        #expect(next.keys() == ["a", "c", "b"])
        #expect(Set(next.entriesUsedInLastSession().map(\.key)) == ["a"])
    }

    /// A session that does all it does while its store indexes, and within the millisecond the
    /// store opened, is still the last session for the next store: the journal the index rewrites
    /// puts the session's start before records as recent as it.
    @Test func aSessionWithinItsOpeningMillisecondWhileIndexingIsTheLastSession() throws {
        try fill(["old"])
        // Stopped after the fill's writes, at a millisecond of its own.
        let clock = TestClock(start: Date().addingTimeInterval(1))
        do {
            let (store, gate) = try openHeld(at: .walking, clock: clock)
            for key in ["a", "b", "c"] { try store.setValue(Data([1]), forKey: key) }
            #expect(try store.value(forKey: "a") != nil)
            gate.release()
            store.waitUntilIndexed()
        }
        clock.advance(by: .seconds(1))
        let next = try open(clock: clock)
        #expect(Set(next.entriesUsedInLastSession().map(\.key)) == ["a", "b", "c"])
    }
}
