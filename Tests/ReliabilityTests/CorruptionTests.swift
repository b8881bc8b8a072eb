import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
@testable import HanekeFaultWorker
import Testing
import TestSupport

/// Every kind of damage a cache folder can suffer, planted at once: each read is a miss or a clear
/// `StoreError` (never a crash, never another key's or a damaged value), and `haneke verify --repair`
/// fixes the folder.
@Suite(.serialized, .timeLimit(.minutes(2)), .offThePool, .tags(.disk, .process, .slow))
struct CorruptionTests {
    struct Case {
        var key: String
        var damage: String
    }

    @Test func everyKindOfDamageIsAMissOrAClearErrorAndVerifyRepairsIt() async throws {
        let directory = try TemporaryDirectory(prefix: "corrupt")
        let outside = try TemporaryDirectory(prefix: "outside")
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: nil))
        let compressed = store.compressed()
        var values: [String: Data] = [:]
        for i in 0..<40 {
            let key = "key-\(i)"
            values[key] = WorkerValue.make(key: key, sequence: i, maximumLength: 8_000)
            try await compressed.setValue(values[key]!, forKey: key)
        }
        try store.flush()
        func path(_ key: String) -> String { store.path(forKey: key) }
        func write(_ data: Data, to path: String) throws { try data.write(to: URL(fileURLWithPath: path)) }
        func bytes(_ key: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path(key))) }

        /// Plants every kind of damage on the keys from `first` on (the key after the last one
        /// planted gives "another key's file" its donor); returns what was planted.
        func plantEveryKindOfDamage(from first: Int) throws -> [Case] {
            var cases: [Case] = []
            var next = first
            func plant(_ damage: String, _ body: (String) throws -> Void) throws {
                let key = "key-\(next)"
                next += 1
                try body(key)
                cases.append(Case(key: key, damage: damage))
            }
            try plant("truncated in the payload") { try write(try bytes($0).dropLast(10), to: path($0)) }
            try plant("truncated in the header") { try write(try bytes($0).prefix(20), to: path($0)) }
            try plant("a bit flipped in the payload") {
                var data = try bytes($0)
                data[data.count / 2] ^= 0x08
                try write(data, to: path($0))
            }
            try plant("a bit flipped in the header") {
                var data = try bytes($0)
                data[20] ^= 0x01
                try write(data, to: path($0))
            }
            try plant("zero length") { try write(Data(), to: path($0)) }
            try plant("garbage") { try write(Data((0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 37) }), to: path($0)) }
            try plant("another key's file") { try write(try bytes("key-\(first + 11)"), to: path($0)) }
            try plant("a folder where the file should be") {
                try FileManager.default.removeItem(atPath: path($0))
                try FileManager.default.createDirectory(atPath: path($0) + "/inside", withIntermediateDirectories: true)
            }
            try plant("a symbolic link out of the cache folder") {
                try FileManager.default.removeItem(atPath: path($0))
                try FileManager.default.createSymbolicLink(atPath: path($0), withDestinationPath: outside.appending("secret"))
            }
            try plant("invalid UTF-8 in the stored key") {
                var data = try bytes($0)
                data[40] = 0xFF   // the first byte of the key, just after the 40-byte header
                try write(data, to: path($0))
            }
            try plant("a file where the shard folder should be") {
                let shard = (path($0) as NSString).deletingLastPathComponent
                try FileManager.default.removeItem(atPath: shard)
                try write(Data("a file".utf8), to: shard)
            }
            return cases
        }
        try write(Data("not the cache's".utf8), to: outside.appending("secret"))
        var cases = try plantEveryKindOfDamage(from: 0)

        // Reads: a miss or a clear error, never a wrong value; and never a crash.
        let reopened = try FileStore(directory: directory.path, configuration: .init(capacity: nil))
        let view = reopened.compressed()
        var clearErrors = 0
        for key in values.keys {
            do {
                if let value = try await view.value(forKey: key) {
                    #expect(value == values[key], "\(key) read a wrong value")
                }
            } catch let error as StoreError {
                #expect([.corrupted, .io, .decompressionLimitExceeded].contains(error.code), "\(key): \(error)")
                #expect(!error.message.isEmpty)
                clearErrors += 1
            }
        }
        for damaged in cases {
            let read = try? await view.value(forKey: damaged.key)
            #expect(read == nil, "\(damaged.damage)")
        }
        // The keys no damage was planted on are untouched (a shard removed by the last kind of
        // damage may have held some: those are misses, never wrong values).
        for i in 12..<20 where reopened.containsValue(forKey: "key-\(i)") {
            #expect(try await view.value(forKey: "key-\(i)") == values["key-\(i)"])
        }

        // Reads removed what they found damaged and was the store's; plant every kind of damage
        // again, on other keys, and let the tool find it all and repair what is the store's.
        let before = cases.count
        cases = try plantEveryKindOfDamage(from: 20)
        let haneke = ChildProcess.binary("haneke")
        let check = try await ChildProcess.run(haneke, ["verify", directory.path, "--quiet"])
        #expect(check.status == 1)
        let found = check.output.split(separator: "\n").filter { !$0.hasPrefix("repaired") && $0.contains(": ") && !$0.contains("files checked") }
        #expect(found.count >= cases.count, "\(check.output)")
        let repair = try await ChildProcess.run(haneke, ["verify", directory.path, "--repair", "--quiet"])
        // Two kinds of damage are not the store's to remove, and stay (from both rounds): a folder
        // with contents at an entry's name (a store never empties a folder it did not make) and a
        // file at a shard's name.
        #expect(repair.status == 1, "\(repair.output) \(repair.stderr)")
        #expect(repair.output.contains("kept 4 paths"), "\(repair.output)")
        let clean = try await ChildProcess.run(haneke, ["verify", directory.path, "--quiet"])
        let remaining = clean.output.split(separator: "\n").filter { $0.contains(": ") && !$0.contains("files checked") }
        #expect(remaining.count == 4, "\(clean.output)")
        #expect(remaining.contains { $0.hasPrefix("notAFile: ") && $0.contains("a folder where the store keeps an entry file") }, "\(clean.output)")
        #expect(remaining.contains { $0.hasPrefix("notAFile: ") && $0.contains("a file where the store keeps a folder") }, "\(clean.output)")
        #expect(FileManager.default.fileExists(atPath: outside.appending("secret")), "repair followed a link out of the folder")
        print("corruption: \(before) kinds of damage read through the store (\(clearErrors) clear errors, the rest misses, 0 wrong values); \(cases.count) planted again, verify: \(check.output.split(separator: "\n").last ?? "")")
    }

    @Test func anUnreadableFileIsAClearErrorForTheTool() async throws {
        let directory = try TemporaryDirectory(prefix: "unreadable")
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: nil))
        try await store.setValue(Data("secret".utf8), forKey: "k")
        try store.flush()
        chmod(store.path(forKey: "k"), 0o000)
        chmod(directory.path, 0o755)
        chmod((store.path(forKey: "k") as NSString).deletingLastPathComponent, 0o755)
        let haneke = ChildProcess.binary("haneke")
        // As root every file is readable: run the tool as `nobody`, who is refused.
        let prefix = getuid() == 0 ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        let get = try await ChildProcess.run(prefix.first ?? haneke, Array(prefix.dropFirst()) + (prefix.isEmpty ? [] : [haneke]) + ["get", directory.path, "k"])
        #expect(get.status == 3)   // an I/O failure, not a problem found in the store
        #expect(get.stderr.hasPrefix("haneke: "), "\(get.stderr)")
        #expect(get.stderr.split(separator: "\n").count == 1)
        #expect(get.stderr.contains("Permission denied") || get.stderr.contains("errno 13"), "\(get.stderr)")
        chmod(store.path(forKey: "k"), 0o644)
    }
}
