import Foundation
@testable import Haneke
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

/// Preloading a format whose small values go to its database (``Format/smallValueThreshold``):
/// the values in the database are read into memory as the files' are.
@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct PreloadTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "preload")
    }

    /// Values under 1 KB go to the database; values are stored as their UTF-8 bytes.
    static func routedFormat(_ policy: PreloadPolicy) -> Format<String> {
        var format = Format<String>(name: "original")
        format.smallValueThreshold = 1_024
        format.compressesOnDisk = false
        format.preloadPolicy = policy
        return format
    }

    /// A value that goes to the files.
    static func large(_ key: String) -> String { String(repeating: "large value of \(key) ", count: 100) }

    /// The cache's format folder, made a store's before any cache opens it: a new cache opens its
    /// files' store and its database at once, and one may read the other's marker before it is
    /// written (then the format goes on without its database).
    func formatFolder(_ name: String) async throws -> String {
        let folder = directory.appending(name) + "/original"
        try await IOExecutor.shared.run { _ = try FileStore(directory: folder, configuration: .init(capacity: nil)) }
        return folder
    }

    /// The keys of the rows of the folder's database, read on an executor.
    func keysInDatabase(_ folder: String) async throws -> Set<String> {
        let inspection = try await IOExecutor.shared.run { try SQLiteStore.inspect(directory: folder) }
        return Set(try #require(inspection).entries.map(\.key))
    }

    @Test func aPreloadedValueKeepsItsLifetimeInMemory() async throws {
        let clock = TestClock()
        _ = try await formatFolder("lifetimes")
        do {
            let cache = Cache<String>(name: "lifetimes", directory: directory.appending("lifetimes"), originalFormat: Self.routedFormat(.none), clock: clock)
            try await cache.set("small", forKey: "small", timeToLive: .seconds(60))
            try await cache.set(Self.large("large"), forKey: "large", timeToLive: .seconds(60))
            try await cache.flush()
        }
        let cache = Cache<String>(name: "lifetimes", directory: directory.appending("lifetimes"), originalFormat: Self.routedFormat(.all), clock: clock)
        await cache.waitForPreloading()
        let memory = try #require(try cache.stack(for: "original").memory)
        #expect(Set(memory.keysByRecency) == ["small", "large"])
        for key in ["small", "large"] {
            #expect(try await memory.attributes(forKey: key)?.expiresAt == clock.now().addingTimeInterval(60))
        }
        clock.advance(by: .seconds(61))
        #expect(memory.value(forKey: "small") == nil)
        #expect(memory.value(forKey: "large") == nil)
    }

    @Test func preloadingAllReadsTheDatabaseToo() async throws {
        let folder = try await formatFolder("all")
        do {
            let cache = Cache<String>(name: "all", directory: directory.appending("all"), originalFormat: Self.routedFormat(.none))
            for key in ["small-1", "small-2"] { try await cache.set("value of \(key)", forKey: key) }
            try await cache.set(Self.large("large"), forKey: "large")
            try await cache.flush()
        }
        #expect(try await keysInDatabase(folder) == ["small-1", "small-2"])

        let cache = Cache<String>(name: "all", directory: directory.appending("all"), originalFormat: Self.routedFormat(.all))
        await cache.waitForPreloading()
        let memory = try #require(try cache.stack(for: "original").memory)
        #expect(Set(memory.keysByRecency) == ["small-1", "small-2", "large"])
        #expect(try await cache.fetch(key: "small-2") == "value of small-2")
        #expect(try cache.layerStatistics().first { $0.name == "memory" }?.statistics.hits == 1)
    }

    /// Two sessions written by the format's two stores on a test clock (so that the second one's
    /// uses come strictly after its start, whatever the machine's speed), then a cache that
    /// preloads the last session: the values the second session read or wrote, in the database
    /// and in the files, and none that only the first one used.
    @Test func preloadingTheLastSessionReadsWhatItUsedInTheDatabase() async throws {
        let folder = try await formatFolder("lastSession")
        let clock = TestClock()
        let executor = IOExecutor(width: 1, label: "preload-sessions")
        try await executor.run {
            try Self.session(in: folder, clock: clock, executor: executor) { files, database in
                try database.setValue(Data("value of old-small".utf8), forKey: "old-small")
                try database.setValue(Data("value of unused-small".utf8), forKey: "unused-small")
                try files.setValue(Data(Self.large("old-large").utf8), forKey: "old-large")
            }
            clock.advance(by: .seconds(60))
            try Self.session(in: folder, clock: clock, executor: executor) { files, database in
                _ = try database.value(forKey: "old-small")
                try database.setValue(Data("value of new-small".utf8), forKey: "new-small")
                try files.setValue(Data(Self.large("new-large").utf8), forKey: "new-large")
            }
        }
        try await executor.run {}   // the released stores have closed

        let cache = Cache<String>(name: "lastSession", directory: directory.appending("lastSession"), originalFormat: Self.routedFormat(.lastSession))
        await cache.waitForPreloading()
        let memory = try #require(try cache.stack(for: "original").memory)
        #expect(Set(memory.keysByRecency) == ["old-small", "new-small", "new-large"])
        #expect(try await cache.fetch(key: "old-small") == "value of old-small")
    }

    /// One session of the format's two stores on `folder`: opened on `clock`, used a second after
    /// they opened (a session's uses come after its start), flushed and released.
    static func session(
        in folder: String,
        clock: TestClock,
        executor: IOExecutor,
        _ body: (FileStore, SQLiteStore) throws -> Void
    ) throws {
        let files = try FileStore(directory: folder, configuration: .init(capacity: nil, clock: clock), executor: executor)
        let database = try SQLiteStore(directory: folder, configuration: .init(capacity: nil, clock: clock), executor: executor)
        files.waitUntilIndexed()
        clock.advance(by: .seconds(1))
        try body(files, database)
        try files.flush()
        try database.flush()
    }
}
