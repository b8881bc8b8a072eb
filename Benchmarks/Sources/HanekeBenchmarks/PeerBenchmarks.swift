import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore
@_spi(Benchmarks) import SQLiteStore

#if canImport(Glibc)
import Glibc
#endif

/// Workload 9: the stores against a peer, python-diskcache 5.6.3 (SQLite under a Python API), on the
/// same keys and values in the same run. A Python child (`Peer/diskcache_peer.py`, in a virtual
/// environment of the benchmarks' own) waits for commands on its standard input, so that its rounds
/// alternate with the Swift stores' rounds without restarting Python.
///
/// - Shapes: 512 B and 4 KiB values, random bytes and JSON text, made from a seed here and written
///   to a file the peer reads; 10,000 keys (200 with `--smoke`).
/// - A round of each side: a new store in a new folder, a set of every key (async `setValue`; the
///   peer's `Cache.set`), then every key read in one seeded random order (the sync and the async
///   get; through a chain with an empty memory store in front, for the compressed file store; the
///   peer's `Cache.get`). Each call is timed alone; p50 and p99 over every call of every round.
/// - The SQLite stores' synchronous set, on the I/O executor, into a new folder of their own each
///   round; beside it the same store with SQLite's automatic checkpoint and no bound on its log
///   (`SQLiteStore, SQLite's checkpoints`, the store before it ran its own checkpoints), whose
///   sync set p99 is each SQLite store's baseline in a row of its own.
/// - Open: each engine that measures it, and diskcache, filled with 100,000 values of 512 bytes
///   (1,000 with `--smoke`); a new store on the folder and one get, timed together, in process.
/// - Disk: `st_blocks` × 512 over the last round's folder, the stores closed, per payload byte.
/// - When pip cannot install diskcache (no package index), the workload prints why and reports one
///   row saying so, instead of failing the run.
enum PeerBenchmarks {
    static let shapes: [(size: Int, json: Bool)] = [(512, false), (512, true), (4096, false), (4096, true)]

    static func run(_ scale: Scale) async throws -> [Row] {
        let python: String
        switch try await DiskcacheVenv.python(forWorkload: "9", name: "peer: python-diskcache") {
        case .failure(let skipped): return [skipped.row]
        case .success(let found): python = found
        }
        let peer = try await IOExecutor.shared.run { try PeerProcess(python: python, script: Tools.packageRoot + "/Peer/diskcache_peer.py") }
        defer { peer.stop() }
        let scratch = RawFiles.scratchDirectory("peer")
        defer { RawFiles.removeDirectory(scratch) }

        let count = scale.pick(10_000, smoke: 200)
        let rounds = min(scale.rounds, 3)
        var rows: [Row] = []
        for shape in shapes {
            rows += try await measure(shape: shape, count: count, rounds: rounds, engines: engines, peer: peer, scratch: scratch)
        }
        rows += try await openLarge(entries: scale.pick(100_000, smoke: 1_000), rounds: rounds, engines: engines, peer: peer, scratch: scratch)
        return rows
    }

    // MARK: - Engines

    /// One store under test: how to open it in a folder, and what it offers beyond the `Store`
    /// protocol (a synchronous get, a warm chain in front of it, a flush before its folder is
    /// measured). Adding an engine is one entry of `engines`.
    struct Engine: Sendable {
        var name: String
        /// Whether workload 9 measures opening a folder of many entries with it.
        var measuresOpen = false
        /// Whether `Opened.syncGet` is there.
        var hasSyncGet = false
        /// Whether each round also times `Opened.syncSet` into a folder of its own.
        var measuresSyncSet = false
        var open: @Sendable (String) throws -> Opened
    }

    struct Opened: Sendable {
        var get: @Sendable (String) async throws -> Data?
        var set: @Sendable (Data, String) async throws -> Void
        /// What to do before the folder's blocks are counted (write journals, close files).
        var flush: @Sendable () throws -> Void
        var syncGet: (@Sendable (String) throws -> Data?)? = nil
        var syncSet: (@Sendable (Data, String) throws -> Void)? = nil
        /// A new chain (an empty memory store in front of this one): its gets are warm.
        var warmChain: (@Sendable () -> @Sendable (String) async throws -> Data?)? = nil
    }

    /// An engine from any `Store<String, Data>`: `make` opens it in a folder.
    static func engine<S: Store<String, Data>>(
        _ name: String,
        measuresOpen: Bool = false,
        chain: Bool = false,
        make: @escaping @Sendable (String) throws -> S,
        syncGet: (@Sendable (S, String) throws -> Data?)? = nil,
        syncSet: (@Sendable (S, Data, String) throws -> Void)? = nil,
        measuresSyncSet: Bool = false,
        flush: @escaping @Sendable (S) throws -> Void = { _ in }
    ) -> Engine {
        Engine(name: name, measuresOpen: measuresOpen, hasSyncGet: syncGet != nil, measuresSyncSet: measuresSyncSet) { directory in
            let store = try make(directory)
            let get: @Sendable (String) async throws -> Data? = { key in try await store.value(forKey: key) }
            let set: @Sendable (Data, String) async throws -> Void = { value, key in try await store.setValue(value, forKey: key) }
            var opened = Opened(get: get, set: set, flush: { try flush(store) })
            if let syncGet {
                opened.syncGet = { key in try syncGet(store, key) }
            }
            if let syncSet {
                opened.syncSet = { value, key in try syncSet(store, value, key) }
            }
            if chain {
                opened.warmChain = {
                    let chained = MemoryStore<String, Data>().chained(to: store)
                    return { key in try await chained.value(forKey: key) }
                }
            }
            return opened
        }
    }

    static let engines: [Engine] = [
        engine(
            "FileStore", measuresOpen: true,
            make: { try FileStore(directory: $0, configuration: .init(capacity: nil)) },
            syncGet: { try $0.value(forKey: $1) }, syncSet: { try $0.setValue($1, forKey: $2) },
            flush: { try $0.flush() }
        ),
        engine(
            "CompressedStore(FileStore)", chain: true,
            make: { try CompressedFile(directory: $0) },
            flush: { try $0.file.flush() }
        ),
        engine(
            "SQLiteStore", measuresOpen: true,
            make: { try SQLiteStore(directory: $0, configuration: .init(capacity: nil)) },
            syncGet: { try $0.value(forKey: $1) }, syncSet: { try $0.setValue($1, forKey: $2) }, measuresSyncSet: true,
            flush: { try $0.flush() }
        ),
        // The baseline of the SQLite stores' set p99: SQLite's own checkpoints, on the commit that
        // fills the log, and no bound on the log with several processes.
        engine(
            sqliteBaseline,
            make: { folder in
                var configuration = SQLiteStore.Configuration(capacity: nil)
                configuration.checkpointing = .sqlite
                return try SQLiteStore(directory: folder, configuration: configuration)
            },
            syncGet: { try $0.value(forKey: $1) }, syncSet: { try $0.setValue($1, forKey: $2) }, measuresSyncSet: true,
            flush: { try $0.flush() }
        ),
        // The same store keeping its database locked while it lives: no per-transaction file locks.
        engine(
            "SQLiteStore, exclusive",
            make: { try SQLiteStore(directory: $0, configuration: .init(capacity: nil, exclusiveAccess: true)) },
            syncGet: { try $0.value(forKey: $1) }, syncSet: { try $0.setValue($1, forKey: $2) }, measuresSyncSet: true,
            flush: { try $0.flush() }
        ),
        // Values of up to 16 KiB in an SQLiteStore, larger ones as files, in one folder (all of this
        // workload's values are small: what it shows is the router's own cost over SQLiteStore).
        engine(
            "SizeRoutedStore", measuresOpen: true,
            make: { folder in
                try SQLiteStore(directory: folder, configuration: .init(capacity: nil))
                    .routingLargeValues(over: 16 << 10, to: try FileStore(directory: folder, configuration: .init(capacity: nil)))
            },
            flush: { try $0.small.flush(); try $0.large.flush() }
        ),
    ]

    /// The engine whose sync set p99 is the SQLite stores' baseline.
    static let sqliteBaseline = "SQLiteStore, SQLite's checkpoints"

    /// `FileStore(...).compressed()`, keeping the file store for its flush. It forwards every read
    /// and write a chain makes, entries with their attributes included: with `Store`'s defaults
    /// instead, the warm chain read its bottom layer through the default entry read around
    /// `value(forKey:transformedBy:)`, a path a chain built on `CompressedStore` never takes
    /// (5,200 instructions a read more; `FileProbe`'s FILEPROBE_VALUES_ONLY measures it).
    struct CompressedFile: Store {
        let file: FileStore
        let compressed: CompressedStore<FileStore>

        init(directory: String) throws {
            file = try FileStore(directory: directory, configuration: .init(capacity: nil))
            compressed = file.compressed()
        }

        func value(forKey key: String) async throws -> Data? { try await compressed.value(forKey: key) }
        func value<T: Sendable>(forKey key: String, transformedBy transform: @escaping @Sendable (Data) throws -> T) async throws -> T? {
            try await compressed.value(forKey: key, transformedBy: transform)
        }
        func entry<T: Sendable>(forKey key: String, transformedBy transform: @escaping @Sendable (Data) throws -> T) async throws -> StoreEntry<T>? {
            try await compressed.entry(forKey: key, transformedBy: transform)
        }
        func attributes(forKey key: String) async throws -> EntryAttributes? { try await compressed.attributes(forKey: key) }
        func setValue(_ value: Data, forKey key: String) async throws { try await compressed.setValue(value, forKey: key) }
        func setEntry(_ entry: StoreEntry<Data>, forKey key: String) async throws { try await compressed.setEntry(entry, forKey: key) }
        func removeValue(forKey key: String) async throws { try await compressed.removeValue(forKey: key) }
        func removeAll() async throws { try await compressed.removeAll() }
    }

    // MARK: - Gets, sets, p99, disk

    /// Per-call latencies (µs) of one kind of call, over every round.
    struct Samples {
        var values: [String: [Double]] = [:]
        mutating func add(_ name: String, _ samples: [Double]) { values[name, default: []] += samples }
    }

    static func measure(
        shape: (size: Int, json: Bool), count: Int, rounds: Int, engines: [Engine], peer: PeerProcess, scratch: String
    ) async throws -> [Row] {
        let variant = (shape.size == 512 ? "512 B" : "4 KiB") + (shape.json ? " JSON" : " random")
        let data = PeerData(count: count, size: shape.size, json: shape.json, seed: UInt64(shape.size) * 2 + (shape.json ? 1 : 0))
        let file = scratch + "/peer-data-\(shape.size)-\(shape.json)"
        try data.write(to: file)
        _ = try await peer.send("load \(file)", as: PeerProcess.Loaded.self)
        let peerFolder = scratch + "/diskcache"
        var ours = Samples()
        var theirs = Samples()
        var folders: [String: String] = [:]
        func peerRound() async throws {
            let answer = try await peer.send("round \(peerFolder)", as: PeerProcess.Round.self)
            precondition(answer.wrong == 0, "diskcache returned \(answer.wrong) wrong values")
            theirs.add("set", answer.set)
            theirs.add("get", answer.get)
        }
        func swiftRound(_ engine: Engine, folder: String, round: Int) async throws {
            let opened = try engine.open(folder)
            ours.add("\(engine.name) set", try await timed(Array(data.keys.indices), expecting: nil) { try await opened.set(data.values[$0], data.keys[$0]); return nil })
            // The get paths of one store, their order alternating by round.
            var passes: [(String, () async throws -> [Double])] = []
            if let syncGet = opened.syncGet {
                passes.append(("\(engine.name) get, sync", {
                    try await IOExecutor.shared.run { try timedSync(data.order, expecting: data.values) { try syncGet(data.keys[$0]) } }
                }))
            }
            passes.append(("\(engine.name) get, async", { try await timed(data.order, expecting: data.values) { try await opened.get(data.keys[$0]) } }))
            if let makeChain = opened.warmChain {
                passes.append(("\(engine.name) warm chain get", {
                    let chain = makeChain()
                    return try await timed(data.order, expecting: data.values) { try await chain(data.keys[$0]) }
                }))
            }
            if round % 2 == 1 { passes.reverse() }
            for (name, pass) in passes { ours.add(name, try await pass()) }
            try await IOExecutor.shared.run { try opened.flush() }
            if engine.measuresSyncSet {
                // A new store in a folder of its own: every set inserts, as the async pass's.
                let samples = try await IOExecutor.shared.run {
                    let fresh = try engine.open(folder + "-sync")
                    guard let syncSet = fresh.syncSet else { return [Double]() }
                    return try timedSync(Array(data.keys.indices), expecting: nil) { try syncSet(data.values[$0], data.keys[$0]); return nil }
                }
                ours.add("\(engine.name) sync set", samples)
                RawFiles.removeDirectory(folder + "-sync")
            }
        }

        for round in 0..<rounds {
            let peerFirst = round % 2 == 1
            if peerFirst { try await peerRound() }
            // The engines take turns at going first: a store written right after another measured
            // slower sets on this machine (the file system's journal still busy with the first).
            for engine in engines.rotated(by: round) {
                let folder = scratch + "/\(engine.name.filter(\.isLetter))-\(shape.size)-\(shape.json)-\(round)"
                folders[engine.name] = folder
                try await swiftRound(engine, folder: folder, round: round)
            }
            if !peerFirst { try await peerRound() }
        }

        // Disk: the last round's folders, after a flush, against diskcache's after it closes.
        let payload = Double(count * shape.size)
        let peerBytes = Double(try await peer.send("disk \(peerFolder)", as: PeerProcess.Disk.self).bytes)
        var rows: [Row] = []
        for engine in engines {
            if engine.name == engines.first?.name {
                rows += latencyRows(engine: engine.name, variant: variant, ours: ours, theirs: theirs, count: count, rounds: rounds)
            } else {
                rows += latencyRows(engine: engine.name, variant: variant, ours: ours, theirs: theirs, count: nil, rounds: rounds)
            }
        }
        // Each SQLite store's sync set p99 against the baseline's, measured in the same rounds.
        let baseline = ours.values["\(sqliteBaseline) sync set"] ?? []
        for engine in engines where engine.measuresSyncSet && engine.name != sqliteBaseline && !baseline.isEmpty {
            guard let samples = ours.values["\(engine.name) sync set"], !samples.isEmpty else { continue }
            let p99 = Measure.percentile(samples, 99), baselineP99 = Measure.percentile(baseline, 99)
            rows.append(Row(
                workload: "9", name: "\(engine.name) sync set p99 vs SQLite's checkpoints", variant: variant,
                subject: Figure(label: "p99", value: p99, unit: "µs"),
                baseline: Figure(label: "SQLite's checkpoints p99", value: baselineP99, unit: "µs"),
                ratio: baselineP99 / p99, goal: "≥ 0.67× (within 1.5×)", met: p99 <= 1.5 * baselineP99,
                note: "the same store with SQLite's automatic checkpoint and an unbounded log, in the same rounds"
            ))
        }
        for engine in engines {
            guard let folder = folders[engine.name] else { continue }
            let bytes = Double(try await IOExecutor.shared.run { DiskUsage.bytes(folder) })
            rows.append(Row(
                workload: "9", name: "\(engine.name) disk / payload", variant: variant,
                subject: Figure(label: "du", value: bytes / payload, unit: "× payload"),
                baseline: Figure(label: "diskcache", value: peerBytes / payload, unit: "× payload"),
                ratio: peerBytes / bytes, goal: "≤ 1.1× payload", met: bytes / payload <= 1.1,
                note: String(format: "st_blocks × 512 over the folder after %d sets of %d-byte values (keys not counted as payload): %.1f MB, diskcache %.1f MB", count, shape.size, bytes / 1e6, peerBytes / 1e6)
            ))
        }
        for folder in Set(folders.values) { RawFiles.removeDirectory(folder) }
        for round in 0..<rounds {
            for engine in engines { RawFiles.removeDirectory(scratch + "/\(engine.name.filter(\.isLetter))-\(shape.size)-\(shape.json)-\(round)") }
        }
        try? FileManager.default.removeItem(atPath: file)
        return rows
    }

    /// The rows of one engine for one shape: each call's p50 and p99 against diskcache's same call.
    static func latencyRows(engine: String, variant: String, ours: Samples, theirs: Samples, count: Int?, rounds: Int) -> [Row] {
        var rows: [Row] = []
        for (name, samples) in ours.values.sorted(by: { $0.key < $1.key }) where name.hasPrefix(engine + " ") {
            let isSet = name.hasSuffix(" set")
            let isAsync = isSet && !name.hasSuffix(" sync set")
            let peer = theirs.values[isSet ? "set" : "get"] ?? []
            let peerLabel = isSet ? "diskcache set" : "diskcache get"
            let p50 = Measure.percentile(samples, 50), peerP50 = Measure.percentile(peer, 50)
            let p99 = Measure.percentile(samples, 99), peerP99 = Measure.percentile(peer, 99)
            let goal = isSet ? 1.5 : 1.3
            rows.append(Row(
                workload: "9", name: name + (isAsync ? " (async)" : ""), variant: variant,
                subject: Figure(label: "p50", value: p50, unit: "µs"),
                baseline: Figure(label: peerLabel + " p50", value: peerP50, unit: "µs"),
                ratio: peerP50 / p50, goal: String(format: "≥ %.1f×", goal), met: peerP50 / p50 >= goal,
                note: count.map { String(format: "%d keys × %d rounds, alternating with diskcache's rounds; mean %.1f µs, diskcache %.1f µs", $0, rounds, mean(samples), mean(peer)) }
            ))
            rows.append(Row(
                workload: "9", name: name + (isAsync ? " (async)" : "") + " p99", variant: variant,
                subject: Figure(label: "p99", value: p99, unit: "µs"),
                baseline: Figure(label: peerLabel + " p99", value: peerP99, unit: "µs"),
                ratio: peerP99 / p99, goal: "≥ 1× (no worse)", met: peerP99 / p99 >= 1
            ))
        }
        return rows
    }

    // MARK: - First get after opening many entries

    /// Each engine that measures open, and diskcache, filled with `entries` 512-byte values; then,
    /// round by round and alternating who goes first, a new store on the folder and one get of a
    /// key that is there, timed together, in this process (the page cache warm).
    static func openLarge(entries: Int, rounds: Int, engines: [Engine], peer: PeerProcess, scratch: String) async throws -> [Row] {
        let keys = (0..<entries).map { "https://example.com/images/" + ChainBenchmarks.padded($0, to: 8) + ".jpg" }
        let peerFolder = scratch + "/diskcache-open"
        _ = try await peer.send("fill \(peerFolder) \(entries) 512", as: PeerProcess.Filled.self)
        var rows: [Row] = []
        for engine in engines where engine.measuresOpen {
            let folder = scratch + "/open-\(engine.name.filter(\.isLetter))"
            try await fill(engine, folder: folder, keys: keys, size: 512)
            var ours: [Double] = []
            var theirs: [Double] = []
            var random = SeededRandomNumberGenerator(seed: UInt64(entries))
            for round in 0..<max(rounds, 3) {
                let key = keys[Int(random.next() % UInt64(entries))]
                let peerFirst = round % 2 == 1
                if peerFirst { theirs.append(try await peerOpen(key)) }
                ours.append(try await openAndGet(engine, folder: folder, key: key))
                if !peerFirst { theirs.append(try await peerOpen(key)) }
            }
            let ms = Measure.median(ours), peerMs = Measure.median(theirs)
            rows.append(Row(
                workload: "9", name: "\(engine.name) open + first get", variant: "\(entries) entries, 512 B",
                subject: Figure(label: "init + get", value: ms, unit: "ms"),
                baseline: Figure(label: "diskcache Cache() + get", value: peerMs, unit: "ms"),
                ratio: peerMs / ms, goal: "≤ 10 ms", met: ms <= 10,
                note: String(format: "%@; median of %d opens in this process, page cache warm (rounds: %@; diskcache: %@)", engine.hasSyncGet ? "init and the synchronous get, timed on the I/O executor" : "init on the I/O executor, then the async get", ours.count,
                             ours.map { String(format: "%.1f", $0) }.joined(separator: ", "), theirs.map { String(format: "%.1f", $0) }.joined(separator: ", "))
            ))
            RawFiles.removeDirectory(folder)
        }
        func peerOpen(_ key: String) async throws -> Double {
            let answer = try await peer.send("open \(peerFolder) \(key)", as: PeerProcess.Open.self)
            precondition(answer.hit, "diskcache missed a key after opening")
            return answer.ms
        }
        RawFiles.removeDirectory(peerFolder)
        return rows
    }

    /// Milliseconds from opening `engine` on `folder` to the value of `key`: through the synchronous
    /// get, on the I/O executor, where the engine has one; else the open on the I/O executor and the
    /// async get (two hops more, a few µs).
    static func openAndGet(_ engine: Engine, folder: String, key: String) async throws -> Double {
        let elapsed: Double
        let value: Data?
        if engine.hasSyncGet {
            (elapsed, value) = try await IOExecutor.shared.run {
                let start = ContinuousClock.now
                let opened = try engine.open(folder)
                let value = try opened.syncGet!(key)
                return (ChainBenchmarks.microseconds(ContinuousClock.now - start) / 1000, value)
            }
        } else {
            let start = ContinuousClock.now
            let opened = try await IOExecutor.shared.run { try engine.open(folder) }
            value = try await opened.get(key)
            elapsed = ChainBenchmarks.microseconds(ContinuousClock.now - start) / 1000
        }
        precondition(value?.count == 512, "\(engine.name) missed a key after opening")
        return elapsed
    }

    /// Fills `folder` with one value per key, several sets in flight (the fill is not measured).
    static func fill(_ engine: Engine, folder: String, keys: [String], size: Int) async throws {
        let opened = try engine.open(folder)
        let value = Data(repeating: 0x5A, count: size)
        let lanes = 8
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    for index in stride(from: lane, to: keys.count, by: lanes) { try await opened.set(value, keys[index]) }
                }
            }
            try await group.waitForAll()
        }
        try await IOExecutor.shared.run { try opened.flush() }
    }

    // MARK: - Helpers

    /// Each call timed alone; what a get returns is compared with `expected` after the clock is
    /// read (the peer compares after its clock too).
    static func timed(_ indices: [Int], expecting expected: [Data]?, _ call: (Int) async throws -> Data?) async throws -> [Double] {
        var samples: [Double] = []
        samples.reserveCapacity(indices.count)
        for index in indices {
            let start = ContinuousClock.now
            let value = try await call(index)
            samples.append(ChainBenchmarks.microseconds(ContinuousClock.now - start))
            if let expected { precondition(value == expected[index], "a store returned a wrong value") }
        }
        return samples
    }

    static func timedSync(_ indices: [Int], expecting expected: [Data]?, _ call: (Int) throws -> Data?) throws -> [Double] {
        var samples: [Double] = []
        samples.reserveCapacity(indices.count)
        for index in indices {
            let start = ContinuousClock.now
            let value = try call(index)
            samples.append(ChainBenchmarks.microseconds(ContinuousClock.now - start))
            if let expected { precondition(value == expected[index], "a store returned a wrong value") }
        }
        return samples
    }

    static func mean(_ values: [Double]) -> Double { values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count) }
}

extension Array {
    /// The elements from `offset` (modulo the count) on, then the ones before it.
    func rotated(by offset: Int) -> [Element] {
        guard !isEmpty else { return self }
        let start = offset % count
        return Array(self[start...] + self[..<start])
    }
}

/// Workload 9's keys and values, the same on both sides: made here from a seed and written to a file
/// that the Python peer reads (`Peer/diskcache_peer.py` describes its format).
struct PeerData: Sendable {
    var keys: [String]
    var values: [Data]
    /// The order of the gets: a seeded shuffle of the keys' indices.
    var order: [Int]

    init(count: Int, size: Int, json: Bool, seed: UInt64) {
        var random = SeededRandomNumberGenerator(seed: seed)
        keys = (0..<count).map { "https://example.com/images/" + ChainBenchmarks.padded($0, to: 8) + ".jpg" }
        values = (0..<count).map { index in json ? Self.json(index: index, size: size, random: &random) : Self.bytes(size, random: &random) }
        order = Array(0..<count).shuffled(using: &random)
    }

    static func bytes(_ size: Int, random: inout SeededRandomNumberGenerator) -> Data {
        var bytes = [UInt8]()
        bytes.reserveCapacity(size + 8)
        while bytes.count < size {
            let word = random.next()
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return Data(bytes.prefix(size))
    }

    /// A JSON document of exactly `size` bytes: an API response's list of users, then a padding
    /// field of words to reach the size.
    static func json(index: Int, size: Int, random: inout SeededRandomNumberGenerator) -> Data {
        let cities = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Dakar"]
        let tags = ["swift", "cache", "linux", "lz4", "disk", "memory", "redis"]
        let words = ["alpha", "bravo", "delta", "echo", "golf", "hotel", "kilo", "lima", "oscar", "tango"]
        let head = "{\"page\":\(index),\"users\":["
        let tail = "],\"pad\":\""
        var users: [String] = []
        var length = head.count + tail.count + 2
        while true {
            let id = index * 100 + users.count
            let chosen = (0..<3).map { _ in "\"" + tags[Int(random.next() % UInt64(tags.count))] + "\"" }.joined(separator: ",")
            let user = "{\"id\":\(id),\"name\":\"user-\(id)\",\"email\":\"user\(id)@example.com\",\"active\":\(id % 3 != 0),"
                + "\"score\":\(Double(random.next() % 100_000) / 1000),\"tags\":[\(chosen)],\"city\":\"\(cities[Int(random.next() % 6)])\"}"
            let added = user.utf8.count + (users.isEmpty ? 0 : 1)
            if length + added > size { break }
            users.append(user)
            length += added
        }
        var pad = ""
        while pad.utf8.count < size - length { pad += (pad.isEmpty ? "" : " ") + words[Int(random.next() % 10)] }
        pad = String(pad.utf8.prefix(size - length))!
        let document = head + users.joined(separator: ",") + tail + pad + "\"}"
        precondition(document.utf8.count == size, "JSON value of \(document.utf8.count) bytes, not \(size)")
        return Data(document.utf8)
    }

    func write(to path: String) throws {
        var data = Data("HNKPEER1".utf8)
        func append(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { data.append(contentsOf: $0) } }
        append(keys.count)
        for (key, value) in zip(keys, values) {
            append(key.utf8.count)
            data.append(contentsOf: key.utf8)
            append(value.count)
            data.append(value)
        }
        for index in order { append(index) }
        try data.write(to: URL(fileURLWithPath: path))
    }
}

/// The Python peer as a child process that answers one JSON line per command. Calls are made one at
/// a time, each on the I/O executor (`send` waits there for the answer, never on one of Swift's
/// cooperative threads), so the unchecked Sendable holds.
final class PeerProcess: @unchecked Sendable {
    struct Loaded: Decodable, Sendable { var count: Int; var version: String }
    struct Round: Decodable, Sendable { var set: [Double]; var get: [Double]; var wrong: Int }
    struct Disk: Decodable, Sendable { var bytes: Int }
    struct Filled: Decodable, Sendable { var seconds: Double }
    struct Open: Decodable, Sendable { var ms: Double; var hit: Bool }

    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    init(python: String, script: String) throws {
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    func send<Answer: Decodable & Sendable>(_ command: String, as: Answer.Type) async throws -> Answer {
        try await IOExecutor.shared.run { try self.sendNow(command, as: Answer.self) }
    }

    private func sendNow<Answer: Decodable>(_ command: String, as: Answer.Type) throws -> Answer {
        try input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
        while buffer.firstIndex(of: UInt8(ascii: "\n")) == nil {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else {
                throw Tools.Failure(message: "the diskcache peer exited (status \(process.isRunning ? -1 : process.terminationStatus)) on '\(command)'")
            }
            buffer += chunk
        }
        let newline = buffer.firstIndex(of: UInt8(ascii: "\n"))!
        let line = buffer[buffer.startIndex..<newline]
        buffer = Data(buffer[(newline + 1)...])
        if let error = try? JSONDecoder().decode([String: String].self, from: line), let message = error["error"] {
            throw Tools.Failure(message: "the diskcache peer: \(message)")
        }
        return try JSONDecoder().decode(Answer.self, from: line)
    }

    func stop() {
        try? input.fileHandleForWriting.write(contentsOf: Data("quit\n".utf8))
        try? input.fileHandleForWriting.close()
    }
}

/// python-diskcache 5.6.3 in a virtual environment of the benchmarks' own, `.build/peer-venv`, made
/// with `python3 -m venv` and `pip install diskcache==5.6.3` on first use and kept. pip reaches
/// the package index as the machine sets it up (pip.conf, PIP_* variables); when it cannot, the
/// failure is returned in words and workload 9 skips its peer rows.
enum DiskcacheVenv {
    static let venv = Tools.packageRoot + "/.build/peer-venv"
    static let requirement = "diskcache==5.6.3"

    static func python() async throws -> Result<String, Tools.Failure> {
        try await IOExecutor.shared.run { make() }
    }

    /// What a workload reports instead of its peer rows when diskcache is not available.
    struct Skipped: Error {
        var row: Row
    }

    /// The environment's Python for `workload`, or (printed, and as the one row it reports, named
    /// `name`) why diskcache is not available.
    static func python(forWorkload workload: String, name: String) async throws -> Result<String, Skipped> {
        switch try await python() {
        case .success(let python):
            return .success(python)
        case .failure(let failure):
            print("workload \(workload): python-diskcache is not available, so its rows are skipped: \(failure)")
            return .failure(Skipped(row: Row(
                workload: workload, name: name, variant: "skipped",
                subject: Figure(label: "not measured", value: 0, unit: "rows"), baseline: nil, ratio: nil,
                goal: "report", met: nil, note: "python-diskcache not measured: \(failure)"
            )))
        }
    }

    private static func make() -> Result<String, Tools.Failure> {
        let python = venv + "/bin/python"
        let check = [python, "-c", "import diskcache, sys; sys.exit(diskcache.__version__ != '5.6.3')"]
        if FileManager.default.isExecutableFile(atPath: python), Tools.succeeds(check) { return .success(python) }
        print("workload 9: making \(venv) with \(requirement) (once)…")
        RawFiles.removeDirectory(venv)
        guard Tools.succeeds(["/usr/bin/env", "python3", "-m", "venv", venv]) || Tools.succeeds(["/usr/bin/python3", "-m", "venv", venv]) else {
            return .failure(Tools.Failure(message: "python3 -m venv \(venv) failed (is python3 with venv installed? make bench-deps installs python3-venv)"))
        }
        guard Tools.succeeds([venv + "/bin/pip", "install", "--quiet", "--disable-pip-version-check", requirement]), Tools.succeeds(check) else {
            return .failure(Tools.Failure(message: "pip install \(requirement) into \(venv) failed (no package index reachable?)"))
        }
        return .success(python)
    }

}

/// What `du` counts: st_blocks × 512 over a folder and everything below it (links not followed).
enum DiskUsage {
    /// What `du` counts for `path` and everything below it; with `filesOnly`, for its regular files
    /// alone (folders aside: a FileStore's 256 shard folders take 1 MiB of blocks whatever it holds).
    static func bytes(_ path: String, filesOnly: Bool = false) -> Int {
        var total = 0
        var status = stat()
        if !filesOnly, lstat(path, &status) == 0 { total += Int(status.st_blocks) * 512 }
        guard let enumerator = FileManager.default.enumerator(atPath: path) else { return total }
        while let relative = enumerator.nextObject() as? String {
            guard lstat(path + "/" + relative, &status) == 0 else { continue }
            if !filesOnly || (status.st_mode & S_IFMT) == S_IFREG { total += Int(status.st_blocks) * 512 }
        }
        return total
    }
}
