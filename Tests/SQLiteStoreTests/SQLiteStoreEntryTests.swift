import CSQLite
import Foundation
import HanekeProtocols
import HanekeTesting
@testable import SQLiteStore
import StoreFolders
import Testing
import TestSupport

/// Entries with their own expiry, time stored and metadata (issue 26), and the 0.3.0 format.
extension SQLiteStoreTests {
    /// 2026-01-01T00:00:00Z, where `TestClock` starts and where the 0.3.0 fixture was written.
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    // MARK: - Attributes

    @Test func anEntryKeepsItsExpiryTimeStoredAndMetadata() async throws {
        let clock = TestClock()
        let store = try open(clock: clock)
        let stored = Self.start.addingTimeInterval(-3_600)
        let attributes = EntryAttributes(expiresAt: Self.start + 60, storedAt: stored, metadata: Data("etag: \"v1\"".utf8))
        try await store.setEntry(StoreEntry(value: Data("body".utf8), attributes: attributes), forKey: "k")
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: Data("body".utf8), attributes: attributes))
        #expect(try await store.attributes(forKey: "k") == attributes)
        #expect(try await store.value(forKey: "k") == Data("body".utf8))
        #expect(try await store.entry(forKey: "k", transformedBy: { $0.count }) == StoreEntry(value: 4, attributes: attributes))
        #expect(try store.entries().map(\.metadataSize) == [10])

        // Without storedAt, the time of the write; a plain value has no expiry and no metadata.
        try await store.setEntry(StoreEntry(value: Data("x".utf8), expiresAt: nil, metadata: Data([1])), forKey: "stamped")
        #expect(try await store.attributes(forKey: "stamped") == EntryAttributes(expiresAt: nil, storedAt: Self.start, metadata: Data([1])))
        clock.advance(by: .seconds(5))
        try await store.setValue(Data("plain".utf8), forKey: "plain")
        #expect(try await store.attributes(forKey: "plain") == EntryAttributes(storedAt: Self.start + 5))

        // A value written over an entry drops its attributes.
        try await store.setValue(Data("new".utf8), forKey: "k")
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: Data("new".utf8), attributes: EntryAttributes(storedAt: Self.start + 5)))
        #expect(try await store.attributes(forKey: "missing") == nil)
        #expect(try await store.entry(forKey: "missing") == nil)
    }

    @Test func anEntryExpiresAtItsOwnExpiryBoundedByTheStoresLifetime() async throws {
        let clock = TestClock()
        let store = try open(timeToLive: .seconds(100), clock: clock)
        try await store.setValue(Data("a".utf8), forKey: "short", expiresAt: Self.start + 10)
        try await store.setValue(Data("b".utf8), forKey: "long", expiresAt: Self.start + 1_000)
        try await store.setValue(Data("c".utf8), forKey: "never", expiresAt: nil)
        #expect(try await store.attributes(forKey: "short")?.expiresAt == Self.start + 10)
        #expect(try await store.attributes(forKey: "long")?.expiresAt == Self.start + 100)
        #expect(try await store.attributes(forKey: "never")?.expiresAt == Self.start + 100)
        clock.advance(by: .seconds(9))
        #expect(try await store.value(forKey: "short") == Data("a".utf8))
        clock.advance(by: .seconds(1))
        #expect(try await store.attributes(forKey: "short") == nil)
        #expect(try await store.entry(forKey: "short") == nil)
        #expect(store.count == 2, "an expired row is deleted when read")
        clock.advance(by: .seconds(90))
        #expect(try await store.entry(forKey: "long") == nil)
        #expect(try await store.value(forKey: "never") == nil)
    }

    @Test func anEntryExpiredAlreadyIsNotStoredAndRemovesThePreviousValue() throws {
        let clock = TestClock()
        let store = try open(clock: clock)
        try store.setValue(Data("old".utf8), forKey: "k")
        try store.setEntry(StoreEntry(value: Data("new".utf8), expiresAt: Self.start), forKey: "k")
        #expect(store.count == 0)
        #expect(try store.value(forKey: "k") == nil)
        #expect(try store.addEntry(StoreEntry(value: Data("new".utf8), expiresAt: Self.start - 1), forKey: "k") == .inserted)
        #expect(store.count == 0)
    }

    @Test func metadataOverTheLimitIsRefused() throws {
        let store = try open()
        let large = Data(count: EntryAttributes.metadataLimit + 1)
        try store.setValue(Data("v".utf8), forKey: "k")
        for attempt in [
            { try store.setEntry(StoreEntry(value: Data(), expiresAt: nil, metadata: large), forKey: "k") },
            { _ = try store.setAttributes(EntryAttributes(metadata: large), forKey: "k") },
            { _ = try store.addEntry(StoreEntry(value: Data(), expiresAt: nil, metadata: large), forKey: "new") },
        ] {
            let error = #expect(throws: StoreError.self) { try attempt() }
            #expect(error?.code == .valueTooLarge)
        }
        #expect(try store.entry(forKey: "k") == StoreEntry(value: Data("v".utf8), attributes: EntryAttributes(storedAt: try #require(store.attributes(forKey: "k")?.storedAt))))
        try store.setEntry(StoreEntry(value: Data(), expiresAt: nil, metadata: Data(count: EntryAttributes.metadataLimit)), forKey: "k")
        #expect(try store.attributes(forKey: "k")?.metadata.count == EntryAttributes.metadataLimit)
    }

    // MARK: - setAttributes

    @Test func setAttributesReplacesTheAttributesAndKeepsTheValue() async throws {
        let clock = TestClock()
        let store = try open(timeToLive: .seconds(3_600), clock: clock)
        try await store.setEntry(StoreEntry(value: Data("body".utf8), expiresAt: Self.start + 60, metadata: Data("v1".utf8)), forKey: "k")
        clock.advance(by: .seconds(30))
        let refreshed = EntryAttributes(expiresAt: Self.start + 120, storedAt: Self.start + 30, metadata: Data("v2 with more".utf8))
        #expect(try await store.setAttributes(refreshed, forKey: "k"))
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: Data("body".utf8), attributes: refreshed))
        // Without storedAt: now; the expiry is bounded by the store's lifetime from now.
        #expect(try await store.setAttributes(EntryAttributes(expiresAt: Self.start + 10_000), forKey: "k"))
        #expect(try await store.attributes(forKey: "k") == EntryAttributes(expiresAt: Self.start + 30 + 3_600, storedAt: Self.start + 30))
        #expect(try await store.value(forKey: "k") == Data("body".utf8))

        // No entry, or an expired one: nothing is written.
        #expect(try await store.setAttributes(refreshed, forKey: "missing") == false)
        #expect(try await store.entry(forKey: "missing") == nil)
        clock.advance(by: .seconds(3_600))
        #expect(try await store.setAttributes(refreshed, forKey: "k") == false)
        #expect(try await store.entry(forKey: "k") == nil)
    }

    /// The value of a row is changed on disk: a read of the entry sees the damage, a read of its
    /// attributes does not (it does not read the value), and a refresh of its attributes keeps
    /// the damaged value as it is (it does not rewrite it).
    @Test func attributesAreReadAndReplacedWithoutTheValue() throws {
        let value = Data(repeating: UInt8(ascii: "v"), count: 300) + Data("needle-of-the-value".utf8)
        do {
            let store = try open()
            try store.setEntry(StoreEntry(value: value, expiresAt: nil, metadata: Data("meta".utf8)), forKey: "k")
            try store.flush()
        }
        try patchDatabase(replacing: Data("needle-of-the-value".utf8), with: Data("needle-of-the-valuE".utf8))
        let store = try open()
        #expect(try store.attributes(forKey: "k")?.metadata == Data("meta".utf8))
        #expect(try store.setAttributes(EntryAttributes(metadata: Data("new".utf8)), forKey: "k"))
        #expect(try store.attributes(forKey: "k")?.metadata == Data("new".utf8))
        #expect(try store.entry(forKey: "k") == nil, "the value is still the damaged one")
        #expect(store.count == 0)
    }

    // MARK: - Damage

    @Test func damagedMetadataIsAMissAndIsReported() throws {
        do {
            let store = try open()
            try store.setEntry(StoreEntry(value: Data("value".utf8), expiresAt: nil, metadata: Data("needle-of-the-metadata".utf8)), forKey: "k")
            try store.setEntry(StoreEntry(value: Data("value".utf8), expiresAt: nil, metadata: Data("intact".utf8)), forKey: "intact")
            try store.flush()
        }
        try patchDatabase(replacing: Data("needle-of-the-metadata".utf8), with: Data("needle-of-the-metadatA".utf8))
        let inspection = try #require(try SQLiteStore.inspect(directory: folder))
        #expect(inspection.damagedRows.map(\.reason) == [.metadataChecksumMismatch])
        #expect(throws: StoreError.self) { try SQLiteStore.value(forKey: "k", inDirectory: folder) }
        let log = LogCapture()
        let store = try open(logger: log)
        #expect(try store.attributes(forKey: "k") == nil)
        #expect(log.lines.contains { $0.contains("damaged row") }, "\(log.lines)")
        #expect(try store.entry(forKey: "k") == nil)
        #expect(store.count == 1)
        #expect(try store.attributes(forKey: "intact")?.metadata == Data("intact".utf8))
    }

    /// Rows changed behind the store's back: metadata far over the limit (not copied), metadata
    /// without a checksum, a checksum without metadata. Each is a miss, never a crash.
    @Test(arguments: [
        "metadata = zeroblob(1000000), metadata_checksum = 1",
        "metadata = x'00', metadata_checksum = NULL",
        "metadata = NULL, metadata_checksum = 7",
    ])
    func aRowWithImpossibleMetadataIsAMiss(change: String) throws {
        do {
            let store = try open(capacity: nil)
            try store.setEntry(StoreEntry(value: Data("value".utf8), expiresAt: nil, metadata: Data("m".utf8)), forKey: "k")
            try store.flush()
        }
        try execute("UPDATE entries SET \(change)", on: databasePath)
        let inspection = try #require(try SQLiteStore.inspect(directory: folder))
        #expect(inspection.damagedRows.map(\.reason) == [.metadataChecksumMismatch])
        let store = try open(capacity: nil)
        #expect(try store.attributes(forKey: "k") == nil)
        #expect(store.count == 0)
    }

    // MARK: - addEntry

    @Test func addEntryInsertsOnlyIntoAnAbsentOrExpiredKey() async throws {
        let clock = TestClock()
        let store = try open(clock: clock)
        let first = StoreEntry(value: Data("first".utf8), expiresAt: Self.start + 10, metadata: Data("1".utf8))
        #expect(try await store.addEntry(first, forKey: "k") == .inserted)
        let second = StoreEntry(value: Data("second".utf8), expiresAt: nil)
        var expected = first
        expected.attributes.storedAt = Self.start
        #expect(try await store.addEntry(second, forKey: "k") == .existing(expected))
        #expect(try await store.entry(forKey: "k") == expected)
        clock.advance(by: .seconds(10))
        #expect(try await store.addEntry(second, forKey: "k") == .inserted)
        #expect(try await store.entry(forKey: "k")?.value == Data("second".utf8))
        #expect(store.statistics.writes == 2)
    }

    /// 100 callers add the same key at once through two stores — two connections, as two
    /// processes would have — and exactly one inserts; the others get its entry.
    @Test func exactlyOneOfAHundredConcurrentAddsInserts() async throws {
        let stores = [try open(), try open()]
        let results = try await withThrowingTaskGroup(of: (Int, AddResult<Data>).self) { group in
            for caller in 0..<100 {
                group.addTask {
                    let entry = StoreEntry(value: Data("caller \(caller)".utf8), expiresAt: nil, metadata: Data([UInt8(caller)]))
                    return (caller, try await stores[caller % 2].addEntry(entry, forKey: "contended"))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let winners = results.filter { $0.1.inserted }
        try #require(winners.count == 1)
        let winner = winners[0].0
        for (_, result) in results where !result.inserted {
            #expect(result.existing?.value == Data("caller \(winner)".utf8))
            #expect(result.existing?.metadata == Data([UInt8(winner)]))
        }
        #expect(try await stores[1].value(forKey: "contended") == Data("caller \(winner)".utf8))
    }

    @Test func addEntryEvictsToFitTheCapacityAsAWriteDoes() throws {
        let capacity = 512 << 10
        let store = try open(capacity: capacity)
        let value = Data(repeating: 7, count: 2_000)
        for i in 0..<400 { _ = try store.addEntry(StoreEntry(value: value, expiresAt: nil, metadata: Data(count: 100)), forKey: "key \(i)") }
        #expect(store.usedSize <= capacity)
        #expect(store.statistics.evictions > 0)
        let error = #expect(throws: StoreError.self) {
            try store.addEntry(StoreEntry(value: Data(count: capacity)), forKey: "huge")
        }
        #expect(error?.code == .valueTooLarge)
    }

    // MARK: - Where the work runs

    /// Every entry operation through `Store`'s requirements, as a chain does; the transform
    /// reports where it ran.
    func useEntries<S: Store<String, Data>>(of store: S, executor: IOExecutor) async throws -> [Bool] {
        try await store.setEntry(StoreEntry(value: Data("v".utf8), expiresAt: nil, metadata: Data("m".utf8)), forKey: "k")
        _ = try await store.attributes(forKey: "k")
        _ = try await store.setAttributes(EntryAttributes(metadata: Data("n".utf8)), forKey: "k")
        _ = try await store.addEntry(StoreEntry(value: Data("w".utf8)), forKey: "k")
        let transformedOnExecutor = try await store.entry(forKey: "k", transformedBy: { _ in executor.isCurrent })?.value
        return [transformedOnExecutor ?? false]
    }

    @Test func theAsyncEntryAPIRunsOnTheExecutor() async throws {
        let executor = IOExecutor(width: 2, label: "test.sqlite-entries")
        let clock = WhereClock(executor: executor)
        let store = try SQLiteStore(directory: folder, configuration: .init(clock: clock), executor: executor)
        var transforms: [Bool] = []
        let readings = try await clock.readings(during: {
            transforms = try await useEntries(of: store, executor: executor)
            _ = try await store.entry(forKey: "k")
            _ = try await store.attributes(forKey: "k")
            try await store.setEntry(StoreEntry(value: Data("v".utf8)), forKey: "k")
            _ = try await store.setAttributes(EntryAttributes(), forKey: "k")
            _ = try await store.addEntry(StoreEntry(value: Data("v".utf8)), forKey: "k")
            transforms.append(try await store.entry(forKey: "k", transformedBy: { _ in executor.isCurrent })?.value ?? false)
        })
        #expect(readings.count >= 11)
        #expect(readings.allSatisfy { $0 }, "\(readings)")
        #expect(transforms == [true, true])
    }

    // MARK: - The 0.3.0 format

    /// Copies the database 0.3.0 wrote (a store of 34227e7, its clock at 2026-01-01T00:00:00Z:
    /// `plain`, `empty` and a 10,000-byte `large` without a lifetime, then 10 s later `expiring`
    /// with a lifetime of an hour) into a store folder.
    func installFixture() throws {
        let url = try #require(Bundle.module.url(forResource: "values", withExtension: "sqlite", subdirectory: "Fixtures/v0.3.0"))
        _ = try SharedStoreFolder(path: folder, access: .owner)
        try FileManager.default.copyItem(atPath: url.path, toPath: databasePath)
        chmod(databasePath, 0o600)
    }

    static let fixtureLarge = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    @Test func aDatabaseOf030OpensReadsAndIsUpgraded() throws {
        try installFixture()
        let clock = TestClock()
        clock.advance(by: .seconds(30 * 60))
        let store = try open(capacity: nil, clock: clock)
        #expect(try store.entry(forKey: "plain") == StoreEntry(value: Data("a value without a lifetime".utf8), attributes: EntryAttributes(storedAt: Self.start)))
        #expect(try store.value(forKey: "empty") == Data())
        #expect(try store.value(forKey: "large") == Self.fixtureLarge)
        #expect(try store.attributes(forKey: "expiring") == EntryAttributes(expiresAt: Self.start + 10 + 3_600, storedAt: Self.start + 10))
        #expect(try store.value(forKey: "expiring") == Data("a value living an hour".utf8))
        #expect(try integer("PRAGMA user_version") == 2)

        // The upgraded database keeps metadata, and its old rows stay valid.
        #expect(try store.setAttributes(EntryAttributes(metadata: Data("m".utf8)), forKey: "large"))
        try store.setEntry(StoreEntry(value: Data("new".utf8), expiresAt: nil, metadata: Data("n".utf8)), forKey: "new")
        #expect(try store.entry(forKey: "large")?.metadata == Data("m".utf8))
        #expect(try store.entry(forKey: "large")?.value == Self.fixtureLarge)
        #expect(try store.attributes(forKey: "new")?.metadata == Data("n".utf8))
        try store.flush()
        #expect(try SQLiteStore.inspect(directory: folder)?.damagedRows == [])

        clock.advance(by: .seconds(3_600))
        #expect(try store.value(forKey: "expiring") == nil)
        #expect(try store.value(forKey: "plain") != nil)
    }

    /// The inspection reads a 0.3.0 database as it is, without upgrading it.
    @Test func theInspectionReadsADatabaseOf030WithoutChangingIt() throws {
        try installFixture()
        let inspection = try #require(try SQLiteStore.inspect(directory: folder))
        #expect(Set(inspection.entries.map(\.key)) == ["plain", "empty", "large", "expiring"])
        #expect(inspection.damagedRows.isEmpty)
        #expect(try SQLiteStore.value(forKey: "large", inDirectory: folder, now: Self.start) == Self.fixtureLarge)
        #expect(try integer("PRAGMA user_version") == 1)
    }

    /// Stores in several threads open the same 0.3.0 database at once: one upgrades it, the
    /// others find it upgraded, all read it.
    @Test func storesOpeningADatabaseOf030AtOnceUpgradeItOnce() async throws {
        try installFixture()
        let folder = folder
        // A released store closes its database on its executor: with one job at a time there, a
        // job submitted after the last store is released runs once every connection has closed.
        let closing = IOExecutor(width: 1, label: "closing")
        let values = try await withThrowingTaskGroup(of: Data?.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    try await IOExecutor.shared.run {
                        let store = try SQLiteStore(directory: folder, configuration: .init(capacity: nil, clock: TestClock()), executor: closing)
                        return try store.value(forKey: "plain")
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        try await closing.run {}
        #expect(values == Array(repeating: Data("a value without a lifetime".utf8), count: 6))
        #expect(try integer("PRAGMA user_version") == 2)
    }

    @Test func aDatabaseOfANewerFormatIsRefused() throws {
        try open().flush()
        try execute("PRAGMA user_version = 3", on: databasePath)
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore)
        #expect(error?.message.contains("format version 3") == true, "\(String(describing: error))")
    }

    /// The first integer `sql` returns on the database, read through SQLite itself.
    func integer(_ sql: String) throws -> Int64 {
        try withConnection(to: databasePath, flags: SQLITE_OPEN_READONLY) { handle in
            var statement: OpaquePointer?
            defer { sqlite3_finalize(statement) }
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, sqlite3_step(statement) == SQLITE_ROW else {
                throw StoreError(.io, "could not run \(sql)")
            }
            return sqlite3_column_int64(statement, 0)
        }
    }
}
