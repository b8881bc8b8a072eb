import FileStore
import Foundation
import HanekeProtocols

#if canImport(Glibc)
import Glibc
#endif

/// Workload 2 (FileStore set and get against raw POSIX), the cost of the async hand-off and of
/// durable writes, and workload 5 (opening a store of many entries against listing the tree).
enum FileStoreBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        var rows: [Row] = []
        for (size, label, count) in [(4 << 10, "4 KiB", 2_000), (64 << 10, "64 KiB", 400), (1 << 20, "1 MiB", 40)] {
            rows += try setAndGet(valueSize: size, label: label, count: scale.pick(count, smoke: 20), scale: scale)
        }
        rows += descriptorRelativeCalls(count: scale.pick(2_000, smoke: 20), scale: scale)
        rows.append(try await asyncHandOff(count: scale.pick(4_000, smoke: 50), scale: scale))
        for inFlight in [1, 16] {
            rows.append(try await executorHop(count: scale.pick(20_000, smoke: 100), inFlight: inFlight, scale: scale))
        }
        rows.append(try durableWrites(count: scale.pick(60, smoke: 5), scale: scale))
        for entries in scale.smoke ? [1_000] : [1_000, 10_000, 100_000] {
            rows.append(try openStore(entries: entries, scale: scale))
        }
        return rows
    }

    /// Workload 2: `setValue` and `value(forKey:)` (synchronous) against write-temporary-then-rename
    /// and open-read-close of the same bytes, each round over `count` keys.
    static func setAndGet(valueSize: Int, label: String, count: Int, scale: Scale) throws -> [Row] {
        let root = RawFiles.scratchDirectory("file-\(valueSize)")
        defer { RawFiles.removeDirectory(root) }
        let store = try FileStore(directory: root + "/store", configuration: .init(capacity: nil))
        let keys = (0..<count).map { "https://example.com/objects/\($0)?size=\(valueSize)" }
        var random = SystemRandomNumberGenerator()
        let value = Data((0..<valueSize).map { _ in UInt8.random(in: 0...255, using: &random) })

        // The raw baseline writes the same sharded layout (names computed before timing).
        let rawPaths = keys.map { root + "/raw" + store.path(forKey: $0).dropFirst(store.directory.count) }
        for path in rawPaths { RawFiles.makeDirectory((path as NSString).deletingLastPathComponent) }
        var rawFileBytes = [UInt8](repeating: 0, count: 40 + keys[0].utf8.count)
        rawFileBytes += value

        let sets = try Measure.interleaved(rounds: scale.rounds) {
            let seconds = try Measure.seconds {
                for key in keys { try store.setValue(value, forKey: key) }
            }
            return Double(count) / seconds
        } baseline: {
            let seconds = Measure.seconds {
                rawFileBytes.withUnsafeBytes { bytes in
                    for (i, path) in rawPaths.enumerated() {
                        RawFiles.writeThenRename(bytes, to: path, temporary: path + ".tmp\(i)")
                    }
                }
            }
            return Double(count) / seconds
        }
        let gets = try Measure.interleaved(rounds: scale.rounds) {
            var bytes = 0
            let seconds = try Measure.seconds {
                for key in keys { bytes += try store.value(forKey: key)?.count ?? 0 }
            }
            precondition(bytes == count * valueSize, "FileStore lost values")
            return Double(count) / seconds
        } baseline: {
            var bytes = 0
            let seconds = Measure.seconds {
                for path in rawPaths { bytes += RawFiles.read(path, size: rawFileBytes.count).count }
            }
            precondition(bytes == count * rawFileBytes.count)
            return Double(count) / seconds
        }
        return [
            Row(
                workload: "2", name: "FileStore set", variant: label,
                subject: Figure(label: "setValue", value: sets.subject, unit: "ops/s"),
                baseline: Figure(label: "temp+rename", value: sets.baseline, unit: "ops/s"),
                ratio: sets.subject / sets.baseline, goal: "≥ 0.8×", met: sets.subject / sets.baseline >= 0.8
            ),
            Row(
                workload: "2", name: "FileStore get", variant: label,
                subject: Figure(label: "value(forKey:)", value: gets.subject, unit: "ops/s"),
                baseline: Figure(label: "open+read+close", value: gets.baseline, unit: "ops/s"),
                ratio: gets.subject / gets.baseline, goal: "≥ 0.7×", met: gets.subject / gets.baseline >= 0.7
            ),
        ]
    }

    /// What FileStore's descriptor-relative calls cost against calls by path, in plain C calls on
    /// the same sharded layout: a write through the shard folder's `O_PATH` descriptor (`openat`,
    /// `write`, `renameat`) against `open`, `write`, `rename` by path; a read by one `openat2` below
    /// the folder's descriptor (no link followed) against `open` by path. 4 KiB files.
    static func descriptorRelativeCalls(count: Int, scale: Scale) -> [Row] {
        let root = RawFiles.scratchDirectory("descriptors")
        defer { RawFiles.removeDirectory(root) }
        let folder = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        precondition(folder >= 0)
        defer { close(folder) }
        var random = SystemRandomNumberGenerator()
        let bytes = (0..<(4096 + 80)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let names = (0..<count).map { i -> (shard: String, name: String) in
            let hex = String(format: "%02X%030X", i % 256, i)
            return (String(hex.prefix(2)), hex)
        }
        for shard in Set(names.map(\.shard)) { RawFiles.makeDirectory(root + "/" + shard) }
        var round = 0
        let writes = Measure.interleaved(rounds: scale.rounds) {
            round += 1
            let seconds = Measure.seconds {
                bytes.withUnsafeBytes { buffer in
                    for (shard, name) in names {
                        RawFiles.writeThenRename(buffer, shard: shard, name: name, temporary: ".tmp-\(round)", in: folder)
                    }
                }
            }
            return Double(count) / seconds
        } baseline: {
            let seconds = Measure.seconds {
                bytes.withUnsafeBytes { buffer in
                    for (shard, name) in names {
                        RawFiles.writeThenRename(buffer, to: root + "/" + shard + "/" + name, temporary: root + "/" + shard + "/.tmp-\(round)")
                    }
                }
            }
            return Double(count) / seconds
        }
        let reads = Measure.interleaved(rounds: scale.rounds) {
            var total = 0
            let seconds = Measure.seconds {
                for (shard, name) in names { total += RawFiles.read(relative: shard + "/" + name, in: folder, size: bytes.count).count }
            }
            precondition(total == count * bytes.count)
            return Double(count) / seconds
        } baseline: {
            var total = 0
            let seconds = Measure.seconds {
                for (shard, name) in names { total += RawFiles.read(root + "/" + shard + "/" + name, size: bytes.count).count }
            }
            precondition(total == count * bytes.count)
            return Double(count) / seconds
        }
        return [
            Row(
                workload: "2", name: "descriptor-relative write", variant: "4 KiB, C calls",
                subject: Figure(label: "openat+renameat", value: writes.subject, unit: "ops/s"),
                baseline: Figure(label: "open+rename by path", value: writes.baseline, unit: "ops/s"),
                ratio: writes.subject / writes.baseline, goal: "≥ 0.95×", met: writes.subject / writes.baseline >= 0.95
            ),
            Row(
                workload: "2", name: "descriptor-relative read", variant: "4 KiB, C calls",
                subject: Figure(label: "openat2 beneath", value: reads.subject, unit: "ops/s"),
                baseline: Figure(label: "open by path", value: reads.baseline, unit: "ops/s"),
                ratio: reads.subject / reads.baseline, goal: "≥ 0.95×", met: reads.subject / reads.baseline >= 0.95
            ),
        ]
    }

    /// The price of not blocking Swift's cooperative threads: the async `value(forKey:)` (which hops
    /// to a Dispatch queue and back) against the synchronous one, 4 KiB values, one caller.
    static func asyncHandOff(count: Int, scale: Scale) async throws -> Row {
        let root = RawFiles.scratchDirectory("handoff")
        defer { RawFiles.removeDirectory(root) }
        let store = try FileStore(directory: root, configuration: .init(capacity: nil))
        let keys = (0..<200).map { "key-\($0)" }
        for key in keys { try await store.setValue(Data(count: 4096), forKey: key) }
        func readSynchronously(_ key: String) throws -> Data? { try store.value(forKey: key) }

        let result = try await Measure.interleaved(rounds: scale.rounds) {
            let seconds = try await Measure.seconds {
                for i in 0..<count { _ = try await store.value(forKey: keys[i % keys.count]) }
            }
            return Double(count) / seconds
        } baseline: {
            let seconds = try Measure.seconds {
                for i in 0..<count { _ = try readSynchronously(keys[i % keys.count]) }
            }
            return Double(count) / seconds
        }
        let costMicroseconds = (1 / result.subject - 1 / result.baseline) * 1e6
        return Row(
            workload: "2", name: "FileStore async get", variant: "4 KiB",
            subject: Figure(label: "await value(forKey:)", value: result.subject, unit: "ops/s"),
            baseline: Figure(label: "synchronous", value: result.baseline, unit: "ops/s"),
            ratio: result.subject / result.baseline, goal: "report", met: nil,
            note: String(format: "the hop to the I/O queue and back costs %.1f µs per call", costMicroseconds)
        )
    }

    /// The hop itself: an awaited job on `IOExecutor.shared` (fixed width, 4 × the cores) against
    /// the hop the stores made before it, an awaited job on Dispatch's global queue (which starts a
    /// thread whenever its workers block). Each job reads 64 bytes of `/dev/zero`, one system call;
    /// `inFlight` tasks hop at once.
    static func executorHop(count: Int, inFlight: Int, scale: Scale) async throws -> Row {
        let zero = open("/dev/zero", O_RDONLY | O_CLOEXEC)
        defer { close(zero) }
        @Sendable func job() -> Int {
            var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            return withUnsafeMutableBytes(of: &bytes) { read(zero, $0.baseAddress, 64) }
        }
        func hops(_ hop: @escaping @Sendable () async throws -> Int) async throws -> Double {
            try await Measure.seconds {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<inFlight {
                        group.addTask { for _ in 0..<(count / inFlight) { _ = try await hop() } }
                    }
                    try await group.waitForAll()
                }
            }
        }
        let result = try await Measure.interleaved(rounds: scale.rounds) {
            Double(count) / (try await hops { try await IOExecutor.shared.run(job) })
        } baseline: {
            Double(count) / (try await hops {
                await withCheckedContinuation { continuation in DispatchQueue.global().async { continuation.resume(returning: job()) } }
            })
        }
        let costMicroseconds = (1 / result.subject - 1 / result.baseline) * 1e6
        return Row(
            workload: "2", name: "I/O hop", variant: "\(inFlight) in flight",
            subject: Figure(label: "IOExecutor.shared", value: result.subject, unit: "ops/s"),
            baseline: Figure(label: "DispatchQueue.global()", value: result.baseline, unit: "ops/s"),
            ratio: result.subject / result.baseline, goal: "report", met: nil,
            note: String(format: "the fixed-width executor costs %+.2f µs per hop against the global queue", costMicroseconds)
        )
    }

    /// What `durableWrites` (fsync of the file and its folder) costs per 4 KiB write.
    static func durableWrites(count: Int, scale: Scale) throws -> Row {
        let root = RawFiles.scratchDirectory("durable")
        defer { RawFiles.removeDirectory(root) }
        let durable = try FileStore(directory: root + "/durable", configuration: .init(capacity: nil, durableWrites: true))
        let plain = try FileStore(directory: root + "/plain", configuration: .init(capacity: nil))
        let value = Data(count: 4096)
        let result = try Measure.interleaved(rounds: min(scale.rounds, 3)) {
            let seconds = try Measure.seconds { for i in 0..<count { try durable.setValue(value, forKey: "k\(i)") } }
            return Double(count) / seconds
        } baseline: {
            let seconds = try Measure.seconds { for i in 0..<count { try plain.setValue(value, forKey: "k\(i)") } }
            return Double(count) / seconds
        }
        return Row(
            workload: "2", name: "FileStore durable set", variant: "4 KiB",
            subject: Figure(label: "durableWrites", value: result.subject, unit: "ops/s"),
            baseline: Figure(label: "default", value: result.baseline, unit: "ops/s"),
            ratio: result.subject / result.baseline, goal: "report", met: nil,
            note: String(format: "fsync of file and folder: %.2f ms per write", 1000 / result.subject)
        )
    }

    /// Workload 5: opening a store that holds `entries` files against listing and `stat`ing the
    /// same tree with plain system calls.
    static func openStore(entries: Int, scale: Scale) throws -> Row {
        let root = RawFiles.scratchDirectory("open-\(entries)")
        defer { RawFiles.removeDirectory(root) }
        do {
            let store = try FileStore(directory: root, configuration: .init(capacity: nil))
            let value = Data(count: 100)
            for i in 0..<entries { try store.setValue(value, forKey: "https://example.com/item/\(i)") }
        }
        var opened = 0
        let result = try Measure.interleaved(rounds: min(scale.rounds, 5)) {
            var count = 0
            let seconds = try Measure.seconds {
                let store = try FileStore(directory: root, configuration: .init(capacity: nil))
                count = store.count
            }
            opened = count
            return 1 / seconds
        } baseline: {
            var files = 0
            let seconds = Measure.seconds { files = RawFiles.listAndStat(root).files }
            precondition(files >= entries)
            return 1 / seconds
        }
        precondition(opened == entries, "the store indexed \(opened) of \(entries) entries")
        let seconds = 1 / result.subject
        return Row(
            workload: "5", name: "FileStore open", variant: "\(entries) entries",
            subject: Figure(label: "init", value: seconds, unit: "s"),
            baseline: Figure(label: "readdir+stat", value: 1 / result.baseline, unit: "s"),
            ratio: result.subject / result.baseline,
            goal: entries == 100_000 ? "≤ 0.5 s" : "report",
            met: entries == 100_000 ? seconds <= 0.5 : nil
        )
    }
}
