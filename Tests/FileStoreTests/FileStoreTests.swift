import Foundation
import FileStore
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct FileStoreTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "filestore")
    }

    /// Opens a store on the folder and waits until it has indexed it: these tests are about what a
    /// store does once open (BackgroundIndexingTests hold the index's builder to test the store
    /// while it indexes).
    func open(
        capacity: Int? = 100 << 20,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        clock: any StoreClock = SystemClock(),
        durableWrites: Bool = false
    ) throws -> FileStore {
        let store = try FileStore(
            directory: directory.path,
            configuration: .init(capacity: capacity, countLimit: countLimit, timeToLive: timeToLive, clock: clock, durableWrites: durableWrites)
        )
        store.waitUntilIndexed()
        return store
    }

    /// The size of an entry's file: the 40-byte header, the key, the value.
    func fileSize(key: String, valueSize: Int) -> Int { 40 + key.utf8.count + valueSize }

    /// The file system's block: what a small file takes on disk.
    var block: Int { Int(statBuffer(directory.path).st_blksize) }

    /// What the store's own files (marker and journal) take on disk in a new store: a block each.
    var metadata: Int { 2 * block }

    /// What a capacity must hold besides the entries: the marker, the journal, and the two blocks
    /// the store keeps free for the journal.
    var overhead: Int { metadata + 2 * block }

    func statBuffer(_ path: String) -> stat {
        var info = stat()
        lstat(path, &info)
        return info
    }

    /// The blocks every regular file below the folder takes on disk, as `du` counts them without
    /// the folders: what the store's `totalSize` plus `metadataSize` must equal.
    func allocatedBytesOfFiles() throws -> Int {
        try FileManager.default.subpathsOfDirectory(atPath: directory.path).reduce(0) { total, path in
            let info = statBuffer(directory.appending(path))
            return (info.st_mode & S_IFMT) == S_IFREG ? total + Int(info.st_blocks) * 512 : total
        }
    }

    // MARK: - Conformance

    @Test func conformsToStore() async throws {
        try await StoreConformanceSuite {
            try TemporaryStore { try FileStore(directory: $0.path) }
        }.run()
    }

    /// The longest durations a configuration can hold are clamped, never a trap.
    @Test func conformsWithTheLongestLifetimeAndFlushInterval() async throws {
        try await StoreConformanceSuite {
            try TemporaryStore {
                try FileStore(directory: $0.path, configuration: .init(timeToLive: .seconds(Int64.max), recencyFlushInterval: .seconds(Int64.max)))
            }
        }.run()
    }

    @Test func aMemoryStoreChainedToAFileStoreConforms() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>(countLimit: 100)
                .chained(to: try TemporaryStore { try FileStore(directory: $0.path) })
        }.run()
    }

    @Test func durableWritesConform() async throws {
        var suite = StoreConformanceSuite {
            try TemporaryStore { try FileStore(directory: $0.path, configuration: .init(durableWrites: true)) }
        }
        suite.manyKeysCount = 50
        suite.operationsPerTask = 40
        try await suite.run()
    }

    // MARK: - Names

    @Test(arguments: [
        ("", "D41D8CD98F00B204E9800998ECF8427E"),
        ("http://haneke.io", "E7BBF4E61BE4FE99E3DD95F99B666AA0"),
        ("The quick brown fox jumps over the lazy dog", "9E107D9D372BB6826BD81D3542A419D6"),
    ])
    func aKeysPathIsTheShardThenTheUpperCaseMD5(key: String, md5: String) throws {
        let store = try open()
        let shard = String(md5.prefix(2))
        #expect(store.path(forKey: key) == "\(directory.path)/\(shard)/\(md5)")
        try store.setValue(Data("v".utf8), forKey: key)
        #expect(FileManager.default.fileExists(atPath: "\(directory.path)/\(shard)/\(md5)"))
    }

    @Test func hostileKeysStayInsideTheDirectoryAndNeverCollide() throws {
        let store = try open(capacity: nil)
        let keys = [
            "", ".", "..", "../../etc/passwd", "/absolute/path", "a/../../b", "nul\u{0}byte", "\u{0}",
            "emoji 🙂🚀", "ключ", "\\\\server\\share", String(repeating: "x", count: 1 << 20), "%2e%2e%2f",
            "CON", "a\nb", " ", "\u{FEFF}",
        ]
        for (i, key) in keys.enumerated() {
            try store.setValue(Data("value \(i)".utf8), forKey: key)
        }
        for (i, key) in keys.enumerated() {
            #expect(try store.value(forKey: key) == Data("value \(i)".utf8), "key #\(i)")
        }
        let paths = keys.map(store.path(forKey:))
        #expect(Set(paths).count == keys.count)
        // Every file the store made is an entry file in a shard folder of its directory.
        let everything = try FileManager.default.subpathsOfDirectory(atPath: directory.path)
            .filter { !$0.hasPrefix(".haneke-") && !Set((0..<256).map { String(format: "%02X", $0) }).contains($0) }
        #expect(Set(everything) == Set(paths.map { String($0.dropFirst(directory.path.count + 1)) }))
        #expect(Set(store.keys()) == Set(keys))
    }

    @Test func aKeyOver16MiBIsRefused() throws {
        let store = try open(capacity: nil)
        let error = #expect(throws: StoreError.self) {
            try store.setValue(Data(), forKey: String(repeating: "k", count: (16 << 20) + 1))
        }
        #expect(error?.code == .invalidKey)
    }

    // MARK: - Sizes

    /// Sizes are blocks on disk, as `du` counts them: the store's own files included.
    @Test func sizesFollowSetOverwriteRemoveAndRemoveAll() throws {
        let store = try open()
        #expect(store.totalSize == 0)
        #expect(store.metadataSize == metadata)
        #expect(try allocatedBytesOfFiles() == metadata)
        try store.setValue(Data(count: 1000), forKey: "a")
        #expect(store.totalSize == block)   // 1,041 bytes take a whole block
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
        #expect(store.count == 1)

        try store.setValue(Data(count: 3 * block), forKey: "a")   // the old size is subtracted
        #expect(store.totalSize == 4 * block)
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))

        try store.setValue(Data(count: 50), forKey: "bb")
        #expect(store.totalSize == 5 * block)
        #expect(store.count == 2)

        try store.removeValue(forKey: "a")
        #expect(store.totalSize == block)
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
        #expect(!FileManager.default.fileExists(atPath: store.path(forKey: "a")))

        try store.removeAll()
        #expect(store.totalSize == 0)
        #expect(store.count == 0)
        #expect(try entryFiles().isEmpty)
        try store.setValue(Data(count: 7), forKey: "c")
        #expect(try store.value(forKey: "c") == Data(count: 7))
    }

    @Test func aValueLargerThanTheCapacityIsRefusedAndNothingIsEvicted() throws {
        let store = try open(capacity: overhead + 2 * block)
        try store.setValue(Data(count: 100), forKey: "small")
        let error = #expect(throws: StoreError.self) { try store.setValue(Data(count: 2 * block), forKey: "big") }
        #expect(error?.code == .valueTooLarge)
        #expect(error?.message.contains("big") == true)
        #expect(try store.value(forKey: "small") == Data(count: 100))
        #expect(try store.value(forKey: "big") == nil)
        #expect(try entryFiles().count == 1)
    }

    @Test func emptyValuesAreStored() throws {
        let store = try open()
        try store.setValue(Data(), forKey: "empty")
        #expect(try store.value(forKey: "empty") == Data())
    }

    @Test(arguments: [1, 4096, 65_536, 1 << 20, 5 << 20])
    func valuesOfEverySizeRoundTrip(size: Int) throws {
        let store = try open()
        var random = SeededRandomNumberGenerator(seed: UInt64(size))
        let value = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &random) })
        try store.setValue(value, forKey: "k")
        #expect(try store.value(forKey: "k") == value)
        // A second store knows nothing of the size and reads the file from its header.
        #expect(try open().value(forKey: "k") == value)
    }

    // MARK: - LRU

    @Test func theCapacityEvictsTheLeastRecentlyUsedOnWrite() throws {
        let store = try open(capacity: overhead + 3 * block)
        for key in ["a", "b", "c"] { try store.setValue(Data(count: 100), forKey: key) }
        _ = try store.value(forKey: "a")                       // reading refreshes recency
        try store.setValue(Data(count: 100), forKey: "d")     // b is the least recently used
        #expect(store.keys() == ["d", "a", "c"])
        #expect(!FileManager.default.fileExists(atPath: store.path(forKey: "b")))
        #expect(store.totalSize == 3 * block)
        #expect(store.statistics.evictions == 1)
    }

    @Test func aLargeWriteEvictsAsManyAsItNeeds() throws {
        let store = try open(capacity: overhead + 10 * block)
        for i in 0..<9 { try store.setValue(Data(count: 50), forKey: "k\(i)") }
        try store.setValue(Data(count: 5 * block), forKey: "big")
        #expect(store.totalSize + store.metadataSize <= overhead + 10 * block)
        #expect(store.count == 5)
        #expect(store.keys().first == "big")
        #expect(try entryFiles().count == store.count)
    }

    @Test func theCountLimitEvictsTheLeastRecentlyUsed() throws {
        let store = try open(countLimit: 2)
        for key in ["a", "b", "c"] { try store.setValue(Data([1]), forKey: key) }
        #expect(store.keys() == ["c", "b"])
        #expect(try entryFiles().count == 2)
    }

    @Test func theOrderSurvivesARestart() throws {
        do {
            let store = try open()
            for key in ["a", "b", "c", "d"] { try store.setValue(Data([1]), forKey: key) }
            _ = try store.value(forKey: "b")
            _ = try store.value(forKey: "a")
        }
        let reopened = try open()
        #expect(reopened.keys() == ["a", "b", "d", "c"])
        #expect(reopened.count == 4)
        #expect(reopened.totalSize == 4 * block)
        #expect(reopened.totalSize + reopened.metadataSize == (try allocatedBytesOfFiles()))
    }

    @Test func theOrderSurvivesAnExplicitFlushWithoutARelease() throws {
        let store = try open()
        for key in ["a", "b", "c"] { try store.setValue(Data([1]), forKey: key) }
        _ = try store.value(forKey: "a")
        try store.flush()
        #expect(try open().keys() == ["a", "c", "b"])
        withExtendedLifetime(store) {}
    }

    @Test func theEntriesUsedInTheLastSessionAreKnownByJournalOrder() throws {
        do {
            let first = try open()
            for key in ["a", "b", "c"] { try first.setValue(Data([1]), forKey: key) }
        }
        do {
            let second = try open()
            #expect(Set(second.entriesUsedInLastSession().map(\.key)) == ["a", "b", "c"])
            _ = try second.value(forKey: "b")
            try second.setValue(Data([2]), forKey: "d")
            try second.removeValue(forKey: "c")
        }
        let third = try open()
        #expect(third.entriesUsedInLastSession().map(\.key) == ["d", "b"])
        #expect(try open().entriesUsedInLastSession().isEmpty)   // the third session used nothing
    }

    /// A session short enough to do everything in the millisecond its store opened (a small tool's
    /// run) is still the last session: its records are as recent as its start.
    @Test func aSessionWithinItsOpeningMillisecondIsTheLastSession() throws {
        let clock = TestClock()
        do {
            let first = try open(clock: clock)
            for key in ["a", "b", "c"] { try first.setValue(Data([1]), forKey: key) }
            _ = try first.value(forKey: "a")
        }
        clock.advance(by: .seconds(1))
        let second = try open(clock: clock)
        #expect(Set(second.entriesUsedInLastSession().map(\.key)) == ["a", "b", "c"])
        #expect(second.keys() == ["a", "c", "b"])
    }

    @Test func peekingReadsWithoutCountingOrRefreshing() async throws {
        let store = try open()
        try await store.setValue(Data([1]), forKey: "a")
        try await store.setValue(Data([2]), forKey: "b")
        #expect(try await store.peekValue(forKey: "a") == Data([1]))
        #expect(try await store.peekValue(forKey: "missing") == nil)
        #expect(store.keys() == ["b", "a"])
        #expect(store.statistics.hits == 0)
    }

    @Test func openingWithASmallerCapacityEvictsTheLeastRecentlyUsedFirst() throws {
        do {
            let store = try open()
            for key in ["a", "b", "c", "d"] { try store.setValue(Data(count: 100), forKey: key) }
            _ = try store.value(forKey: "a")
        }
        let smaller = try open(capacity: overhead + 2 * block)
        #expect(smaller.keys() == ["a", "d"])
        #expect(smaller.totalSize == 2 * block)
        #expect(smaller.totalSize + smaller.metadataSize == (try allocatedBytesOfFiles()))
        #expect(try entryFiles().count == 2)
    }

    @Test func openingWithCapacityZeroEmptiesTheStore() throws {
        do {
            let store = try open()
            for key in ["a", "b", "c"] { try store.setValue(Data(count: 10), forKey: key) }
        }
        let empty = try open(capacity: 0)
        #expect(empty.count == 0)
        #expect(try entryFiles().isEmpty)
    }

    @Test func openingIndexesFilesTheJournalDoesNotKnow() throws {
        do {
            let store = try open()
            for key in ["a", "b"] { try store.setValue(Data(count: 10), forKey: key) }
        }
        try FileManager.default.removeItem(atPath: directory.appending(".haneke-journal"))
        let reopened = try open()
        #expect(reopened.count == 2)
        #expect(Set(reopened.keys()) == ["a", "b"])
        #expect(try reopened.value(forKey: "a") == Data(count: 10))
    }

    @Test func trimToSizeEvictsTheLeastRecentlyUsed() throws {
        let store = try open()
        for key in ["a", "b", "c"] { try store.setValue(Data(count: 100), forKey: key) }
        _ = try store.value(forKey: "a")
        try store.trim(toSize: overhead + block)
        #expect(store.keys() == ["a"])
        #expect(try entryFiles().count == 1)
    }

    // MARK: - Damaged and foreign files

    @Test func aFileRenamedToAnotherKeysPathIsAMiss() throws {
        let store = try open()
        try store.setValue(Data("for a".utf8), forKey: "a")
        let target = store.path(forKey: "b")
        try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: store.path(forKey: "a"), toPath: target)

        #expect(try store.value(forKey: "b") == nil)
        #expect(try store.value(forKey: "a") == nil)
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(store.statistics.errors == 1)
    }

    @Test(arguments: [0, 1, 39, 40, 45, 50])
    func aTruncatedFileIsAMissAndIsDeleted(keepBytes: Int) throws {
        let store = try open()
        try store.setValue(Data(repeating: 7, count: 20), forKey: "key")   // 40 + 3 + 20 = 63 bytes
        try truncate(store.path(forKey: "key"), to: keepBytes)

        #expect(try store.value(forKey: "key") == nil)
        #expect(!FileManager.default.fileExists(atPath: store.path(forKey: "key")))
        #expect(store.statistics.errors == 1)
        #expect(store.count == 0)
        // A store that did not write the file (no size in its index) sees the same.
        try store.setValue(Data(repeating: 7, count: 20), forKey: "key")
        try truncate(store.path(forKey: "key"), to: keepBytes)
        #expect(try open().value(forKey: "key") == nil)
    }

    @Test func aFileWithBytesAfterItsPayloadIsAMiss() throws {
        let store = try open()
        try store.setValue(Data("abc".utf8), forKey: "k")
        let handle = try #require(FileHandle(forWritingAtPath: store.path(forKey: "k")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("extra".utf8))
        try handle.close()
        #expect(try open().value(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: store.path(forKey: "k")))
    }

    @Test(arguments: 0..<8)
    func garbageIsAMissAndIsDeleted(seed: Int) throws {
        let store = try open()
        let path = store.path(forKey: "k")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var random = SeededRandomNumberGenerator(seed: UInt64(seed))
        let garbage = Data((0..<(seed * 37)).map { _ in UInt8.random(in: 0...255, using: &random) })
        _ = FileManager.default.createFile(atPath: path, contents: garbage)

        #expect(try store.value(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!store.containsValue(forKey: "k"))
    }

    /// Every byte of the header and key is checked (magic, version, checksum over the fixed fields,
    /// key). Payload bytes are not: a FileStore alone does not checksum values; the compressed layer
    /// above it does (LZ4's content checksum).
    @Test func aFlippedHeaderOrKeyBitIsAMiss() throws {
        let store = try open()
        try store.setValue(Data("payload".utf8), forKey: "k")
        let path = store.path(forKey: "k")
        for offset in [0, 3, 4, 7, 9, 13, 17, 26, 33, 40] {
            try store.setValue(Data("payload".utf8), forKey: "k")
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes[offset] ^= 0x10
            try bytes.write(to: URL(fileURLWithPath: path))
            #expect(try store.value(forKey: "k") == nil, "offset \(offset)")
        }
    }

    // MARK: - Time to live

    @Test func entriesExpireWithTheClock() throws {
        let clock = TestClock()
        let store = try open(timeToLive: .seconds(60), clock: clock)
        try store.setValue(Data("v".utf8), forKey: "k")
        clock.advance(by: .seconds(59))
        #expect(try store.value(forKey: "k") == Data("v".utf8))
        #expect(store.containsValue(forKey: "k"))
        clock.advance(by: .seconds(1))
        #expect(!store.containsValue(forKey: "k"))
        #expect(try store.value(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: store.path(forKey: "k")))
        #expect(store.statistics.evictions == 1)
    }

    @Test func theExpiryIsInTheFileSoItSurvivesARestart() throws {
        let clock = TestClock()
        try open(timeToLive: .seconds(10), clock: clock).setValue(Data("v".utf8), forKey: "k")
        clock.advance(by: .seconds(11))
        #expect(try open(clock: clock).value(forKey: "k") == nil)   // no TTL configured now: the file still says
    }

    @Test func entriesDescribeTheirFiles() throws {
        let clock = TestClock()
        let store = try open(timeToLive: .seconds(30), clock: clock)
        try store.setValue(Data(count: 12), forKey: "key")
        let entry = try #require(store.entries().first)
        #expect(entry.key == "key")
        #expect(entry.path == store.path(forKey: "key"))
        #expect(entry.payloadSize == 12)
        #expect(entry.storedSize == fileSize(key: "key", valueSize: 12))
        #expect(entry.created == clock.now())
        #expect(entry.expires == clock.now().addingTimeInterval(30))
        #expect(entry.lastAccess == clock.now())
    }

    // MARK: - Crashes, other processes, and the directory going away

    @Test func temporaryFilesOfCrashedWritersAreRemovedWhenAStoreOpens() throws {
        do { try open().setValue(Data([1]), forKey: "k") }
        let shard = directory.appending("AB")
        try FileManager.default.createDirectory(atPath: shard, withIntermediateDirectories: true)
        let deadPID = try #require((100_000...4_000_000).first { kill(pid_t($0), 0) != 0 && errno == ESRCH })
        let abandoned = shard + "/.haneke-tmp.\(deadPID).1"
        let abandonedJournal = directory.appending(".haneke-tmp.\(deadPID).2")
        let live = shard + "/.haneke-tmp.\(getpid()).999"
        // Names that only look like the store's: never touched.
        let lookalikes = [shard + "/.tmp.\(deadPID).1", shard + "/.haneke-tmp.0\(deadPID).1", shard + "/.haneke-tmp.\(deadPID).1.bak",
                          directory.appending(".trash.\(deadPID).3"), directory.appending("journal")]
        for path in [abandoned, abandonedJournal, live] + lookalikes {
            _ = FileManager.default.createFile(atPath: path, contents: Data("partial".utf8))
        }

        let store = try open()
        #expect(!FileManager.default.fileExists(atPath: abandoned))
        #expect(!FileManager.default.fileExists(atPath: abandonedJournal))
        #expect(FileManager.default.fileExists(atPath: live))   // its writer (this process) may still rename it
        for path in lookalikes { #expect(FileManager.default.fileExists(atPath: path), "\(path)") }
        #expect(store.count == 1)
    }

    @Test func theDirectoryDeletedBehindTheStoresBackLeavesItUsable() async throws {
        let store = try open()
        try await store.setValue(Data("before".utf8), forKey: "a")
        try FileManager.default.removeItem(atPath: directory.path)

        #expect(try await store.value(forKey: "a") == nil)
        #expect(store.count == 0)
        try await store.setValue(Data("after".utf8), forKey: "b")
        #expect(try await store.value(forKey: "b") == Data("after".utf8))
        try await store.setValue(Data("async".utf8), forKey: "c")
        #expect(try await store.value(forKey: "c") == Data("async".utf8))
        try await store.removeAll()
        try await store.setValue(Data("again".utf8), forKey: "d")
        try store.flush()
        #expect(try open().keys() == ["d"])
    }

    @Test func twoStoresOnOneDirectoryNeverReturnAPartialOrWrongValue() async throws {
        let first = try open(capacity: nil)
        let second = try open(capacity: nil)
        try await first.setValue(Data("from first".utf8), forKey: "shared")
        #expect(try await second.value(forKey: "shared") == Data("from first".utf8))

        // Both write and read the same keys at once; every value names its key and is 8 KiB long.
        func value(for key: String, writer: Int, round: Int) -> Data {
            Data(String(repeating: "\(key)|\(writer)|\(round);", count: 1_000).utf8.prefix(8192))
        }
        let wrong = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (writer, store) in [first, second].enumerated() {
                group.addTask {
                    var random = SeededRandomNumberGenerator(seed: UInt64(writer))
                    for round in 0..<300 {
                        let key = "key-\(random.next() % 16)"
                        if random.next() % 2 == 0 {
                            try await store.setValue(value(for: key, writer: writer, round: round), forKey: key)
                        } else if let read = try await store.value(forKey: key) {
                            let text = String(decoding: read, as: UTF8.self)
                            if read.count != 8192 || !text.hasPrefix("\(key)|") { wrong.withLock { $0 += 1 } }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(wrong.withLock { $0 } == 0)
    }

    /// Two stores on one folder evict by the folder's recency: a key the other store wrote since is
    /// the most recently used, and the least recently used of the folder goes instead.
    @Test func aStoreEvictingKeepsAKeyAnotherStoreWroteSince() throws {
        let first = try open(capacity: overhead + 3 * block)
        let second = try open(capacity: nil)
        for i in 0...2 { try first.setValue(Data(count: 100), forKey: "k\(i)") }
        try second.setValue(Data(repeating: 2, count: 100), forKey: "k0")   // replaces the file
        try first.setValue(Data(count: 100), forKey: "k3")   // first evicts k1, not k0
        #expect(first.statistics.evictions == 1)
        #expect(try second.value(forKey: "k0") == Data(repeating: 2, count: 100))
        #expect(try first.value(forKey: "k1") == nil)
    }

    @Test func twoStoresInOneProcessWriteTheSameKeysWithoutErrors() async throws {
        let first = try open(capacity: nil)
        let second = try open(capacity: nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in [first, second, first, second] {
                group.addTask {
                    for i in 0..<300 { try await store.setValue(Data(count: 64), forKey: "key-\(i % 20)") }
                }
            }
            try await group.waitForAll()
        }
        #expect(first.statistics.errors == 0)
        #expect(second.statistics.errors == 0)
        #expect(try entryFiles().count == 20)
    }

    @Test(arguments: 0..<3)
    func manyTasksOnOneStoreKeepTheIndexAndTheFilesInAgreement(round: Int) async throws {
        let store = try open(capacity: overhead + 200 * block)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var random = SeededRandomNumberGenerator(seed: UInt64(task * 10 + round))
                    for _ in 0..<400 {
                        let key = String(format: "key-%02d", Int(random.next() % 60))
                        switch random.next() % 4 {
                        case 0, 1: try await store.setValue(Data(count: 1000), forKey: key)
                        case 2: _ = try await store.value(forKey: key)
                        default: try await store.removeValue(forKey: key)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let files = try entryFiles()
        #expect(files.count == store.count)
        try store.flush()
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
        #expect(store.totalSize + store.metadataSize <= overhead + 200 * block)
        #expect(try open().count == files.count)
    }

    @Test func asyncAndSynchronousCallsSeeTheSameStore() async throws {
        let store = try open()
        try await store.setValue(Data("async".utf8), forKey: "k")
        func readSynchronously() throws -> Data? { try store.value(forKey: "k") }
        #expect(try readSynchronously() == Data("async".utf8))
        try await store.removeValue(forKey: "k")
        #expect(try await store.value(forKey: "k") == nil)
        #expect(store.layerStatistics == [LayerStatistics(name: "file", statistics: store.statistics)])
    }

    @Test func anEnormousTimeToLiveDoesNotOverflow() throws {
        for ttl in [Duration.seconds(Int64.max), .seconds(Int64.min), .zero, .milliseconds(-5)] {
            let store = try open(timeToLive: ttl)
            try store.setValue(Data([1]), forKey: "k")
            let expected: Data? = ttl > .zero ? Data([1]) : nil
            #expect(try store.value(forKey: "k") == expected, "\(ttl)")
        }
    }

    @Test func aSymbolicLinkAtAnEntrysPathIsAMissAndItsTargetIsUntouched() throws {
        let store = try open()
        let outside = try TemporaryDirectory()
        let target = outside.appending("precious")
        _ = FileManager.default.createFile(atPath: target, contents: Data("keep me".utf8))
        let path = store.path(forKey: "k")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)

        #expect(try store.value(forKey: "k") == nil)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == Data("keep me".utf8))
        try store.setValue(Data("mine".utf8), forKey: "k")
        #expect(try store.value(forKey: "k") == Data("mine".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == Data("keep me".utf8))
    }

    @Test func aShardThatIsALinkOutOfTheDirectoryIsNeitherIndexedNorEmptied() throws {
        let outside = try TemporaryDirectory()
        let precious = outside.appending("D41D8CD98F00B204E9800998ECF8427E")   // the name of key ""
        _ = FileManager.default.createFile(atPath: precious, contents: Data("not the cache's".utf8))
        _ = try open()
        try FileManager.default.createSymbolicLink(atPath: directory.appending("D4"), withDestinationPath: outside.path)

        let store = try open()
        #expect(store.count == 0)
        #expect(try store.value(forKey: "") == nil)
        let error = #expect(throws: StoreError.self) { try store.setValue(Data("mine".utf8), forKey: "") }
        #expect(error?.code == .io)
        #expect(error?.posixCode == .ENOTDIR)
        #expect(error?.message.contains("not a folder") == true)
        try store.removeAll()
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["D41D8CD98F00B204E9800998ECF8427E"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: precious)) == Data("not the cache's".utf8))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: directory.appending("D4")) == outside.path)
    }

    @Test func aFIFOAtAnEntrysPathIsAMissNotAHang() throws {
        let store = try open()
        let path = store.path(forKey: "k")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(mkfifo(path, 0o644) == 0)
        #expect(try store.value(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(store.statistics.errors == 1)
    }

    @Test func anEmptyFolderAtAnEntrysPathIsAMissAndIsRemoved() throws {
        let store = try open()
        let path = store.path(forKey: "k")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        #expect(try store.value(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        try store.setValue(Data([7]), forKey: "k")
        #expect(try store.value(forKey: "k") == Data([7]))
    }

    /// A store never empties a folder it did not make: what is inside stays, reads miss, and writes
    /// of that key fail with a clear error.
    @Test func aFolderWithContentsAtAnEntrysPathIsAMissAndIsKept() throws {
        let store = try open()
        let path = store.path(forKey: "k")
        try FileManager.default.createDirectory(atPath: path + "/inside", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: path + "/inside/notes.txt", contents: Data("mine".utf8))
        #expect(try store.value(forKey: "k") == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/inside/notes.txt")) == Data("mine".utf8))
        let error = #expect(throws: StoreError.self) { try store.setValue(Data([7]), forKey: "k") }
        #expect(error?.code == .io)
        #expect(error?.posixCode == .EISDIR)
        try store.removeAll()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/inside/notes.txt")) == Data("mine".utf8))
    }

    @Test func aHugeSparseFileAtAnEntrysPathIsAMissWithoutAllocatingIt() throws {
        let store = try open()
        let path = store.path(forKey: "k")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        #expect(Glibc.truncate(path, 1 << 40) == 0)   // 1 TiB of nothing
        #expect(try store.value(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aFileWhereAShardFolderShouldBeGivesAClearError() throws {
        let store = try open()
        let shard = (store.path(forKey: "k") as NSString).deletingLastPathComponent
        _ = FileManager.default.createFile(atPath: shard, contents: Data("not a folder".utf8))

        let error = #expect(throws: StoreError.self) { try store.setValue(Data([1]), forKey: "k") }
        #expect(error?.code == .io)
        #expect(error?.posixCode == .ENOTDIR)
        #expect(error?.message.contains(store.path(forKey: "k")) == true)
        #expect(try store.value(forKey: "k") == nil)
        try store.setValue(Data([2]), forKey: "other key")   // other shards are unaffected
        #expect(try store.value(forKey: "other key") == Data([2]))
    }

    /// `removeAll` takes each key's stripe lock for that key's file alone (it lists the shards with
    /// no lock held), so writes go on meanwhile: whatever the interleaving, the index and the files
    /// agree afterwards, and a value read back is one that was written.
    @Test func writesDuringRemoveAllLeaveTheIndexAndTheFilesAgreeing() async throws {
        // Three rounds of 200 keys: beside every other suite under load, five of 300 took 112 s
        // of the two minutes (1.9 s alone).
        let store = try open()
        let keys = 200
        for round in 0..<3 {
            for index in 0..<keys { try await store.setValue(Data([UInt8(index & 0xFF), 1]), forKey: "key \(index)") }
            async let removal: Void = store.removeAll()
            async let writes: Void = {
                for index in stride(from: 0, to: keys, by: 3) {
                    try await store.setValue(Data([UInt8(index & 0xFF), 2]), forKey: "key \(index)")
                }
            }()
            _ = try await (removal, writes)
            let files = try entryFiles().count
            #expect(store.count == files, "round \(round): \(store.count) entries in the index, \(files) files")
            var readable = 0
            for index in 0..<keys {
                guard let value = try await store.value(forKey: "key \(index)") else { continue }
                readable += 1
                #expect(value == Data([UInt8(index & 0xFF), 2]), "round \(round): key \(index) came back from before the removal")
            }
            #expect(readable == files, "round \(round)")
        }
    }

    // MARK: - Helpers

    /// Every entry file (32-hex-digit names in shard folders) under the directory.
    func entryFiles() throws -> [String] {
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.subpathsOfDirectory(atPath: directory.path).filter { path in
            let parts = path.split(separator: "/")
            return parts.count == 2 && parts[1].count == 32 && !parts[1].hasPrefix(".")
        }
    }

    func truncate(_ path: String, to size: Int) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
    }
}
