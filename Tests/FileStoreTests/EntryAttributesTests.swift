import Foundation
@testable import FileStore
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Entries with their own expiry, time stored and metadata; add-if-absent; the version 1 files
/// 0.3.0 wrote.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct EntryAttributesTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() throws {
        directory = try TemporaryDirectory(prefix: "attributes")
    }

    func open(timeToLive: Duration? = nil, capacity: Int? = 100 << 20) throws -> FileStore {
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: capacity, timeToLive: timeToLive, clock: clock))
        store.waitUntilIndexed()
        return store
    }

    var now: Date { clock.now() }

    // MARK: - Expiry

    @Test func anEntryExpiresAtItsOwnExpiryWithoutAStoreLifetime() async throws {
        let store = try open()
        try await store.setValue(Data("token".utf8), forKey: "k", expiresAt: now.addingTimeInterval(300))
        #expect(try await store.entry(forKey: "k")?.expiresAt == now.addingTimeInterval(300))
        clock.advance(by: .seconds(299))
        #expect(try await store.value(forKey: "k") == Data("token".utf8))
        clock.advance(by: .seconds(1))
        #expect(try await store.value(forKey: "k") == nil)
        #expect(try await store.attributes(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: store.path(forKey: "k")))
    }

    @Test(arguments: [(own: 300.0, ttl: 60, expected: 60.0), (own: 30.0, ttl: 60, expected: 30.0)])
    func theStoreLifetimeIsAMaximum(own: Double, ttl: Int64, expected: Double) async throws {
        let store = try open(timeToLive: .seconds(ttl))
        try await store.setValue(Data("v".utf8), forKey: "k", expiresAt: now.addingTimeInterval(own))
        #expect(try await store.attributes(forKey: "k")?.expiresAt == now.addingTimeInterval(expected))
        clock.advance(by: .milliseconds(Int64(expected * 1000) - 1))
        #expect(try await store.value(forKey: "k") != nil)
        clock.advance(by: .milliseconds(1))
        #expect(try await store.value(forKey: "k") == nil)
    }

    @Test func aPlainWriteKeepsTheStoreLifetimeAndWritesAVersion1File() async throws {
        let store = try open(timeToLive: .seconds(60))
        try await store.setValue(Data("v".utf8), forKey: "k")
        let attributes = try #require(try await store.attributes(forKey: "k"))
        #expect(attributes == EntryAttributes(expiresAt: now.addingTimeInterval(60), storedAt: now, metadata: Data()))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.path(forKey: "k")))
        #expect(bytes[4] == 1)
        #expect(bytes.count == 40 + 1 + 1)
    }

    @Test func aGivenStoredAtIsKeptAndAMissingOneIsTheTimeOfTheWrite() async throws {
        let store = try open()
        let original = now.addingTimeInterval(-3_600)
        try await store.setEntry(StoreEntry(value: Data("a".utf8), attributes: EntryAttributes(storedAt: original)), forKey: "promoted")
        try await store.setEntry(StoreEntry(value: Data("b".utf8)), forKey: "new")
        #expect(try await store.entry(forKey: "promoted")?.attributes.storedAt == original)
        #expect(try await store.entry(forKey: "new")?.attributes.storedAt == now)
        #expect(try await store.attributes(forKey: "promoted")?.expiresAt == nil)
    }

    // MARK: - Metadata

    @Test func metadataRoundTripsWithTheValueAndAlone() async throws {
        let store = try open()
        let metadata = Data("etag: \"abc\"\nlast-modified: yesterday".utf8)
        let attributes = EntryAttributes(expiresAt: now.addingTimeInterval(60), storedAt: now.addingTimeInterval(-5), metadata: metadata)
        try await store.setEntry(StoreEntry(value: Data("body".utf8), attributes: attributes), forKey: "page")
        #expect(try await store.entry(forKey: "page") == StoreEntry(value: Data("body".utf8), attributes: attributes))
        #expect(try await store.attributes(forKey: "page") == attributes)
        #expect(try await store.entry(forKey: "page", transformedBy: { String(decoding: $0, as: UTF8.self) })?.value == "body")
        #expect(try await store.entry(forKey: "page")?.metadata == metadata)
        #expect(store.entries().first?.metadataSize == metadata.count)
        // A reopened store reads it from the file.
        let reopened = try open()
        #expect(try await reopened.attributes(forKey: "page") == attributes)
        #expect(try await reopened.value(forKey: "page") == Data("body".utf8))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.path(forKey: "page")))
        #expect(bytes[4] == 2)
        #expect(bytes.count == 48 + 4 + metadata.count + 4)
    }

    /// The bytes this thread has read through system calls so far (`rchar` of
    /// `/proc/thread-self/io`), counting the read of that file itself.
    func bytesReadByThisThread() throws -> Int {
        let text = try String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("rchar:") })
        return try #require(Int(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces)))
    }

    @Test func attributesAreReadWithoutReadingTheValue() throws {
        let store = try open()
        let payload = Data(repeating: 7, count: 4 << 20)
        try store.setEntry(StoreEntry(value: payload, attributes: EntryAttributes(metadata: Data("m".utf8))), forKey: "large")
        // The synchronous calls read on this thread: its read counter sees their I/O.
        let beforeValue = try bytesReadByThisThread()
        #expect(try store.value(forKey: "large")?.count == payload.count)
        let valueRead = try bytesReadByThisThread() - beforeValue
        #expect(valueRead >= payload.count)   // the measure sees a payload read

        let beforeAttributes = try bytesReadByThisThread()
        #expect(try store.attributes(forKey: "large")?.metadata == Data("m".utf8))
        let attributesRead = try bytesReadByThisThread() - beforeAttributes
        #expect(attributesRead < 64 << 10)

        // A payload damaged behind the store's back does not matter to its attributes.
        let handle = try #require(FileHandle(forUpdatingAtPath: store.path(forKey: "large")))
        try handle.seek(toOffset: 1 << 20)
        try handle.write(contentsOf: Data(repeating: 0xFF, count: 4096))
        try handle.close()
        #expect(try store.attributes(forKey: "large")?.metadata == Data("m".utf8))
    }

    @Test func metadataOverTheLimitIsRefused() async throws {
        let store = try open()
        let tooMuch = Data(count: EntryAttributes.metadataLimit + 1)
        for attempt in 0..<3 {
            let error = try await #require(throws: StoreError.self) {
                switch attempt {
                case 0: try await store.setValue(Data("v".utf8), forKey: "k", expiresAt: nil, metadata: tooMuch)
                case 1: try await store.addValue(Data("v".utf8), forKey: "k", metadata: tooMuch)
                default:
                    try await store.setValue(Data("v".utf8), forKey: "k")
                    try await store.setAttributes(EntryAttributes(metadata: tooMuch), forKey: "k")
                }
            }
            #expect(error.code == .valueTooLarge)
        }
        // The limit itself is fine.
        try await store.setValue(Data("v".utf8), forKey: "k", expiresAt: nil, metadata: Data(count: EntryAttributes.metadataLimit))
        #expect(try await store.attributes(forKey: "k")?.metadata.count == EntryAttributes.metadataLimit)
    }

    // MARK: - setAttributes

    @Test func setAttributesKeepsTheValueAndReplacesTheAttributes() async throws {
        let store = try open(timeToLive: .seconds(600))
        let value = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
        try await store.setValue(value, forKey: "k", expiresAt: now.addingTimeInterval(60), metadata: Data("old".utf8))
        clock.advance(by: .seconds(30))
        // Longer metadata (the header grows), a longer expiry (bounded by the store's lifetime).
        let new = EntryAttributes(expiresAt: now.addingTimeInterval(3_600), storedAt: now, metadata: Data("new and longer".utf8))
        #expect(try await store.setAttributes(new, forKey: "k"))
        var expected = new
        expected.expiresAt = now.addingTimeInterval(600)
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: value, attributes: expected))
        // No metadata: back to a version 1 file.
        #expect(try await store.setAttributes(EntryAttributes(), forKey: "k"))
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: value, attributes: EntryAttributes(expiresAt: now.addingTimeInterval(600), storedAt: now)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path(forKey: "k")))[4] == 1)
        #expect(store.count == 1)
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
    }

    @Test func setAttributesOfAMissingOrExpiredEntryWritesNothing() async throws {
        let store = try open()
        #expect(try await !store.setAttributes(EntryAttributes(metadata: Data("m".utf8)), forKey: "missing"))
        #expect(!FileManager.default.fileExists(atPath: store.path(forKey: "missing")))
        try await store.setValue(Data("v".utf8), forKey: "k", expiresAt: now.addingTimeInterval(1))
        clock.advance(by: .seconds(1))
        #expect(try await !store.setAttributes(EntryAttributes(expiresAt: now.addingTimeInterval(100)), forKey: "k"))
        #expect(try await store.value(forKey: "k") == nil)
    }

    func allocatedBytesOfFiles() throws -> Int {
        try FileManager.default.subpathsOfDirectory(atPath: directory.path).reduce(0) { total, path in
            var info = stat()
            lstat(directory.appending(path), &info)
            return (info.st_mode & S_IFMT) == S_IFREG ? total + Int(info.st_blocks) * 512 : total
        }
    }

    // MARK: - addEntry

    @Test(arguments: [false, true])
    func oneOfAHundredConcurrentAddsInserts(overAnExpiredEntry: Bool) async throws {
        let store = try open()
        if overAnExpiredEntry {
            try await store.setValue(Data("stale".utf8), forKey: "k", expiresAt: now.addingTimeInterval(1))
            clock.advance(by: .seconds(1))
        }
        let results = try await withThrowingTaskGroup(of: (Int, AddResult<Data>).self) { group in
            for i in 0..<100 {
                group.addTask { (i, try await store.addValue(Data("value \(i)".utf8), forKey: "k", metadata: Data("\(i)".utf8))) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let inserted = results.filter { $0.1.inserted }
        try #require(inserted.count == 1)
        let winner = inserted[0].0
        for (_, result) in results where !result.inserted {
            #expect(result.existing?.value == Data("value \(winner)".utf8))
            #expect(result.existing?.metadata == Data("\(winner)".utf8))
        }
        #expect(try await store.value(forKey: "k") == Data("value \(winner)".utf8))
        #expect(store.count == 1)
        #expect(store.statistics.writes == (overAnExpiredEntry ? 2 : 1))
        #expect(store.totalSize + store.metadataSize == (try allocatedBytesOfFiles()))
        // No temporary file is left behind.
        let names = try FileManager.default.subpathsOfDirectory(atPath: directory.path)
        #expect(!names.contains { $0.contains(".haneke-tmp.") })
    }

    @Test func addsOfTwoStoresOnOneFolderInsertOnce() async throws {
        // Two stores have stripe locks of their own, as two processes would: only the shard
        // folder's lock orders their adds.
        let first = try open()
        let second = try open()
        try await first.setValue(Data("stale".utf8), forKey: "k", expiresAt: now.addingTimeInterval(1))
        clock.advance(by: .seconds(1))
        let results = try await withThrowingTaskGroup(of: AddResult<Data>.self) { group in
            for i in 0..<100 {
                let store = i.isMultiple(of: 2) ? first : second
                group.addTask { try await store.addValue(Data("value \(i)".utf8), forKey: "k") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter(\.inserted).count == 1)
        let stored = try await first.value(forKey: "k")
        #expect(results.allSatisfy { $0.inserted || $0.existing?.value == stored })
    }

    @Test func addReplacesADamagedFile() async throws {
        let store = try open()
        let path = store.path(forKey: "k")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data("not an entry file at all, but long enough for a header".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try await store.addValue(Data("v".utf8), forKey: "k") == .inserted)
        #expect(try await store.addValue(Data("w".utf8), forKey: "k") == .existing(StoreEntry(value: Data("v".utf8), attributes: EntryAttributes(storedAt: now))))
    }

    // MARK: - Damaged headers

    @Test(arguments: [UInt32(EntryAttributes.metadataLimit + 1), 1 << 30, UInt32.max])
    func aVersion2HeaderClaimingHugeMetadataIsAMiss(claimed: UInt32) async throws {
        let store = try open()
        try await store.setValue(Data("v".utf8), forKey: "k", expiresAt: nil, metadata: Data("m".utf8))
        let path = store.path(forKey: "k")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // A forged length, with the fixed fields' checksum made right again.
        for i in 0..<4 { bytes[40 + i] = UInt8(truncatingIfNeeded: claimed >> (8 * i)) }
        var hash: UInt32 = 0x811C_9DC5
        for i in 0..<48 where !(12..<16).contains(i) { hash = (hash ^ UInt32(bytes[i])) &* 0x0100_0193 }
        for i in 0..<4 { bytes[12 + i] = UInt8(truncatingIfNeeded: hash >> (8 * i)) }
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try await store.attributes(forKey: "k") == nil)
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try await store.entry(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try await !store.setAttributes(EntryAttributes(), forKey: "k"))
        let inspection = try FileStore.inspect(directory: directory.path)
        #expect(inspection.entries.isEmpty)
    }

    @Test func damagedMetadataIsAMiss() async throws {
        let store = try open()
        try await store.setValue(Data("v".utf8), forKey: "k", expiresAt: nil, metadata: Data("metadata".utf8))
        let path = store.path(forKey: "k")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[48 + 1 + 2] ^= 0x20   // a byte of the metadata
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try await store.attributes(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(store.statistics.errors == 1)
    }

    // MARK: - Files written by 0.3.0

    /// The version 1 files in `Fixtures/v1`, written by the 0.3.0 code at TestClock's start
    /// (2026-01-01T00:00:00Z): the fixture's name, its key, its value, its expiry.
    static let fixtures: [(name: String, key: String, value: Data, expires: Date?)] = [
        ("greeting", "greeting", Data("hello".utf8), nil),
        ("empty", "empty", Data(), nil),
        ("unicode", "clé/ü 🙂", Data((0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) }), nil),
        ("expiring", "expiring", Data("for an hour".utf8), Date(timeIntervalSince1970: 1_767_225_600 + 3_600)),
    ]

    @Test func filesWrittenBy030AreRead() async throws {
        let written = Date(timeIntervalSince1970: 1_767_225_600)
        let setUp = try open()
        for fixture in Self.fixtures {
            let url = try #require(Bundle.module.url(forResource: fixture.name, withExtension: "hnkf", subdirectory: "Fixtures/v1"))
            let path = setUp.path(forKey: fixture.key)
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: url.path, toPath: path)
        }
        let store = try open()
        #expect(store.count == Self.fixtures.count)
        for fixture in Self.fixtures {
            let expected = EntryAttributes(expiresAt: fixture.expires, storedAt: written, metadata: Data())
            #expect(try await store.attributes(forKey: fixture.key) == expected)
            #expect(try await store.entry(forKey: fixture.key) == StoreEntry(value: fixture.value, attributes: expected))
        }
        let inspection = try FileStore.inspect(directory: directory.path)
        #expect(inspection.problems.isEmpty)
        #expect(Set(inspection.entries.map(\.key)) == Set(Self.fixtures.map(\.key)))
        // An add finds them; metadata given to one rewrites it as version 2, readable again.
        #expect(try await store.addValue(Data("other".utf8), forKey: "greeting").existing?.value == Data("hello".utf8))
        #expect(try await store.setAttributes(EntryAttributes(metadata: Data("v2".utf8)), forKey: "greeting"))
        #expect(try await store.entry(forKey: "greeting") == StoreEntry(value: Data("hello".utf8), attributes: EntryAttributes(storedAt: now, metadata: Data("v2".utf8))))
        // The expiring one expires when 0.3.0 said.
        clock.advance(by: .seconds(3_600))
        #expect(try await store.value(forKey: "expiring") == nil)
    }
}
