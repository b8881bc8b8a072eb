import Foundation
import Haneke
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

/// The `haneke` tool on a folder a `FileStore` shares with an `SQLiteStore` (small values in the
/// database, large ones in files), as a format with a small-value threshold makes it.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk, .process, .slow))
struct RoutedFolderTests {
    typealias Run = ChildProcess.Outcome

    static func haneke(_ arguments: String...) async throws -> Run {
        try await ChildProcess.run(ChildProcess.binary("haneke"), arguments)
    }

    static let needle = Data("needle-of-the-value".utf8)

    /// A store folder with `large` values of 20 KB in files and `small` values of about 400 bytes
    /// in the database (each ends with its key, a hyphen and ``needle``); both stores flushed and
    /// closed, as a stopped process leaves the folder.
    static func makeRoutedFolder(in directory: TemporaryDirectory, large: [String], small: [String]) async throws -> String {
        let folder = directory.appending("store")
        // A released store closes on its executor (SQLite then removes its log and the log's
        // index). One job at a time, in order: once a job submitted after the release has run,
        // the stores are closed.
        let executor = IOExecutor(width: 1, label: "routed-folder")
        try fill(folder, large: large, small: small, executor: executor)
        try await executor.run {}
        #expect(!FileManager.default.fileExists(atPath: folder + "/" + SQLiteStore.databaseFileName + "-wal"), "the database is still open")
        return folder
    }

    /// Writes the values of ``makeRoutedFolder(in:large:small:)`` through stores on `executor`, and
    /// releases them.
    static func fill(_ folder: String, large: [String], small: [String], executor: IOExecutor) throws {
        let files = try FileStore(directory: folder, configuration: .init(capacity: nil), executor: executor)
        let database = try SQLiteStore(directory: folder, configuration: .init(capacity: nil), executor: executor)
        for key in large { try files.setValue(Data(repeating: UInt8(ascii: "L"), count: 20_000), forKey: key) }
        for key in small {
            try database.setValue(Data(repeating: UInt8(ascii: "s"), count: 400) + Data("\(key)-".utf8) + needle, forKey: key)
        }
        try files.flush()
        try database.flush()
    }

    /// Changes the last byte of the value of the small key "damaged" in the database file.
    static func damageRow(in folder: String) throws {
        let path = folder + "/" + SQLiteStore.databaseFileName
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let range = try #require(bytes.range(of: Data("damaged-".utf8) + needle), "the value is not in the database file")
        bytes[range.upperBound - 1] ^= 0x20
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    @Test func inspectStatsVerifyAndGetSeeTheDatabaseAndChangeNothing() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeRoutedFolder(in: directory, large: ["big-1", "big-2"], small: ["small-1", "small-2", "small-3"])
        let before = try HanekeToolTests.snapshot(of: folder)

        let table = try await Self.haneke("inspect", folder)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.output.contains("2 entries,"), "\(table.output)")
        #expect(table.output.contains("in the database"))
        #expect(table.output.contains("small-2"))
        #expect(table.output.contains("3 entries in the database"), "\(table.output)")

        let json = try await Self.haneke("inspect", folder, "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]])
        #expect(Set(rows.compactMap { $0["key"] as? String }) == ["big-1", "big-2", "small-1", "small-2", "small-3"])
        let inDatabase = rows.filter { ($0["file"] as? String)?.hasSuffix(SQLiteStore.databaseFileName) == true }
        #expect(inDatabase.count == 3)
        #expect(inDatabase.allSatisfy { $0["allocatedSize"] as? Int == 0 && $0["payloadSize"] as? Int ?? 0 > 400 })
        #expect(rows.allSatisfy { Set($0.keys) == ["key", "file", "payloadSize", "storedSize", "allocatedSize", "created", "expires", "lastAccess"] })

        let stats = try await Self.haneke("stats", folder)
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(stats.output.contains("in the database"), "\(stats.output)")
        #expect(stats.output.contains("database, log and index"))
        let summary = try #require(try JSONSerialization.jsonObject(with: try await Self.haneke("stats", folder, "--json").stdout) as? [String: Any])
        #expect(summary["entries"] as? Int == 5)
        let database = try #require(summary["database"] as? [String: Any])
        #expect(database["entries"] as? Int == 3 && database["problems"] as? Int == 0)
        #expect(database["allocatedSize"] as? Int ?? 0 > 0)

        let verify = try await Self.haneke("verify", folder)
        #expect(verify.status == 0, "\(verify.output) \(verify.stderr)")
        #expect(verify.output.contains("the database: 3 rows checked, 3 valid, 0 problems"), "\(verify.output)")

        let get = try await Self.haneke("get", folder, "small-2")
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdout == Data(repeating: UInt8(ascii: "s"), count: 400) + Data("small-2-".utf8) + Self.needle)
        let big = try await Self.haneke("get", folder, "big-1")
        #expect(big.stdout.count == 20_000)
        #expect(try await Self.haneke("get", folder, "missing").status == 1)

        let after = try HanekeToolTests.snapshot(of: folder)
        #expect(after == before, "a read-only command changed the folder: \(after.keys.sorted()) were \(before.keys.sorted())")
    }

    /// A cache whose format routes small values to the database keeps them there as LZ4 frames:
    /// `get` decompresses them as it does a file's.
    @Test func aRoutedCachesFolderIsReadWhole() async throws {
        let directory = try TemporaryDirectory()
        var random = SeededRandomNumberGenerator(seed: 7)
        // Random letters: LZ4 cannot shrink 20,000 of them under the threshold.
        let large = String((0..<20_000).map { _ in Character(UnicodeScalar(UInt8.random(in: 97...122, using: &random))) })
        let folder: String
        // The format's folder made a store's first: a new cache opens its FileStore and its
        // SQLiteStore at once, and one may read the other's marker before it is written (then the
        // format goes on without its database; seen once in a parallel run).
        _ = try FileStore(directory: directory.appending("routed"), configuration: .init(capacity: nil))
        do {
            let cache = Cache<String>(name: "tool", directory: directory.path)
            var format = Format<String>(name: "routed")
            format.smallValueThreshold = 1_024
            cache.addFormat(format)
            try await cache.set("small value", forKey: "s", formatName: "routed")
            try await cache.set(large, forKey: "l", formatName: "routed")
            folder = try #require(try await cache.diskStore(formatName: "routed")).directory
            #expect(folder == directory.appending("routed"))
            try await cache.flush()
        }
        #expect(FileManager.default.fileExists(atPath: folder + "/" + SQLiteStore.databaseFileName))

        let small = try await Self.haneke("get", folder, "s")
        #expect(small.status == 0, "\(small.stderr)")
        #expect(small.stdout == Data("small value".utf8))
        #expect(LZ4Frame.looksLikeFrame(try await Self.haneke("get", folder, "s", "--raw").stdout))
        #expect(try await Self.haneke("get", folder, "l").stdout == Data(large.utf8))

        let inspect = try await Self.haneke("inspect", folder)
        #expect(inspect.output.contains("1 entry,") && inspect.output.contains("1 entry in the database"), "\(inspect.output)")
        let verify = try await Self.haneke("verify", folder)
        #expect(verify.status == 0, "\(verify.output) \(verify.stderr)")
        #expect(verify.output.contains("the database: 1 row checked, 1 valid, 0 problems"), "\(verify.output)")
    }

    @Test func verifyFindsADamagedRowAndRepairDeletesIt() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeRoutedFolder(in: directory, large: ["big"], small: ["intact", "damaged", "misplaced"])
        try Self.damageRow(in: folder)
        // The stored key changed: its MD5 is no longer the row's id. (The key comes before the
        // value, which repeats it, in the row.)
        let path = folder + "/" + SQLiteStore.databaseFileName
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let key = try #require(bytes.range(of: Data("misplaced".utf8)))
        bytes[key.lowerBound] = UInt8(ascii: "M")
        try bytes.write(to: URL(fileURLWithPath: path))

        let check = try await Self.haneke("verify", folder, "--quiet")
        #expect(check.status == 1, "\(check.stderr)")
        #expect(check.stderr.isEmpty, "problems are the output, not an error: \(check.stderr)")
        #expect(check.output.contains("damaged row: "), "\(check.output)")
        #expect(check.output.contains("\"damaged\""))
        #expect(check.output.contains("does not match its checksum"))
        #expect(check.output.contains("(key \"Misplaced\"): the key's MD5 is not the row's id"), "\(check.output)")
        #expect(check.output.contains("the database: 3 rows checked, 1 valid, 2 problems"), "\(check.output)")
        #expect(check.output.contains("1 file checked, 1 valid, 0 problems"), "\(check.output)")

        let json = try #require(try JSONSerialization.jsonObject(with: try await Self.haneke("verify", folder, "--json").stdout) as? [String: Any])
        #expect(json["remaining"] as? Int == 2)
        let database = try #require(json["database"] as? [String: Any])
        let problems = try #require(database["problems"] as? [[String: Any]])
        #expect(Set(problems.compactMap { $0["kind"] as? String }) == ["checksumMismatch", "keyDoesNotMatchID"])
        #expect(Set(problems.compactMap { $0["key"] as? String }) == ["damaged", "Misplaced"])

        let stats = try #require(try JSONSerialization.jsonObject(with: try await Self.haneke("stats", folder, "--json").stdout) as? [String: Any])
        #expect(stats["problems"] as? Int == 2)
        let get = try await Self.haneke("get", folder, "damaged")
        #expect(get.status == 1 && get.stderr.contains("damaged"), "\(get.stderr)")

        let repair = try await Self.haneke("verify", folder, "--repair", "--quiet")
        #expect(repair.status == 0, "\(repair.output) \(repair.stderr)")
        #expect(repair.output.contains("deleted 2 rows"), "\(repair.output)")

        let again = try await Self.haneke("verify", folder)
        #expect(again.status == 0, "\(again.output)")
        #expect(again.output.contains("the database: 1 row checked, 1 valid, 0 problems"), "\(again.output)")
        #expect(try await Self.haneke("get", folder, "intact").status == 0)
        #expect(try await Self.haneke("get", folder, "damaged").status == 1)
        #expect(try await Self.haneke("get", folder, "big").stdout.count == 20_000)
    }

    @Test func aDatabaseSQLiteCannotReadIsRemovedByRepairAndTheFilesKept() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeRoutedFolder(in: directory, large: ["big"], small: ["a", "b"])
        let path = folder + "/" + SQLiteStore.databaseFileName
        try Data(repeating: 0x5A, count: 8_192).write(to: URL(fileURLWithPath: path))

        let check = try await Self.haneke("verify", folder, "--quiet")
        #expect(check.status == 1, "\(check.stderr)")
        #expect(check.output.contains("damaged database: "), "\(check.output)")

        let repair = try await Self.haneke("verify", folder, "--repair", "--quiet")
        #expect(repair.status == 0, "\(repair.output) \(repair.stderr)")
        #expect(repair.output.contains("removed the database files"), "\(repair.output)")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try await Self.haneke("get", folder, "big").stdout.count == 20_000)
        let again = try await Self.haneke("verify", folder)
        #expect(again.status == 0 && !again.output.contains("the database"), "\(again.output)")
    }

    @Test func trimSplitsTheSizeBetweenFilesAndDatabase() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeRoutedFolder(
            in: directory, large: (0..<20).map { "big-\($0)" }, small: (0..<400).map { "small-\($0)" }
        )
        let run = try await Self.haneke("trim", folder, "--to", "600K")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.output.contains("20 entries"), "\(run.output)")
        #expect(run.output.contains("the database: 400 entries"), "\(run.output)")
        let files = try FileStore(directory: folder, configuration: .init(capacity: nil))
        let database = try SQLiteStore(directory: folder, configuration: .init(capacity: nil))
        #expect(files.count < 20 && files.count > 0, "\(run.output)")
        #expect(database.count < 400 && database.count > 0, "\(run.output)")
        #expect(files.totalSize + files.metadataSize + database.totalSize <= 600 << 10, "\(run.output)")
        // What is left are the most recently written entries.
        #expect(database.containsValue(forKey: "small-399"))
        #expect(!database.containsValue(forKey: "small-0"))
    }
}
