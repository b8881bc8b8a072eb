import FileStore
import Foundation
@testable import Haneke
import HanekeProtocols
import HanekeTesting
import Logging
import SQLiteStore
import Testing
import TestSupport

/// A layer that failed to open refuses writes and removals loudly, and once it opens it never
/// serves a value that was removed or replaced while it could not be used. Each case failed on
/// the earlier `OpeningStore`, which forwarded writes and removals to nothing and returned success.
/// The stores are real: a `FileStore` whose folder others may write (so it refuses to open), an
/// `SQLiteStore` whose database another connection keeps locked.
@Suite(.timeLimit(.minutes(1)), .offThePool, .tags(.disk))
struct OpeningStoreTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "opening")
    }

    var folder: String { directory.appending("store") }

    /// A `FileStore` that opens only while its folder is private (others may write it otherwise).
    func openingFiles(retryInterval: Duration = .zero) -> OpeningStore<FileStore> {
        let folder = folder
        return OpeningStore(name: "disk", executor: .shared, logger: Logger(label: "test"), what: folder, retryInterval: retryInterval) {
            try FileStore(directory: folder)
        }
    }

    /// Writes values with the stores' synchronous API.
    func seed(_ values: [String: String], into store: FileStore) throws {
        for (key, value) in values { try store.setValue(Data(value.utf8), forKey: key) }
    }

    func seed(_ values: [String: String], into store: SQLiteStore) throws {
        for (key, value) in values { try store.setValue(Data(value.utf8), forKey: key) }
    }

    func setMode(_ mode: mode_t) {
        #expect(chmod(folder, mode) == 0)
    }

    @Test func writesAndRemovalsThroughAStoreThatCannotOpenThrowUnavailable() async throws {
        _ = try FileStore(directory: folder)
        setMode(0o770)
        let store = openingFiles(retryInterval: .seconds(3600))
        let write = await #expect(throws: StoreError.self) { try await store.setValue(Data("v".utf8), forKey: "k") }
        #expect(write?.code == .unavailable)
        #expect((write?.cause as? StoreError)?.code == .unsafeDirectory, "the cause says why the layer is unavailable: \(String(describing: write))")
        let removal = await #expect(throws: StoreError.self) { try await store.removeValue(forKey: "k") }
        #expect(removal?.code == .unavailable)
        let all = await #expect(throws: StoreError.self) { try await store.removeAll() }
        #expect(all?.code == .unavailable)
        #expect(try await store.value(forKey: "k") == nil, "a read is a miss")
        #expect(await store.base == nil)
    }

    /// A revoked token removed while the layer could not be used, and a value replaced meanwhile,
    /// are not served by the layer once it opens again.
    @Test func keysChangedWhileUnavailableAreRemovedWhenTheLayerOpens() async throws {
        try seed(["session": "token", "profile": "old", "other": "kept"], into: FileStore(directory: folder))
        setMode(0o770)
        let store = openingFiles()
        await #expect(throws: StoreError.self) { try await store.removeValue(forKey: "session") }
        await #expect(throws: StoreError.self) { try await store.setValue(Data("new".utf8), forKey: "profile") }
        setMode(0o700)
        // Each refused operation started another attempt (the retry interval is zero), which may
        // still be running and may have seen the folder open to its group: it ends first. The
        // next operation then starts an attempt on the private folder; it does not wait for it.
        await store.waitForAttempt()
        _ = try await store.value(forKey: "other")
        await store.waitForAttempt()
        #expect(await store.base != nil, "open again")
        #expect(try await store.value(forKey: "session") == nil)
        #expect(try await store.value(forKey: "profile") == nil)
        #expect(try await store.value(forKey: "other") == Data("kept".utf8))
        try await store.setValue(Data("new".utf8), forKey: "profile")
        #expect(try await store.value(forKey: "profile") == Data("new".utf8))
    }

    @Test func removeAllWhileUnavailableEmptiesTheLayerWhenItOpens() async throws {
        try seed(["k": "v"], into: FileStore(directory: folder))
        setMode(0o770)
        let store = openingFiles()
        await #expect(throws: StoreError.self) { try await store.removeAll() }
        setMode(0o700)
        await store.waitForAttempt()   // the attempt the refused removal started, as above
        _ = try await store.value(forKey: "k")
        await store.waitForAttempt()
        #expect(await store.base?.count == 0)
    }

    /// The routed pair of a format: with the database locked by another connection, a write of a
    /// large value fails instead of leaving the older small value in the database to hide it, and
    /// once the database can be opened the older value is gone: the key is never in both stores.
    @Test func aRoutedWriteNeverLeavesAnOlderSmallValueToHideANewerLargeOne() async throws {
        let folder = folder
        // The seeding store closes its database on its own executor once released; the job after
        // it runs once it is closed, so the exclusive holder below never waits for it (under load,
        // a close queued on the shared executor outlasted the holder's busy timeout).
        let seeding = IOExecutor(width: 1, label: "seeding")
        try seed(["k": "small and old"], into: SQLiteStore(directory: folder, executor: seeding))
        try await seeding.run {}
        // Another connection keeps the database locked while it lives (from its first write). It
        // closes its database on its executor once released: with one job at a time, in order, a
        // job submitted after the release runs once it is closed.
        let holding = IOExecutor(width: 1, label: "holder")
        var holder: SQLiteStore? = try SQLiteStore(directory: folder, configuration: .init(exclusiveAccess: true), executor: holding)
        try seed(["other": "v"], into: holder!)
        let small = OpeningStore(name: "disk-small", executor: .shared, logger: Logger(label: "test"), what: folder, retryInterval: .zero) {
            try SQLiteStore(directory: folder, configuration: .init(busyTimeout: .milliseconds(1)))
        }
        let large = OpeningStore(name: "disk", executor: .shared, logger: Logger(label: "test"), what: folder, retryInterval: .zero) {
            try FileStore(directory: folder)
        }
        let routed = small.routingLargeValues(over: 64, to: large)
        let newer = Data(repeating: 7, count: 1_000)
        let error = await #expect(throws: StoreError.self) { try await routed.setValue(newer, forKey: "k") }
        #expect(error?.code == .unavailable)
        #expect(try await large.value(forKey: "k") == nil, "the large value was not written beside the older small one")
        holder = nil
        try await holding.run {}
        await small.waitForAttempt()   // an attempt the refused write started, on the locked database
        _ = try await small.value(forKey: "k")
        await small.waitForAttempt()
        #expect(await small.base != nil)
        #expect(try await routed.value(forKey: "k") == nil, "the older small value is gone")
        try await routed.setValue(newer, forKey: "k")
        #expect(try await routed.value(forKey: "k") == newer)
        #expect(try await small.base?.value(forKey: "k") == nil)
    }

    /// Through `Cache`, a format whose folder cannot be used reports writes and removals.
    @Test func aCacheReportsWritesAndRemovalsItCouldNotMake() async throws {
        let cacheFolder = directory.appending("cache")
        let original = cacheFolder + "/" + Cache<String>.originalFormatName
        try FileManager.default.createDirectory(atPath: original, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data("not a store".utf8).write(to: URL(fileURLWithPath: original + "/someone-elses-file"))
        let cache = Cache<String>(name: "test", directory: cacheFolder)
        let write = await #expect(throws: StoreError.self) { try await cache.set("v", forKey: "k") }
        #expect(write?.code == .unavailable)
        #expect(try await cache.fetch(key: "k") == "v", "the memory layer has the value")
        let removal = await #expect(throws: StoreError.self) { try await cache.remove(key: "k") }
        #expect(removal?.code == .unavailable)
        let all = await #expect(throws: StoreError.self) { try await cache.removeAll() }
        #expect(all?.code == .unavailable)
    }
}
