import Foundation
@testable import FileStore
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

/// Files whose header is well formed (right magic, version and checksum) but lies about lengths:
/// anyone can forge the checksum, so the store must not trust the lengths beyond the file's size.
@Suite(.timeLimit(.minutes(1)), .offThePool, .tags(.disk))
struct HostileHeaderTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "hostile")
    }

    func plant(payloadLength: Int, key: String = "k", body: Data = Data("abc".utf8), in store: FileStore) throws -> String {
        let header = EntryHeader.encode(key: key, created: 0, expires: nil, payloadLength: payloadLength)
        let path = store.path(forKey: key)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try (Data(header) + body).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(arguments: [1 << 30, 1 << 40, 1 << 62, Int.max - 41])
    func aHeaderClaimingAHugePayloadIsAMissAndIsDeleted(claimed: Int) throws {
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: nil))
        let path = try plant(payloadLength: claimed, in: store)
        #expect(try store.value(forKey: "k") == nil)          // no size in the index
        #expect(!FileManager.default.fileExists(atPath: path))

        _ = try plant(payloadLength: claimed, in: store)
        let reopened = try FileStore(directory: directory.path, configuration: .init(capacity: nil))
        #expect(try reopened.value(forKey: "k") == nil)       // the size indexed at open is the file's
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aHeaderClaimingAHugeKeyIsAMiss() throws {
        let store = try FileStore(directory: directory.path)
        let path = store.path(forKey: "k")
        var header = EntryHeader.encode(key: "k", created: 0, expires: nil, payloadLength: 3)
        header[8] = 0xFF; header[9] = 0xFF; header[10] = 0xFF; header[11] = 0x7F   // a 2 GiB key
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try (Data(header) + Data("abc".utf8)).write(to: URL(fileURLWithPath: path))
        #expect(try store.value(forKey: "k") == nil)
    }

    @Test func aValidHeaderLargerThanTheCapacityIsAMiss() throws {
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: 1 << 20))
        let path = store.path(forKey: "k")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let header = EntryHeader.encode(key: "k", created: 0, expires: nil, payloadLength: (1 << 40) - 41)
        try Data(header).write(to: URL(fileURLWithPath: path))
        #expect(truncate(path, 1 << 40) == 0)   // the file really is 1 TiB (sparse)
        #expect(try store.value(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
