import Foundation
import Haneke
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport
@testable import haneke

#if canImport(Glibc)
import Glibc
#endif

/// The `haneke` tool, run as a separate process the way a user runs it.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk, .process, .slow))
struct HanekeToolTests {
    typealias Run = ChildProcess.Outcome

    static func haneke(_ arguments: String...) async throws -> Run {
        try await haneke(arguments)
    }

    static func haneke(_ arguments: [String]) async throws -> Run {
        try await ChildProcess.run(ChildProcess.binary("haneke"), arguments)
    }

    /// The path and bytes of every file below `root`, to prove a command changed nothing.
    static func snapshot(of root: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for path in try FileManager.default.subpathsOfDirectory(atPath: root) {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[path] = try Data(contentsOf: URL(fileURLWithPath: root + "/" + path))
            }
        }
        return files
    }

    /// The MD5 of `key` by `md5sum`, upper-case: an oracle independent of the library.
    static func md5(_ key: String) async throws -> String {
        let run = try await ChildProcess.run("/usr/bin/md5sum", [], input: Data(key.utf8))
        return run.output.prefix(32).uppercased()
    }

    /// A cache folder with a few JSON entries; returns the store's folder.
    static func makeStore(in directory: TemporaryDirectory, keys: [String]) async throws -> String {
        let cache = Cache<JSON>(name: "tool", directory: directory.path)
        for key in keys {
            try await cache.set(["key": .string(key), "padding": .string(String(repeating: "abc", count: 200))], forKey: key)
        }
        let disk = try #require(try await cache.diskStore())
        try disk.flush()
        return disk.directory
    }

    @Test func inspectAsJSONListsKeysWhoseMD5IsTheFileName() async throws {
        let directory = try TemporaryDirectory()
        let keys = ["alpha", "https://example.com/β?x=1", "", "../../etc/passwd"]
        let folder = try await Self.makeStore(in: directory, keys: keys)

        let run = try await Self.haneke("inspect", folder, "--json")
        #expect(run.status == 0, "\(run.stderr)")
        struct Row: Decodable { var key: String; var file: String; var payloadSize: Int; var storedSize: Int }
        let rows = try JSONDecoder().decode([Row].self, from: run.stdout)
        #expect(Set(rows.map(\.key)) == Set(keys))
        for row in rows {
            let md5 = try await Self.md5(row.key)
            #expect(row.file == "\(folder)/\(md5.prefix(2))/\(md5)")
            #expect(row.storedSize == 40 + row.key.utf8.count + row.payloadSize)
        }
        let before = try Self.snapshot(of: directory.path)
        let table = try await Self.haneke("inspect", folder)
        _ = try await Self.haneke("stats", folder)
        _ = try await Self.haneke("verify", folder)
        _ = try await Self.haneke("get", folder, "alpha")
        #expect(try Self.snapshot(of: directory.path) == before, "a read-only command changed the folder")
        #expect(table.status == 0)
        #expect(table.output.contains("alpha"))
        #expect(table.output.contains("4 entries"))
    }

    @Test func verifyFindsPlantedDamageAndRepairRemovesIt() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["good", "flipped", "other"])

        // A flipped bit inside an LZ4 frame, a garbage file under a valid name, a crashed writer's file.
        let flipped = "\(folder)/\(try await Self.md5("flipped").prefix(2))/\(try await Self.md5("flipped"))"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: flipped))
        bytes[bytes.count - 10] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: flipped))
        let garbageName = try await Self.md5("never written")
        try FileManager.default.createDirectory(atPath: "\(folder)/\(garbageName.prefix(2))", withIntermediateDirectories: true)
        let garbage = "\(folder)/\(garbageName.prefix(2))/\(garbageName)"
        try Data("not a cache file".utf8).write(to: URL(fileURLWithPath: garbage))
        let leftover = "\(folder)/\(garbageName.prefix(2))/.haneke-tmp.999999999.7"
        try Data("half".utf8).write(to: URL(fileURLWithPath: leftover))

        let check = try await Self.haneke("verify", folder, "--quiet")
        #expect(check.status == 1)
        #expect(check.stderr.isEmpty, "problems are the output, not an error: \(check.stderr)")
        #expect(check.output.contains(flipped))
        #expect(check.output.contains("damaged"))
        #expect(check.output.contains(garbage))
        #expect(check.output.contains(leftover))
        #expect(check.output.contains("3 problems"))

        let repair = try await Self.haneke("verify", folder, "--repair", "--quiet")
        #expect(repair.status == 0, "\(repair.stderr)")
        #expect(repair.output.contains("removed 3"))
        for path in [flipped, garbage, leftover] { #expect(!FileManager.default.fileExists(atPath: path)) }

        let again = try await Self.haneke("verify", folder)
        #expect(again.status == 0)
        #expect(again.output.contains("2 valid, 0 problems"))
    }

    @Test func verifyFindsADamagedFrameMagicInACompressedFolder() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["a", "b", "c"])
        let path = "\(folder)/\(try await Self.md5("b").prefix(2))/\(try await Self.md5("b"))"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[40 + 1] ^= 0x01   // the frame's magic, just after the 40-byte header and the 1-byte key
        try bytes.write(to: URL(fileURLWithPath: path))
        let check = try await Self.haneke("verify", folder, "--quiet")
        #expect(check.status == 1)
        #expect(check.output.contains("not an LZ4 frame"))
        #expect(check.output.contains("2 valid, 1 problem"), "\(check.output)")
        #expect(!check.output.contains("1 problems"), "\(check.output)")
        #expect(try await Self.haneke("verify", folder, "--quiet", "--payloads", "raw").status == 0)
        // Found in the one pass that decides, by the majority, that the payloads are frames, and
        // removed by a repair like any other damage.
        let repair = try await Self.haneke("verify", folder, "--repair", "--quiet")
        #expect(repair.status == 0, "\(repair.stderr)")
        #expect(repair.output.contains("removed 1"), "\(repair.output)")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func changesAreRefusedOutsideACacheFolderAndForeignFilesAreKept() async throws {
        let plain = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: plain.appending("AB"), withIntermediateDirectories: true)
        let notes = plain.appending("AB/notes.txt")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: notes))
        for arguments in [["verify", plain.path, "--repair"], ["trim", plain.path, "--to", "0"]] {
            let run = try await Self.haneke(arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains("not a Haneke store folder"))
        }
        #expect(FileManager.default.fileExists(atPath: notes))
        #expect(!FileManager.default.fileExists(atPath: plain.appending(".haneke-journal")))

        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["a"])
        let shard = "\(folder)/\(try await Self.md5("a").prefix(2))"
        let foreign = shard + "/README"
        try Data("someone's".utf8).write(to: URL(fileURLWithPath: foreign))
        let repair = try await Self.haneke("verify", folder, "--repair", "--quiet")
        #expect(repair.status == 1)
        #expect(FileManager.default.fileExists(atPath: foreign))
        #expect(try await Self.haneke("verify", folder, "--repair", "--remove-foreign", "--quiet").status == 0)
        #expect(!FileManager.default.fileExists(atPath: foreign))
    }

    /// A folder a person uses for other things (the review's example), byte for byte unchanged
    /// after every command the tool has, each refused with one line.
    @Test func everyCommandRefusesAFolderThatIsNotAStoresAndChangesNothing() async throws {
        let home = try TemporaryDirectory(prefix: "home")
        for (path, text) in [(".trash/old-photos/img1.jpg", "an old photo"), ("journal", "dear diary"), ("42", "the answer"),
                             ("10/.tmp.notes", "notes"), ("AB/notes.txt", "my notes")] {
            try FileManager.default.createDirectory(atPath: (home.appending(path) as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: home.appending(path)))
        }
        let before = try Self.snapshot(of: home.path)
        for arguments in [["inspect", home.path], ["stats", home.path], ["get", home.path, "42"], ["verify", home.path],
                          ["verify", home.path, "--repair"], ["verify", home.path, "--repair", "--remove-foreign"],
                          ["trim", home.path, "--to", "0"], ["demo", "--dir", home.path, "--documents", "5"]] {
            let run = try await Self.haneke(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(arguments)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("not a Haneke store folder") || run.stderr.contains("is not a folder `haneke demo` made"), "\(arguments): \(run.stderr)")
        }
        #expect(try Self.snapshot(of: home.path) == before, "a command changed a folder that is not a store's")
    }

    @Test func theDemoRefusesACacheItDidNotMakeAndReusesItsOwn() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: (0..<20).map { "key-\($0)" })
        let before = try Self.snapshot(of: directory.path)
        let refused = try await Self.haneke("demo", "--dir", directory.path, "--documents", "5")
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("refusing to use it"), "\(refused.stderr)")
        #expect(try Self.snapshot(of: directory.path) == before)
        #expect(try FileStore(directory: folder, configuration: .init(capacity: nil)).count == 20)

        let own = try TemporaryDirectory()
        for _ in 0..<2 {
            let run = try await Self.haneke("demo", "--dir", own.path, "--documents", "5")
            #expect(run.status == 0, "\(run.stderr)")
        }
    }

    @Test func aTrimThatCannotDeleteFailsWithOneLine() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: (0..<30).map { "key-\($0)" })
        // Shard folders their owner may not write; as root, the owner is `nobody`, who runs the tool.
        let asNobody = getuid() == 0
        let items = try FileManager.default.contentsOfDirectory(atPath: folder).map { folder + "/" + $0 } + [folder]
        func prepare(owner: uid_t, shardMode: mode_t) {
            for path in items {
                if asNobody { chown(path, owner, owner) }
                let name = (path as NSString).lastPathComponent
                if name.count == 2 { chmod(path, shardMode) }
            }
        }
        prepare(owner: 65534, shardMode: 0o500)
        let arguments = ["trim", folder, "--to", "0"]
        let run = asNobody
            ? try await ChildProcess.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", ChildProcess.binary("haneke")] + arguments)
            : try await Self.haneke(arguments)
        prepare(owner: getuid(), shardMode: 0o700)
        #expect(run.status == 3, "an I/O failure")
        // One clean line: no category prefix, no cause repeating the path.
        #expect(run.stderr == "haneke: Could not delete 30 of the 30 files evicted from \(folder): Permission denied (errno 13 EACCES)\n", "\(run.stderr)")
    }

    /// A store's folder the user may not read, and one under a parent it may not search: a
    /// permission problem (exit status 3), not "not a store" or "not a folder" (exit status 2).
    /// As root, the tool runs as `nobody`, for whom the folders are closed.
    @Test func aFolderTheUserMayNotReadIsAPermissionProblem() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["doc"])
        let asNobody = getuid() == 0
        func haneke(_ arguments: [String]) async throws -> ChildProcess.Outcome {
            asNobody
                ? try await ChildProcess.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", ChildProcess.binary("haneke")] + arguments)
                : try await Self.haneke(arguments)
        }
        // The folders above the store's may be searched, the store's own folder not read.
        var parent = (folder as NSString).deletingLastPathComponent
        var opened: [(String, mode_t)] = []
        while parent.hasPrefix(directory.path) {
            var info = stat()
            stat(parent, &info)
            opened.append((parent, info.st_mode & 0o7777))
            chmod(parent, 0o755)
            parent = (parent as NSString).deletingLastPathComponent
        }
        chmod(folder, 0o700)
        if !asNobody { chmod(folder, 0o000) }
        defer {
            chmod(folder, 0o700)
            for (path, mode) in opened { chmod(path, mode) }
        }
        for command in [["inspect", folder], ["stats", folder], ["verify", folder]] {
            let run = try await haneke(command)
            #expect(run.status == 3, "\(command): \(run.stderr)")
            #expect(run.stderr == "haneke: Could not read \(folder): Permission denied (errno 13 EACCES)\n", "\(command): \(run.stderr)")
        }
        // The folder's parent closed: the folder cannot be reached at all.
        let closedParent = (folder as NSString).deletingLastPathComponent
        chmod(closedParent, 0o700)
        if !asNobody { chmod(closedParent, 0o000) }
        let run = try await haneke(["inspect", folder])
        #expect(run.status == 3, "\(run.stderr)")
        #expect(run.stderr == "haneke: Could not reach \(folder): Permission denied (errno 13 EACCES)\n", "\(run.stderr)")
    }

    /// A key that is a URL is printed without its secrets, in tables and JSON alike, unless
    /// `--show-secrets`.
    @Test func keysArePrintedWithoutTheirSecretsUnlessAsked() async throws {
        let directory = try TemporaryDirectory()
        let key = "https://alice:pa55@api.example.com/files?X-Goog-Signature=g00g&code=c0de&sessionid=5e55&page=2"
        let folder = try await Self.makeStore(in: directory, keys: [key])
        for arguments in [["inspect", folder], ["inspect", folder, "--json"]] {
            let run = try await Self.haneke(arguments)
            #expect(run.status == 0, "\(run.stderr)")
            for secret in ["pa55", "g00g", "c0de", "5e55"] { #expect(!run.output.contains(secret), "\(arguments): \(run.output)") }
            #expect(run.output.contains("alice:***@api.example.com/files?X-Goog-Signature=***&code=***&sessionid=***&page=2"), "\(run.output)")
        }
        let shown = try await Self.haneke("inspect", folder, "--json", "--show-secrets")
        #expect(shown.output.contains(key), "\(shown.output)")
        // A name of one's own, beside the common ones.
        let own = try await Self.haneke("inspect", folder, "--sensitive-query-item", "PAGE")
        #expect(own.output.contains("sessionid=***&page=***"), "\(own.output)")
    }

    @Test func statsTellsDiskFromFiles() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: (0..<8).map { "key-\($0)" })
        let run = try await Self.haneke("stats", folder)
        #expect(run.status == 0)
        #expect(run.output.contains("on disk (du)"))
        #expect(run.output.contains("in files"))
        // Eight small files take eight blocks.
        #expect(run.output.contains("entry files") && run.output.contains("32.0 KiB"), "\(run.output)")
    }

    @Test func getWritesTheDecompressedValue() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["doc"])
        let run = try await Self.haneke("get", folder, "doc")
        #expect(run.status == 0)
        let json = try JSON.convertFromData(run.stdout)
        #expect(json["key"]?.string == "doc")

        let raw = try await Self.haneke("get", folder, "doc", "--raw")
        #expect(LZ4Frame.looksLikeFrame(raw.stdout))
    }

    /// Every mistake and failure is one clean line on stderr, with the status the help documents.
    @Test func errorsAreOneLineOnStderrWithTheirExitStatus() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["doc"])
        let cases: [([String], Int32, String)] = [
            (["get", folder, "missing\nkey"], 1, #"no entry for key "missing\nkey""#),
            (["inspect", directory.appending("nope")], 2, "is not a folder"),
            (["inspect", directory.path], 2, "pass one of its formats"),
            (["trim", folder, "--to", "lots"], 2, "The value 'lots' is invalid for '--to <size>'"),
            (["trim", folder, "--to", "-5"], 2, "The value '-5' is invalid for '--to <size>'"),
            (["stats", folder, "--decompression-limit", "-1"], 2, "The value '-1' is invalid"),
            (["demo", "--documents", "0"], 2, "--documents must be at least 1"),
            (["verify", folder, "--remove-foreign"], 2, "--remove-foreign only applies with --repair"),
            (["frobnicate"], 2, "frobnicate"),
            (["get", folder], 2, "Missing expected argument"),
            (["verify"], 2, "Missing expected argument"),
            ([], 2, "a command is needed: demo, thumbnail, inspect, get, verify, trim, stats, proxy"),
            (["help", "nosuch"], 2, "there is no command 'nosuch'"),
            (["trim", folder, "--to", "5XB"], 2, "The value '5XB' is invalid for '--to <size>'"),
        ]
        for (arguments, status, text) in cases {
            let process = try await Self.haneke(arguments)
            #expect(process.status == status, "\(arguments): \(process.stderr)")
            #expect(process.stdout.isEmpty, "\(arguments)")
            let lines = process.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(arguments): \(process.stderr)")
            #expect(lines.first?.hasPrefix("haneke: ") == true, "\(arguments)")
            #expect(process.stderr.contains(text), "\(arguments): \(process.stderr)")
            for debris in ["Optional(", "ExitCode", "(cause:", "Error Domain", "haneke: io:", "Error: "] {
                #expect(!process.stderr.contains(debris), "\(arguments): \(process.stderr)")
            }
        }
    }

    /// Sizes in IEC (KiB, powers of 1024), SI (KB, powers of 1000) and `du`'s short form (K).
    @Test(arguments: [("100KiB", 102_400), ("100kb", 100_000), ("100K", 102_400), ("1.5MiB", 1_572_864), ("2MB", 2_000_000), ("4096", 4_096), ("1GiB", 1 << 30)])
    func sizesTakeIECAndSISuffixes(size: String, bytes: Int) {
        #expect(ByteSize(argument: size)?.bytes == bytes, "\(size)")
    }

    @Test func sizesWithoutANumberOrWithAnUnknownSuffixAreRefused() {
        for size in ["KiB", "5XB", "-1K", "1e30", "lots"] {
            #expect(ByteSize(argument: size) == nil, "\(size)")
        }
    }

    @Test func helpForACommandStillWorks() async throws {
        let run = try await Self.haneke("help", "trim")
        #expect(run.status == 0)
        #expect(run.output.contains("USAGE: haneke trim"), "\(run.output)")
    }

    @Test func versionIsTheLibrarys() async throws {
        let run = try await Self.haneke("--version")
        #expect(run.status == 0)
        #expect(run.output == HanekeVersion.description + "\n")
        // This code is not a release: it says so, and which release it follows.
        #expect(run.output.hasPrefix("0.4.0-dev (unreleased; the latest release is 0.3.0)"))
        #expect(run.stderr.isEmpty)
    }

    /// Keys from a cache are anyone's: escaped and cut in every table and message, whole in JSON.
    @Test func keysAreEscapedAndCutForPeopleAndWholeInJSON() async throws {
        let directory = try TemporaryDirectory()
        let hostile = "line\nbreak \u{1B}[31mred\u{1B}[0m \u{7}bell"
        let huge = String(repeating: "k", count: 100_000)
        let folder = try await Self.makeStore(in: directory, keys: [hostile, huge])

        let table = try await Self.haneke("inspect", folder)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(!table.output.contains("\u{1B}") && !table.output.contains("\u{7}"), "\(table.output)")
        #expect(table.output.contains(#"line\nbreak \u{1b}[31mred\u{1b}[0m \u{7}bell"#), "\(table.output)")
        #expect(table.output.contains(String(repeating: "k", count: 200) + "… (100000 bytes)"))
        #expect(table.output.count < 2_000, "a key was echoed whole")

        for key in [hostile + "x", huge + "x"] {
            let missing = try await Self.haneke("get", folder, key)
            #expect(missing.status == 1)
            #expect(missing.stderr.split(separator: "\n").count == 1 && missing.stderr.count < 1_000, "\(missing.stderr)")
            #expect(!missing.stderr.contains("\u{1B}"))
        }

        struct Row: Decodable { var key: String }
        let json = try await Self.haneke("inspect", folder, "--json")
        #expect(Set(try JSONDecoder().decode([Row].self, from: json.stdout).map(\.key)) == [hostile, huge])
    }

    /// JSON for scripts: every field always there (`null` when absent), keys in a stable order.
    @Test func jsonOutputsHaveEveryFieldAndAStableOrder() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["a", "b"])
        func object(_ data: Data) throws -> [String: Any] { try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]) }

        let inspect = try await Self.haneke("inspect", folder, "--json")
        let rows = try #require(try JSONSerialization.jsonObject(with: inspect.stdout) as? [[String: Any]])
        for row in rows {
            #expect(Set(row.keys) == ["key", "file", "payloadSize", "storedSize", "allocatedSize", "created", "expires", "lastAccess"])
            #expect(row["expires"] is NSNull)
        }

        let stats = try await Self.haneke("stats", folder, "--json")
        #expect(stats.status == 0, "\(stats.stderr)")
        let summary = try object(stats.stdout)
        #expect(Set(summary.keys) == [
            "directory", "entries", "allocatedSize", "entryFilesAllocatedSize", "metadataAllocatedSize", "foldersAllocatedSize",
            "storedSize", "payloadSize", "lz4Frames", "uncompressedSize", "lz4Ratio", "expired", "oldest", "newest", "problems",
        ])
        #expect(summary["entries"] as? Int == 2 && summary["lz4Frames"] as? Int == 2 && summary["problems"] as? Int == 0)
        let keys = stats.output.split(separator: "\n").compactMap { $0.split(separator: "\"").dropFirst().first.map(String.init) }
        #expect(keys == keys.sorted(), "keys sorted: \(keys)")

        let clean = try object(try await Self.haneke("verify", folder, "--json").stdout)
        #expect(clean["remaining"] as? Int == 0 && clean["repair"] is NSNull && (clean["problems"] as? [Any])?.isEmpty == true)

        let shard = "\(folder)/\(try await Self.md5("a").prefix(2))"
        try Data("half".utf8).write(to: URL(fileURLWithPath: shard + "/.haneke-tmp.999999999.7"))
        try Data("someone's".utf8).write(to: URL(fileURLWithPath: shard + "/README"))
        let found = try await Self.haneke("verify", folder, "--json")
        #expect(found.status == 1)
        let problems = try #require(try object(found.stdout)["problems"] as? [[String: Any]])
        #expect(Set(problems.compactMap { $0["kind"] as? String }) == ["leftover", "foreign"])
        #expect(problems.allSatisfy { Set($0.keys) == ["kind", "path", "reason"] })

        let repaired = try await Self.haneke("verify", folder, "--json", "--repair")
        #expect(repaired.status == 1, "the foreign file remains")
        let report = try object(repaired.stdout)
        let repair = try #require(report["repair"] as? [String: Any])
        #expect((repair["removed"] as? [[String: Any]])?.compactMap { $0["kind"] as? String } == ["leftover"])
        let kept = try #require(repair["kept"] as? [[String: Any]])
        #expect(kept.count == 1 && kept.first?["kind"] as? String == "foreign" && kept.first?["keptBecause"] is String)
        #expect(report["remaining"] as? Int == 1)
    }

    /// Progress is for a person at a terminal: nothing reaches a pipe or a log file, and on a
    /// terminal it starts at once and is erased at the end.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a terminal"))
    func progressOnlyOnATerminal() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: (0..<5).map { "key-\($0)" })
        for arguments in [["inspect", folder], ["stats", folder], ["verify", folder], ["trim", folder, "--to", "1G"]] {
            let piped = try await Self.haneke(arguments)
            #expect(piped.status == 0, "\(arguments): \(piped.stderr)")
            #expect(piped.stderr.isEmpty && !piped.output.contains("\r"), "\(arguments): \(piped.stderr.debugDescription)")

            // script(1) runs the command on a pseudo-terminal and copies what it shows.
            let command = ([ChildProcess.binary("haneke")] + arguments).joined(separator: " ")
            let terminal = try await ChildProcess.run("/usr/bin/script", ["-qec", command, "/dev/null"])
            #expect(terminal.status == 0, "\(arguments): \(terminal.output)")
            #expect(terminal.output.hasPrefix("\r\u{1B}[K" + (arguments[0] == "trim" ? "opening" : "listing")), "\(arguments): \(terminal.output.debugDescription)")
            let quiet = try await ChildProcess.run("/usr/bin/script", ["-qec", command + " --quiet", "/dev/null"])
            #expect(!quiet.output.contains("\u{1B}[K"), "\(arguments): \(quiet.output.debugDescription)")
        }
    }

    @Test func trimEvictsTheLeastRecentlyUsed() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: (0..<10).map { "key-\($0)" })
        // Room for the store's marker and journal, the two blocks it keeps free for the journal,
        // and four entries of one block each.
        let target = try FileStore(directory: folder, configuration: .init(capacity: nil)).metadataSize + 2 * 4096 + 4 * 4096
        let run = try await Self.haneke("trim", folder, "--to", "\(target)")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.output.contains("10 entries"))
        let store = try FileStore(directory: folder, configuration: .init(capacity: nil))
        #expect(store.totalSize + store.metadataSize <= target)
        #expect(store.count == 4)
        // What is left are the most recently written entries.
        #expect(Set(store.keys()) == Set((10 - store.count..<10).map { "key-\($0)" }))
    }

    /// A frame whose header claims 4 GiB: `verify` and `stats` decode within the limit and agree
    /// that it is a problem; `stats` does not add the claim to its sizes.
    @Test func verifyAndStatsDecodeWithinTheLimitAndAgree() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["a", "b", "c"])
        // The first 64 bytes of `lz4 --content-size` of 4 GiB of zeros: a frame announcing 4 GiB.
        let claim = try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("CompressedStoreTests/Fixtures/claims-4GiB.lz4"))
        let store = try FileStore(directory: folder, configuration: .init(capacity: nil))
        try await store.setValue(claim, forKey: "claims 4 GiB")
        try store.flush()

        let verify = try await Self.haneke("verify", folder, "--quiet")
        #expect(verify.status == 1)
        #expect(verify.output.contains("1 problem") && !verify.output.contains("1 problems"), "\(verify.output)")
        #expect(verify.output.contains("decompression limit") || verify.output.contains("more than"), "\(verify.output)")
        let stats = try await Self.haneke("stats", folder)
        #expect(stats.status == 0)
        let problems = stats.output.split(separator: "\n").first { $0.hasPrefix("problems") }
        #expect(problems?.hasSuffix(" 1") == true || problems?.contains(" 1 ") == true, "\(stats.output)")
        #expect(!stats.output.contains("GiB"), "stats trusted the frame's claim: \(stats.output)")
    }

    @Test func statsShowsTheRatio() async throws {
        let directory = try TemporaryDirectory()
        let folder = try await Self.makeStore(in: directory, keys: ["a", "b"])
        let run = try await Self.haneke("stats", folder)
        #expect(run.status == 0)
        #expect(run.output.contains("LZ4 ratio"))
        #expect(run.output.contains("entries"))
    }

    @Test func helpDocumentsEveryCommand() async throws {
        let help = try await Self.haneke("--help")
        #expect(help.status == 0)
        for command in ["demo", "thumbnail", "inspect", "get", "verify", "trim", "stats"] {
            #expect(help.output.contains(command))
            let sub = try await Self.haneke("help", command)
            #expect(sub.status == 0)
            #expect(sub.output.contains("USAGE: haneke \(command)"))
        }
    }

    @Test func theDemoRunsAndPrintsItsTables() async throws {
        let directory = try TemporaryDirectory()
        let run = try await Self.haneke("demo", "--documents", "40", "--dir", directory.path)
        #expect(run.status == 0, "\(run.stderr)")
        for text in ["cold", "warm", "hot", "memory", "disk", "fetcher", "LZ4 frames", "haneke inspect"] {
            #expect(run.output.contains(text), "\(text)")
        }
        let folder = directory.appending("original")
        #expect(try await Self.haneke("verify", folder).status == 0)
        // A folder given with --dir is the user's: kept, and the hint names it; run from a build,
        // the hint is the form that works there.
        #expect(run.output.contains("swift run -c release haneke inspect \(folder)"), "\(run.output)")
    }

    /// Without --dir the demo's temporary folder is deleted at the end, unless --keep.
    @Test func theDemoDeletesItsTemporaryFolderUnlessKept() async throws {
        let temporary = try TemporaryDirectory()
        func demo(_ arguments: String...) async throws -> Run {
            try await ChildProcess.run("/usr/bin/env", ["TMPDIR=" + temporary.path, ChildProcess.binary("haneke"), "demo", "--documents", "20"] + arguments)
        }
        let deleted = try await demo()
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty, "the demo left its folder")
        #expect(deleted.output.contains("run `swift run -c release haneke demo --keep` to keep it"), "\(deleted.output)")
        #expect(deleted.output.contains("swift run -c release haneke inspect DIR/original"), "\(deleted.output)")

        let kept = try await demo("--keep")
        #expect(kept.status == 0, "\(kept.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: temporary.path)
        #expect(names.count == 1 && names.first?.hasPrefix("haneke-demo-") == true, "\(names)")
        let folder = temporary.appending((names.first ?? "") + "/original")
        #expect(kept.output.contains("swift run -c release haneke inspect \(folder)"), "\(kept.output)")
        #expect(try await Self.haneke("verify", folder, "--quiet").status == 0)
    }
}
