import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
import SQLiteStore
import Testing
import TestSupport

/// The async API of the disk stores runs their blocking work on their executor, whichever way it is
/// called: on the concrete type, or through `Store` (the requirement's witness). Each store also
/// has a synchronous method of the same name, which Swift could have chosen instead; the clock
/// each operation reads tells where it ran.
@Suite(.timeLimit(.minutes(1)), .offThePool, .tags(.disk))
struct BlockingEngineTests {
    /// Reads and writes through `Store`'s requirements, as a chain or a `Cache` does.
    func writeAndRead<S: Store<String, Data>>(_ store: S) async throws -> Data? {
        try await store.setValue(Data("generic".utf8), forKey: "g")
        return try await store.value(forKey: "g")
    }

    /// Checks that `body` read the clock on the executor, every time.
    func check(_ clock: WhereClock, _ what: Comment, _ body: () async throws -> Void) async throws {
        let readings = try await clock.readings(during: body)
        #expect(!readings.isEmpty, "\(what) read the clock")
        #expect(readings.allSatisfy { $0 }, "\(what) ran on the executor: \(readings)")
    }

    /// A `FileStore` read whose file the kernel has cached may run on the caller's thread (it
    /// cannot block there, `WarmReadTests`), but never one of a file larger than
    /// `largestReadWithoutWaiting`: the values here are, so every read must go to the executor —
    /// and would run on the caller's thread, blocking, if Swift had chosen the synchronous method.
    /// (Dropping the files from the page cache instead does not force the hop: a read with
    /// `RWF_NOWAIT` starts the readahead it refuses to wait for, which on a fast disk and a busy
    /// machine may finish before the kernel looks again, and the read is then served.)
    @Test func fileStoreRunsItsAsyncAPIOnItsExecutor() async throws {
        let directory = try TemporaryDirectory(prefix: "blocking-engine")
        let executor = IOExecutor(width: 2, label: "test.file")
        let clock = WhereClock(executor: executor)
        let folder = directory.appending("store")
        let store = try FileStore(directory: folder, configuration: .init(clock: clock), executor: executor)
        await store.waitUntilIndexed()
        let value = Data(repeating: 0x61, count: FileStore.largestReadWithoutWaiting + 1)
        try await check(clock, "setValue") { try await store.setValue(value, forKey: "a") }
        try await check(clock, "value") {
            let read = try await store.value(forKey: "a")
            #expect(read == value)
        }
        try await check(clock, "value(transformedBy:)") {
            let count = try await store.value(forKey: "a", transformedBy: { $0.count })
            #expect(count == value.count)
        }
        try await check(clock, "Store's setValue") { try await writeThroughStore(store, value, key: "g") }
        try await check(clock, "Store's value") {
            let read = try await readThroughStore(store, key: "g")
            #expect(read == value)
        }
    }

    /// Writes through `Store`'s requirement, as a chain or a `Cache` does.
    func writeThroughStore<S: Store<String, Data>>(_ store: S, _ value: Data, key: String) async throws {
        try await store.setValue(value, forKey: key)
    }

    /// Reads through `Store`'s requirement, as a chain or a `Cache` does.
    func readThroughStore<S: Store<String, Data>>(_ store: S, key: String) async throws -> Data? {
        try await store.value(forKey: key)
    }

    @Test func sqliteStoreRunsItsAsyncAPIOnItsExecutor() async throws {
        let directory = try TemporaryDirectory(prefix: "blocking-engine")
        let executor = IOExecutor(width: 2, label: "test.sqlite")
        let clock = WhereClock(executor: executor)
        let store = try SQLiteStore(directory: directory.appending("store"), configuration: .init(clock: clock), executor: executor)
        try await check(clock, "setValue") { try await store.setValue(Data("a".utf8), forKey: "a") }
        try await check(clock, "value") {
            let value = try await store.value(forKey: "a")
            #expect(value == Data("a".utf8))
        }
        try await check(clock, "value(transformedBy:)") {
            let count = try await store.value(forKey: "a", transformedBy: { $0.count })
            #expect(count == 1)
        }
        try await check(clock, "Store's setValue and value") {
            let value = try await writeAndRead(store)
            #expect(value == Data("generic".utf8))
        }
    }
}
