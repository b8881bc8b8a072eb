import CSQLite
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
import StoreFolders
@testable import SQLiteStore
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct SQLiteStoreTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "sqlitestore")
    }

    var folder: String { directory.appending("store") }
    var databasePath: String { folder + "/" + SQLiteStore.databaseFileName }

    func open(capacity: Int? = 100 << 20, timeToLive: Duration? = nil, clock: any StoreClock = SystemClock(), logger: LogCapture? = nil) throws -> SQLiteStore {
        let configuration = SQLiteStore.Configuration(capacity: capacity, timeToLive: timeToLive, clock: clock)
        if let logger { return try SQLiteStore(directory: folder, configuration: configuration, logger: logger.logger) }
        return try SQLiteStore(directory: folder, configuration: configuration)
    }

    /// What `du` counts for the regular files in the folder.
    func allocatedBytesOfFiles(_ path: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: path).reduce(0) { total, name in
            var info = stat()
            lstat(path + "/" + name, &info)
            return (info.st_mode & S_IFMT) == S_IFREG ? total + Int(info.st_blocks) * 512 : total
        }
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & 0o7777
    }

    /// Replaces the first occurrence of `needle` in the database file (with the store's log
    /// copied into it) by `replacement`, of the same length.
    func patchDatabase(replacing needle: Data, with replacement: Data) throws {
        precondition(needle.count == replacement.count)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: databasePath))
        let range = try #require(bytes.range(of: needle), "the bytes are not in the database file")
        bytes.replaceSubrange(range, with: replacement)
        try bytes.write(to: URL(fileURLWithPath: databasePath))
    }

    // MARK: - Conformance

    @Test func conformsToStore() async throws {
        try await StoreConformanceSuite {
            try TemporaryStore { try SQLiteStore(directory: $0.path) }
        }.run()
    }

    @Test func aRoutedPairInOneFolderConforms() async throws {
        try await StoreConformanceSuite {
            try TemporaryStore { directory in
                try SQLiteStore(directory: directory.path).routingLargeValues(over: 8, to: try FileStore(directory: directory.path))
            }
        }.run()
    }

    @Test func anExclusiveStoreConforms() async throws {
        try await StoreConformanceSuite {
            try TemporaryStore { try SQLiteStore(directory: $0.path, configuration: .init(exclusiveAccess: true)) }
        }.run()
    }

    /// The longest durations a configuration can hold are clamped, never a trap: a lifetime of
    /// `Int64.max` seconds is "until the end of time", a busy timeout that long waits as long as
    /// SQLite can count.
    @Test func conformsWithTheLongestLifetimeAndTimeouts() async throws {
        try await StoreConformanceSuite {
            try TemporaryStore {
                try SQLiteStore(directory: $0.path, configuration: .init(
                    timeToLive: .seconds(Int64.max), recencyFlushInterval: .seconds(Int64.max), busyTimeout: .seconds(Int64.max)
                ))
            }
        }.run()
    }

    /// With `exclusiveAccess` the store keeps the database locked while it lives (its log's index
    /// in memory, no `-shm` file): another connection waits its busy timeout and fails with
    /// `unavailable`, and opens the database once the store is released.
    @Test func anExclusiveStoreKeepsOtherConnectionsOutUntilItIsReleased() async throws {
        // A released store closes its database on its executor: with one job at a time, in
        // order, a job submitted after the release runs once it is closed.
        let executor = IOExecutor(width: 1, label: "exclusive")
        try holdExclusively(executor: executor)
        try await executor.run {}
        #expect(try readWithBriefWait("k") == Data("mine".utf8))
    }

    /// Opens a store with exclusive access, writes "k", and checks that another connection is
    /// kept out meanwhile; the store is released on return.
    func holdExclusively(executor: IOExecutor) throws {
        let owner = try SQLiteStore(directory: folder, configuration: .init(exclusiveAccess: true), executor: executor)
        try owner.setValue(Data("mine".utf8), forKey: "k")
        #expect(!FileManager.default.fileExists(atPath: databasePath + "-shm"))
        let refused = #expect(throws: StoreError.self) { try readWithBriefWait("k") }
        #expect(refused?.code == .unavailable)
        #expect(refused?.message.contains("exclusive access") == true, "\(refused?.message ?? "")")
        #expect(try owner.value(forKey: "k") == Data("mine".utf8))
    }

    /// Reads `key` through a new store that waits 50 ms at most for another connection's lock.
    func readWithBriefWait(_ key: String) throws -> Data? {
        try SQLiteStore(directory: folder, configuration: .init(busyTimeout: .milliseconds(50))).value(forKey: key)
    }

    // MARK: - Values

    /// Processes opening one store at once: one puts the database in WAL mode while another is
    /// writing it, and SQLite refuses that change at once, without its busy handler (a reader
    /// that asks to write could deadlock): "database is locked" — a benchmark's writer process
    /// failed so, on a new database. The store waits for the lock within its busy timeout instead.
    @Test func aDatabaseThatAnotherConnectionIsWritingIsPutInWALModeOnceItLetsGo() async throws {
        try await withStoreClosedAfterwards { try $0.setValue(Data("value".utf8), forKey: "key") }
        try reopenWhileAnotherConnectionWrites()
    }

    func reopenWhileAnotherConnectionWrites() throws {
        // Back to a rollback journal, as a new database is until a store changes its mode.
        try execute("PRAGMA journal_mode = DELETE", on: databasePath)
        let path = databasePath
        let locked = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        Thread {
            var handle: OpaquePointer?
            defer { sqlite3_close_v2(handle); released.signal() }
            if sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK {
                // The write lock (reserved: others may still read) until the commit.
                sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil)
            }
            locked.signal()
            usleep(100_000)
            sqlite3_exec(handle, "COMMIT", nil, nil, nil)
        }.start()
        locked.wait()
        let store = try open()
        released.wait()
        try store.setValue(Data("other".utf8), forKey: "other")
        #expect(try store.value(forKey: "key") == Data("value".utf8))
        #expect(try store.value(forKey: "other") == Data("other".utf8))
        let mode = try withConnection(to: path) { handle -> String? in
            var statement: OpaquePointer?
            defer { sqlite3_finalize(statement) }
            guard sqlite3_prepare_v2(handle, "PRAGMA journal_mode", -1, &statement, nil) == SQLITE_OK,
                  sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return nil }
            return String(cString: text)
        }
        #expect(mode == "wal")
    }

    @Test func valuesSurviveReopening() throws {
        do {
            let store = try open()
            for i in 0..<100 { try store.setValue(Data("value \(i)".utf8), forKey: "key \(i)") }
            try store.setValue(Data(), forKey: "empty")
        }
        let store = try open()
        #expect(store.count == 101)
        for i in 0..<100 { #expect(try store.value(forKey: "key \(i)") == Data("value \(i)".utf8)) }
        #expect(try store.value(forKey: "empty") == Data())
        #expect(try store.value(forKey: "missing") == nil)
    }

    @Test func expiredValuesAreMissesAndAreDeleted() throws {
        let clock = TestClock()
        let store = try open(timeToLive: .seconds(60), clock: clock)
        try store.setValue(Data("fresh".utf8), forKey: "k")
        clock.advance(by: .seconds(59))
        #expect(try store.value(forKey: "k") == Data("fresh".utf8))
        clock.advance(by: .seconds(1))
        #expect(store.containsValue(forKey: "k") == false)
        #expect(try store.value(forKey: "k") == nil)
        #expect(store.count == 0)
    }

    // MARK: - Damage

    /// A byte of a value changed on disk: the row's checksum no longer matches, so the read is a
    /// miss (logged) and the row is deleted — never the changed bytes.
    @Test func aDamagedRowIsAMissNeverAWrongValue() throws {
        let value = Data(repeating: UInt8(ascii: "v"), count: 300) + Data("needle-of-the-value".utf8)
        do {
            let store = try open()
            try store.setValue(value, forKey: "damaged")
            try store.setValue(Data("intact".utf8), forKey: "intact")
            try store.flush()
        }
        try patchDatabase(replacing: Data("needle-of-the-value".utf8), with: Data("needle-of-the-valuE".utf8))
        let log = LogCapture()
        let store = try open(logger: log)
        #expect(try store.value(forKey: "damaged") == nil)
        #expect(log.lines.contains { $0.contains("damaged row") }, "\(log.lines)")
        #expect(store.count == 1)
        #expect(try store.value(forKey: "intact") == Data("intact".utf8))
    }

    /// A row whose stored key is not the key asked for (two keys whose MD5s share their high 64
    /// bits; made here by changing the stored key on disk) is a miss.
    @Test func aRowOfAnotherKeyIsAMiss() throws {
        do {
            let store = try open()
            try store.setValue(Data("the value of key-AAAA".utf8), forKey: "key-AAAA")
            try store.flush()
        }
        try patchDatabase(replacing: Data("key-AAAA".utf8), with: Data("key-BBBB".utf8))
        let store = try open()
        #expect(try store.value(forKey: "key-AAAA") == nil)
        #expect(try store.value(forKey: "key-BBBB") == nil)   // its MD5 picks another row
        #expect(try store.entries().map(\.key) == ["key-BBBB"])
        try store.removeValue(forKey: "key-AAAA")   // its id's row holds another key: left alone
        #expect(try store.entries().map(\.key) == ["key-BBBB"])
        #expect(store.statistics.removals == 0)
    }

    /// A database cut short (a disk that lost its end): values still there read whole, the rest
    /// are misses or a clear error — never wrong bytes.
    @Test func aTruncatedDatabaseNeverGivesAWrongValue() async throws {
        let values = (0..<400).map { i in Data("value \(i) ".utf8) + Data(repeating: UInt8(i % 251), count: 900) }
        // Closed before the cut: the last checkpoint has copied the log into the database (under
        // load the cut came first once, and every value was read whole from the log).
        try await withStoreClosedAfterwards { store in
            for (i, value) in values.enumerated() { try store.setValue(value, forKey: "key \(i)") }
            try store.flush()
        }
        try readTruncatedDatabase(values)
    }

    func readTruncatedDatabase(_ values: [Data]) throws {
        let size = try #require(try FileManager.default.attributesOfItem(atPath: databasePath)[.size] as? Int)
        let handle = try #require(FileHandle(forUpdatingAtPath: databasePath))
        try handle.truncate(atOffset: UInt64(size / 2))
        try handle.close()
        let store: SQLiteStore
        let log = LogCapture()
        do {
            store = try open(capacity: nil, logger: log)
        } catch let error as StoreError {
            #expect(error.code == .corrupted, "\(error)")
            return
        }
        var whole = 0
        for (i, value) in values.enumerated() {
            do {
                if let read = try store.value(forKey: "key \(i)") {
                    #expect(read == value, "key \(i)")
                    whole += 1
                }
            } catch let error as StoreError {
                #expect(error.code == .corrupted || error.code == .io, "\(error)")
            }
        }
        #expect(whole < values.count)
        #expect(log.lines.contains { $0.contains("damaged") })
    }

    /// The corruption suite for the database: copies of one database with 1–16 bytes changed at
    /// random (header, B-tree pages, values alike). Opening is a store or a clear `StoreError`, and
    /// every read the value written for its key, a miss, or a `StoreError` — never other bytes.
    @Test func randomDamageIsAMissOrAClearErrorNeverAWrongValue() throws {
        func value(_ i: Int) -> Data { Data("value \(i) ".utf8) + Data(repeating: UInt8(i % 251), count: (i * 97) % 3_000) }
        do {
            let store = try open(capacity: nil)
            for i in 0..<300 { try store.setValue(value(i), forKey: "key \(i)") }
            try store.flush()
        }
        let pristine = try Data(contentsOf: URL(fileURLWithPath: databasePath))
        var random = SeededRandomNumberGenerator(seed: 9)
        var tally = (opened: 0, refused: 0, hits: 0, misses: 0, errors: 0)
        for _ in 0..<60 {
            var damaged = pristine
            for _ in 0..<Int.random(in: 1...16, using: &random) {
                damaged[Int.random(in: 0..<damaged.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            }
            for suffix in ["-wal", "-shm"] { unlink(databasePath + suffix) }
            try damaged.write(to: URL(fileURLWithPath: databasePath))
            let store: SQLiteStore
            do {
                store = try open(capacity: nil, logger: LogCapture())
                tally.opened += 1
            } catch let error as StoreError {
                #expect([.corrupted, .notAStore, .io].contains(error.code), "\(error)")
                tally.refused += 1
                continue
            }
            for i in 0..<300 {
                do {
                    if let read = try store.value(forKey: "key \(i)") {
                        #expect(read == value(i), "key \(i): \(read.count) bytes that are not its value")
                        tally.hits += 1
                    } else {
                        tally.misses += 1
                    }
                } catch let error as StoreError {
                    if tally.errors < 3 { print("random damage, read error: \(error)") }
                    tally.errors += 1
                }
            }
        }
        #expect(tally.hits > 0)
        print("random damage: \(tally)")
    }

    @Test func aDatabaseOfAnotherApplicationIsRefused() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        _ = try FileStore(directory: folder)   // a store folder, with its marker
        try open().flush()   // creates the database, its header in the file
        try patchDatabase(replacing: Data([0x48, 0x4E, 0x4B, 0x56]), with: Data([0x41, 0x42, 0x43, 0x44]))
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore, "\(String(describing: error))")
    }

    // MARK: - The file system

    @Test func itsFilesArePrivateToTheUser() throws {
        let store = try open()
        try store.setValue(Data("x".utf8), forKey: "k")
        #expect(mode(folder) == 0o700)
        for name in [SQLiteStore.databaseFileName, SQLiteStore.databaseFileName + "-wal", SQLiteStore.databaseFileName + "-shm"] {
            #expect(FileManager.default.fileExists(atPath: folder + "/" + name), "\(name)")
            #expect(mode(folder + "/" + name) == 0o600, "\(name): \(String(mode(folder + "/" + name), radix: 8))")
        }
    }

    @Test func aFolderThatIsNotAStoresIsRefused() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: folder + "/notes.txt"))
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["notes.txt"])
    }

    @Test func aLinkInPlaceOfTheDatabaseIsNotFollowed() throws {
        do { _ = try open() }
        let elsewhere = directory.appending("elsewhere.sqlite")
        try FileManager.default.moveItem(atPath: databasePath, toPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: databasePath, withDestinationPath: elsewhere)
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore, "\(String(describing: error))")
        #expect(error?.message.contains("symbolic link") == true, "\(String(describing: error))")
    }

    /// SQLite deletes its log and the log's index when its last connection closes, which a store
    /// just released does on the executor. A store opened meanwhile may look at the index as its
    /// name is being removed and see a regular file of no name: that is not refused (CI's
    /// `bench-smoke` failed so, with "a file with 0 names"). A file of two names still is.
    @Test func aCompanionRemovedAsItIsCheckedIsNotRefused() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/" + SQLiteStore.databaseFileName + "-shm"
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        #expect(SharedStoreFolder.refusal(of: try POSIX.status(of: descriptor, path: path)) == nil)
        #expect(link(path, folder + "/second-name") == 0)
        #expect(SharedStoreFolder.refusal(of: try POSIX.status(of: descriptor, path: path)) == "a file with 2 names")
        unlink(folder + "/second-name")
        unlink(path)
        let removed = try POSIX.status(of: descriptor, path: path)
        #expect(removed.links == 0 && removed.isFile)
        #expect(SharedStoreFolder.refusal(of: removed) == nil)
        #expect(SharedStoreFolder.refusal(of: nil) == nil)
    }

    /// A FileStore on the same folder leaves the database alone and does not call it foreign.
    @Test func aFileStoreSharesTheFolder() throws {
        let small = try open()
        try small.setValue(Data("small".utf8), forKey: "s")
        let files = try FileStore(directory: folder)
        try files.setValue(Data(repeating: 1, count: 50_000), forKey: "l")
        let inspection = try FileStore.inspect(directory: folder)
        #expect(inspection.problems.isEmpty, "\(inspection.problems)")
        #expect(inspection.entries.map(\.key) == ["l"])
        try files.removeAll()
        #expect(try small.value(forKey: "s") == Data("small".utf8))
    }

    /// The folder as a store leaves it between creating its marker and writing it.
    func makeFolderWithAnEmptyMarker() {
        mkdir(folder, 0o700)
        _ = FileManager.default.createFile(atPath: folder + "/" + StoreNames.marker, contents: Data(), attributes: [.posixPermissions: 0o600])
    }

    /// A FileStore and an SQLiteStore open one new folder at once (a format's two disk layers):
    /// the second reads the marker the first has made but not yet written, and by the time it
    /// looks at the folder the first has written its marker and its first entry. The marker is
    /// read again, not refused (the ServerMemoryProbe flake).
    @Test func aMarkerWrittenAfterItWasReadEmptyIsReadAgain() throws {
        makeFolderWithAnEmptyMarker()
        let path = folder
        let reads = Locked<[Int]>([])
        _ = try SharedStoreFolder(path: path, access: .owner, afterReadingMarker: { bytes in
            reads.withLock { $0.append(bytes.count) }
            guard bytes.isEmpty else { return }
            do {
                try FileStore(directory: path).setValue(Data("first".utf8), forKey: "k")
            } catch {
                Issue.record(error, "the first store")
            }
        })
        #expect(reads.withLock { $0.first } == 0)
        #expect(reads.withLock { $0.count } == 2)
        #expect(try FileStore(directory: path).value(forKey: "k") == Data("first".utf8))
        try open().setValue(Data("second".utf8), forKey: "s")
        #expect(try open().value(forKey: "s") == Data("second".utf8))
    }

    /// An empty marker beside files no store is making is refused, after a few looks.
    @Test func anEmptyMarkerBesideOtherFilesIsRefused() throws {
        makeFolderWithAnEmptyMarker()
        _ = FileManager.default.createFile(atPath: folder + "/notes.txt", contents: Data("mine".utf8))
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore)
        #expect(error?.message.contains("is empty") == true, "\(error?.message ?? "")")
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/notes.txt")) == Data("mine".utf8))
    }

    // MARK: - Capacity

    /// The capacity bounds what `du` counts for the store's files; the least recently used
    /// entries go first. (About 130 rows fit, twice a sampling window: eviction samples.)
    @Test func theCapacityBoundsTheBytesOnDisk() throws {
        let capacity = 1 << 20
        let clock = TestClock()
        let store = try open(capacity: capacity, clock: clock)
        try store.setValue(Data(repeating: 7, count: 4_096), forKey: "kept")
        for i in 0..<1_000 {
            clock.advance(by: .milliseconds(1))
            try store.setValue(Data(repeating: UInt8(i % 256), count: 4_096), forKey: "key \(i)")
            if i % 10 == 0 { _ = try store.value(forKey: "kept") }
            #expect(store.usedSize <= capacity, "after \(i) writes")
        }
        try store.flush()
        #expect(try allocatedBytesOfFiles(folder) <= capacity + 8_192, "marker included")
        #expect(try store.value(forKey: "kept") == Data(repeating: 7, count: 4_096))
        #expect(try store.value(forKey: "key 0") == nil)
        #expect(try store.value(forKey: "key 999") == Data(repeating: UInt8(999 % 256), count: 4_096))
        #expect(store.statistics.evictions > 700)
    }

    /// Eviction keeps no index of uses: it deletes the least recently used quarter of a sample of
    /// rows read in windows at random places. With thousands of rows, far more than a window, it
    /// still evicts only entries older than every entry read since: none of the 308 entries read
    /// after 4,000 were written goes, nor any of the 2,500 written after them, while more than
    /// 1,500 of the others are evicted.
    @Test func evictionBySamplingKeepsTheRecentlyUsed() throws {
        let clock = TestClock()
        let store = try open(capacity: 4 << 20, clock: clock)
        var random = SeededRandomNumberGenerator(seed: 16)
        func value() -> Data { Data((0..<512).map { _ in UInt8.random(in: 0...255, using: &random) }) }
        for i in 0..<4_000 {
            clock.advance(by: .milliseconds(1))
            try store.setValue(value(), forKey: "old \(i)")
        }
        #expect(store.statistics.evictions == 0, "the old entries fit")
        for i in stride(from: 0, to: 4_000, by: 4_000 / 300) {
            clock.advance(by: .milliseconds(1))
            _ = try store.value(forKey: "old \(i)")
        }
        for i in 0..<2_500 {
            clock.advance(by: .milliseconds(1))
            try store.setValue(value(), forKey: "new \(i)")
        }
        #expect(store.statistics.evictions > 1_500)
        let keys = Set(try store.entries().map(\.key))
        let read = stride(from: 0, to: 4_000, by: 4_000 / 300).map { "old \($0)" }
        #expect(read.filter { !keys.contains($0) }.isEmpty, "entries read after the old ones were written were evicted")
        #expect((0..<2_500).filter { !keys.contains("new \($0)") }.isEmpty, "new entries were evicted")
    }

    /// A trim to nothing deletes every row, a bounded sample at a time (6,000 rows: more than one
    /// round's sample).
    @Test func aTrimToNothingEvictsEveryRow() throws {
        let store = try open(capacity: nil)
        for i in 0..<6_000 { try store.setValue(Data(repeating: UInt8(i % 256), count: 512), forKey: "key \(i)") }
        try store.trim(toSize: 0)
        #expect(store.count == 0)
        #expect(store.statistics.evictions == 6_000)
    }

    /// The page cache is sized by the configuration: 32 MiB by default (SQLite's own is 2 MB).
    @Test func thePageCacheIsSizedByTheConfiguration() throws {
        let store = try open(capacity: nil)
        #expect(try store.state.withLock { try $0.database.pageCacheSize() } == 32 << 20)
        let small = try SQLiteStore(directory: directory.appending("small"), configuration: .init(pageCacheSize: 1 << 20))
        #expect(try small.state.withLock { try $0.database.pageCacheSize() } == 1 << 20)
    }

    @Test func aValueOverTheCapacityIsRefused() throws {
        let store = try open(capacity: 256 << 10)
        let error = #expect(throws: StoreError.self) { try store.setValue(Data(count: 300 << 10), forKey: "big") }
        #expect(error?.code == .valueTooLarge)
        #expect(error?.message.contains("big") == true)
    }

    /// Small values share pages: 2,000 values of 512 bytes take well under the 8× a file each takes.
    @Test func smallValuesSharePages() throws {
        let store = try open(capacity: nil)
        var random = SeededRandomNumberGenerator(seed: 16)
        for i in 0..<2_000 {
            try store.setValue(Data((0..<512).map { _ in UInt8.random(in: 0...255, using: &random) }), forKey: "key-\(i)")
        }
        try store.flush()
        let ratio = Double(try allocatedBytesOfFiles(folder)) / Double(2_000 * 512)
        #expect(ratio < 1.6, "\(ratio)× the payload")
    }

    // MARK: - Routing

    /// A key moves between the engines as its value's size changes, and is never in both.
    @Test func aRoutedKeyLivesInOneStore() async throws {
        let small = try open()
        let large = try FileStore(directory: folder)
        let routed = small.routingLargeValues(over: 1_024, to: large)
        try await routed.setValue(Data(count: 100), forKey: "k")
        #expect(try await small.value(forKey: "k") == Data(count: 100))
        #expect(try await large.value(forKey: "k") == nil)
        try await routed.setValue(Data(count: 5_000), forKey: "k")
        #expect(try await small.value(forKey: "k") == nil)
        #expect(try await large.value(forKey: "k") == Data(count: 5_000))
        #expect(try await routed.value(forKey: "k") == Data(count: 5_000))
        try await routed.setValue(Data(count: 1_024), forKey: "k")
        #expect(try await large.value(forKey: "k") == nil)
        #expect(try await routed.value(forKey: "k") == Data(count: 1_024))
        try await routed.removeValue(forKey: "k")
        #expect(try await routed.value(forKey: "k") == nil)
        #expect(routed.layerStatistics.map(\.name) == ["sqlite", "file"])
    }
}

extension SQLiteStoreTests {
    /// SQLite keeps a rollback journal (`-journal`) beside the database while the transaction that
    /// creates it runs: a name of the store's own, so a `FileStore` indexing the folder then does
    /// not warn of things that are not its own (it did, for every new database).
    @Test func theRollbackJournalIsANameOfTheStoresOwn() async throws {
        _ = try open()
        let journal = databasePath + "-journal"
        #expect(FileManager.default.createFile(atPath: journal, contents: Data(), attributes: [.posixPermissions: 0o600]))
        let log = LogCapture()
        let files = try FileStore(directory: folder, configuration: .init(), logger: log.logger)
        await files.waitUntilIndexed()
        #expect(!log.lines.contains { $0.contains("not its own") }, "\(log.lines)")
    }
}

extension SQLiteStoreTests {
    /// Runs `body` with a store in the folder, releases the store, and returns once its
    /// connections (its own and its checkpointer's) have closed: a store closes them on its
    /// executor, here one of a single thread, which runs the job after them once they are done.
    /// The database file then holds every change, and no connection of the store has it open.
    func withStoreClosedAfterwards(_ body: @escaping @Sendable (SQLiteStore) throws -> Void) async throws {
        let executor = IOExecutor(width: 1, label: "test.sqlite-closed-afterwards")
        try await executor.run { [folder] in
            try body(try SQLiteStore(directory: folder, configuration: .init(capacity: 100 << 20), executor: executor))
        }
        try await executor.run {}
    }

    /// Runs `body` with a connection of SQLite itself to the database at `path`, closed after it.
    /// A store released just before closes its database on its executor, which locks the database
    /// for a moment (the log's last checkpoint); this connection waits for that rather than fail
    /// with "database is locked" (it did, once in a CI run). The suite's bodies run off the pool.
    func withConnection<T>(to path: String, flags: Int32 = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, _ body: (OpaquePointer?) throws -> T) throws -> T {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK else { throw StoreError(.io, "could not open \(path)") }
        sqlite3_busy_timeout(handle, 10_000)
        return try body(handle)
    }

    /// Runs `sql` on the database at `path` through SQLite itself (making files a store never would).
    func execute(_ sql: String, on path: String) throws {
        try withConnection(to: path) { handle in
            var message: UnsafeMutablePointer<CChar>?
            guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
                defer { sqlite3_free(message) }
                throw StoreError(.io, "\(sql): \(message.map { String(cString: $0) } ?? "")")
            }
        }
    }

    /// A database with the store's header whose `entries` is an endless view: the store and the
    /// inspection API (the tool's `inspect`, `get`, `verify`) refuse it at once instead of reading
    /// rows for ever (they hung).
    @Test func aDatabaseWhoseEntriesAreAnEndlessViewIsRefusedAtOnce() async throws {
        _ = try open()
        try FileManager.default.removeItem(atPath: databasePath)
        try execute("""
            PRAGMA application_id = \(Database.applicationID); PRAGMA user_version = \(Database.formatVersion);
            CREATE VIEW entries(id, checksum, created, expires, used, key, value) AS
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
                SELECT i, 0, 0, NULL, i, CAST(i AS BLOB), zeroblob(10) FROM n;
            """, on: databasePath)
        #expect(chmod(databasePath, 0o600) == 0)
        for attempt in [
            { _ = try SQLiteStore.inspect(directory: self.folder) },
            { _ = try SQLiteStore.value(forKey: "1", inDirectory: self.folder) },
            { _ = try SQLiteStore.repair(directory: self.folder) },
            { _ = try self.open() },
        ] as [() throws -> Void] {
            let error = #expect(throws: StoreError.self) { try attempt() }
            #expect(error?.code == .notAStore, "\(String(describing: error))")
        }
    }

    /// The inspection API's connections give up after their time limit with `timeout`: a
    /// statement that would run for ever is interrupted.
    @Test func aStatementPastTheTimeLimitIsInterrupted() throws {
        _ = try open()
        let database = try Database(
            folder: SharedStoreFolder(path: folder, access: .owner), readOnly: true, durable: false, pageSize: SQLiteStore.pageSize, walPages: 8,
            busyTimeout: .seconds(1), timeLimit: .milliseconds(200)
        )
        let error = #expect(throws: StoreError.self) {
            try database.run("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n")
        }
        #expect(error?.code == .timeout, "\(String(describing: error))")
    }
}

extension SQLiteStoreTests {
    /// SQLite opens and deletes the database's files through the folder held open, not through its
    /// path: with the store's folder moved away and another folder put at its path, the store
    /// keeps using its own, and when it closes it deletes its own log, not a file of the same
    /// name in the folder now at the path (it did: SQLite deleted the log by path).
    @Test func theDatabaseFilesAreReachedThroughTheFolderHeldOpenNotItsPath() async throws {
        let executor = IOExecutor(width: 1, label: "closing")
        var store: SQLiteStore? = try SQLiteStore(directory: folder, configuration: .init(), executor: executor)
        try await store?.setValue(Data("before".utf8), forKey: "k")
        let moved = directory.appending("moved")
        #expect(rename(folder, moved) == 0)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let planted = databasePath + "-wal"
        #expect(FileManager.default.createFile(atPath: planted, contents: Data("someone else's".utf8), attributes: [.posixPermissions: 0o600]))
        try await store?.setValue(Data("after".utf8), forKey: "k")
        // The store closes its database on its executor: a job submitted after runs once it has.
        store = nil
        try await executor.run {}
        #expect(FileManager.default.contents(atPath: planted) == Data("someone else's".utf8), "the file at the path was left alone")
        #expect(!FileManager.default.fileExists(atPath: moved + "/" + SQLiteStore.databaseFileName + "-wal"), "its own log was checkpointed and deleted")
        let reopened = try SQLiteStore(directory: moved)
        #expect(try await reopened.value(forKey: "k") == Data("after".utf8))
    }
}

extension SQLiteStoreTests {
    func write(_ count: Int, _ prefix: String, to store: SQLiteStore) throws {
        for index in 0..<count { try store.setValue(Data("\(prefix)-\(index)".utf8), forKey: "\(prefix)-\(index)") }
    }

    /// A database deleted, or replaced by another store's, under a live store: the writes
    /// acknowledged after it are in the database at the name, not in a file no one will open
    /// again (500 of 500 were lost).
    @Test(arguments: ["deleted", "replaced", "folder deleted"])
    func aDatabaseDeletedOrReplacedUnderALiveStoreLosesNoAcknowledgedWrite(how: String) async throws {
        let store = try open()
        try write(10, "before", to: store)
        let other = directory.appending("other")
        switch how {
        case "deleted":
            for name in ["", "-wal", "-shm"] { unlink(databasePath + name) }
        case "replaced":
            // The other store closes its database (moving its log's writes into the file) on its
            // executor once released; with one job at a time there, a job submitted after the
            // release runs once it has closed, and the file renamed holds its 3 rows.
            let closing = IOExecutor(width: 1, label: "closing")
            do { try write(3, "other", to: SQLiteStore(directory: other, executor: closing)) }
            try await closing.run {}
            #expect(rename(other + "/" + SQLiteStore.databaseFileName, databasePath) == 0)
        default:
            try FileManager.default.removeItem(atPath: folder)
        }
        try write(500, "after", to: store)
        let reopened = try SQLiteStore(directory: folder)
        #expect(reopened.count == (how == "replaced" ? 503 : 500))
        #expect(try await reopened.value(forKey: "after-499") == Data("after-499".utf8))
        if how == "replaced" {
            // The replacing database's rows, not the replaced one's: the replaced database's log,
            // left at its name, was once read over the new file (510 rows, "other-…" missing).
            #expect(try await reopened.value(forKey: "other-2") == Data("other-2".utf8))
            #expect(try await reopened.value(forKey: "before-0") == nil)
        }
    }
}
