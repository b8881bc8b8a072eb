import FileStore
import Foundation
import HanekeTesting
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Capacity is disk: what `du` reports for the folder stays within it.
@Suite(.serialized, .timeLimit(.minutes(5)), .tags(.disk, .process, .slow))
struct DiskUsageTests {
    /// 100,000 values of 156 bytes — 15.6 MB of payload, 400 MB by `du` at one 4 KiB block each —
    /// into a store of 32 MiB: `du -s` stays within the capacity, plus the shard folders.
    @Test func aHundredThousandSmallEntriesStayWithinTheCapacityByDu() async throws {
        let directory = try TemporaryDirectory(prefix: "du")
        let capacity = 32 << 20
        let value = Data(repeating: 0x5A, count: 156)
        let path = directory.path
        let (count, totalSize, metadataSize) = try await offThePool {
            let store = try FileStore(directory: path, configuration: .init(capacity: capacity))
            for i in 0..<100_000 {
                try store.setValue(value, forKey: "https://example.com/items/\(i)")
            }
            try store.flush()
            return (store.count, store.totalSize, store.metadataSize)
        }
        let du = try await ChildProcess.run("/usr/bin/du", ["-s", "-B1", path])
        let duBytes = try #require(Int(du.output.split(separator: "\t").first ?? ""))
        var folders = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: path) + ["."] {
            var info = stat()
            if lstat(path + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { folders += Int(info.st_blocks) * 512 }
        }
        print("du: 100,000 writes of 156 bytes into a 32 MiB store: \(count) entries kept, du -s \(duBytes) bytes = \(duBytes - folders) in files (store: \(totalSize) + \(metadataSize)) + \(folders) in folders")
        #expect(duBytes - folders <= capacity)
        #expect(duBytes - folders == totalSize + metadataSize)
        #expect(count < 100_000 && count > 7_000)
    }
}
