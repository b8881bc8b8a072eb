import ArgumentParser
import Foundation
import Haneke

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every file of a cache folder; with --repair, remove what is wrong.",
        discussion: """
        Checks each file's header, that its key hashes to its name, and that its payload is whole: \
        in a compressed folder (most payloads LZ4 frames, or --payloads lz4) every payload must be a \
        frame that decodes and matches its checksum. Also finds leftovers of crashed writers and \
        things that are not files. Reads each file once. --repair removes only what is the store's \
        to remove: damaged entry files, leftovers, links and FIFOs at entry names, and empty \
        folders there; files with names the store never makes are removed from its shard folders \
        only with --remove-foreign, and nothing else (a file at the top of the folder, anything \
        inside a folder the store did not make) ever is. Exits with status 1 when problems remain.

        --json prints one object, keys sorted, every field always there: directory, \
        filesExamined, valid (the valid entries), problems (each with kind, path and reason), \
        repair (null without --repair or without problems; else removed, a list of problems, and \
        kept, problems with keptBecause, why), remaining (the problems left: the status is 1 when \
        it is not 0).

        A folder that also holds an SQLite database (a format with a small-value threshold sends \
        small values there) has its rows checked too: each value against its checksum, each key \
        against its row's id (its MD5), and the file's structure by SQLite's quick_check. Each \
        damaged row is a line "damaged row: <database>: row <id> (key …): <reason>"; a damaged \
        structure "damaged database: <database>: <reason>". --repair deletes the damaged rows, and \
        removes the database files when SQLite cannot read them or their structure stays damaged \
        (those entries are lost, as a cache's may be; stop the processes using the store first). \
        In JSON, a database object (only for a folder with a database): path, rowsChecked, \
        valid, problems (each with kind — checksumMismatch, metadataChecksumMismatch, keyDoesNotMatchID, keyNotUTF8, \
        structure or unreadable —, id, key and reason; id and key null for the last two), repair \
        (null, or deletedRows and removedDatabase) and remaining; the top-level remaining counts \
        its problems too.
        """ + ExitStatus.help
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Flag(help: "Remove every damaged, misnamed or leftover file found.")
    var repair = false

    @Flag(help: "With --repair, also remove files in shard folders whose names the store never makes.")
    var removeForeign = false

    @OptionGroup var payloadOptions: PayloadOptions

    @Flag(help: "Print JSON (one object) for scripts.")
    var json = false

    @OptionGroup var progressOptions: ProgressOptions
    @OptionGroup var secretOptions: SecretOptions

    func validate() throws {
        if removeForeign, !repair {
            throw ValidationError("--remove-foreign only applies with --repair")
        }
    }

    func run() throws {
        secretOptions.apply()
        let folder = try requireStoreFolder(directory)
        let judge = PayloadJudge(payloadOptions)
        // Each part examined, then repaired, in the engines' order; a repair that keeps nothing
        // (the database's: it leaves it sound, or removes it) leaves no problem.
        var checked: [Report.Part] = []
        for engine in diskEngines {
            guard let part = try inspect(engine, in: folder, judge: judge, progress: progressOptions.line()) else { continue }
            let outcome = repair && !part.problems.isEmpty ? try engine.repair(part, removingForeignFiles: removeForeign) : nil
            checked.append(Report.Part(inspection: part, repair: outcome, remaining: outcome?.kept.count ?? part.problems.count))
        }
        guard let files = checked.first(where: { $0.inspection.partName == nil }) else {
            throw ToolError.problems("\(shown(folder)) has no part of its own")
        }
        let remaining = checked.reduce(0) { $0 + $1.remaining }
        if json {
            try printJSON(Report(folder, files, named: checked.filter { $0.inspection.partName != nil }, remaining: remaining))
        } else {
            for part in checked {
                if let name = part.inspection.partName { Self.printPart(part, named: name) } else { Self.printFolder(part) }
            }
        }
        if remaining > 0 { throw ExitStatus.problems }
    }

    /// The folder's own part: its problems, its summary line and what a repair did.
    static func printFolder(_ part: Report.Part) {
        let inspection = part.inspection
        for problem in inspection.problems {
            print(problem.line(itemName: inspection.itemName))
        }
        print("\(counted(inspection.examined, "file", "files")) checked, \(inspection.entries.count) valid, \(counted(inspection.problems.count, "problem", "problems"))")
        if let outcome = part.repair {
            print("repaired: removed \(counted(outcome.removed.count, "path", "paths"))")
            if !outcome.kept.isEmpty { print("kept \(counted(outcome.kept.count, "path", "paths")):") }
            for kept in outcome.kept {
                print("  \(shown(kept.problem.path)): \(kept.reason)")
            }
        }
    }

    /// A named part ("the database"): its problems, its summary line and what a repair did.
    static func printPart(_ part: Report.Part, named name: String) {
        let inspection = part.inspection
        for problem in inspection.problems {
            print(problem.line(itemName: inspection.itemName))
        }
        print("\(name): \(counted(inspection.examined, inspection.itemName, inspection.itemName + "s")) checked, \(inspection.entries.count) valid, \(counted(inspection.problems.count, "problem", "problems"))")
        if let outcome = part.repair {
            print("repaired \(name): deleted \(counted(outcome.removed.count, inspection.itemName, inspection.itemName + "s"))\(outcome.removedFiles ? ", removed \(name) files" : "")")
        }
    }

    /// What `verify --json` prints: the folder's own part at the top, each named part as an
    /// object under its key (`database`, only for a folder that has one).
    struct Report: Encodable {
        /// One part as examined and repaired.
        struct Part {
            /// What the examination found.
            var inspection: DiskInspection
            /// What `--repair` did, or `nil`.
            var repair: DiskInspection.Repair?
            /// The part's problems left.
            var remaining: Int
        }

        /// One problem of the folder's own part.
        struct Problem: Encodable {
            /// Its kind: damaged, wrongName, notAFile, leftover or foreign.
            var kind: String
            /// The path of the offending file or folder.
            var path: String
            /// Why it is a problem.
            var reason: String

            /// A problem as JSON.
            init(_ problem: DiskInspection.Problem) {
                kind = problem.kind
                path = problem.path
                reason = problem.reason
            }
        }

        /// A problem a repair left alone.
        struct Kept: Encodable {
            /// Its kind: damaged, wrongName, notAFile, leftover or foreign.
            var kind: String
            /// The path of the offending file or folder.
            var path: String
            /// Why it is a problem.
            var reason: String
            /// Why the repair kept it.
            var keptBecause: String
        }

        /// What a repair did.
        struct Repair: Encodable {
            /// The problems whose file was removed.
            var removed: [Problem]
            /// The problems left as they are.
            var kept: [Kept]
        }

        /// The store's folder.
        var directory: String
        /// The entry files examined.
        var filesExamined: Int
        /// The valid entries.
        var valid: Int
        /// Every problem found.
        var problems: [Problem]
        /// What `--repair` did, or `null`.
        var repair: OrNull<Repair>
        /// The problems left after the run, in every part.
        var remaining: Int
        /// The named parts (left out of the JSON when there are none).
        var named: [NamedPart]

        /// The report of a run.
        init(_ folder: String, _ files: Part, named: [Part], remaining: Int) {
            directory = folder
            filesExamined = files.inspection.examined
            valid = files.inspection.entries.count
            problems = files.inspection.problems.map { Problem($0) }
            repair = OrNull(files.repair.map { outcome in
                Repair(
                    removed: outcome.removed.map { Problem($0) },
                    kept: outcome.kept.map { Kept(kind: $0.problem.kind, path: $0.problem.path, reason: $0.problem.reason, keptBecause: $0.reason) }
                )
            })
            self.remaining = remaining
            self.named = named.map(NamedPart.init)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: JSONKey.self)
            try container.encode(directory, forKey: "directory")
            try container.encode(filesExamined, forKey: "filesExamined")
            try container.encode(valid, forKey: "valid")
            try container.encode(problems, forKey: "problems")
            try container.encode(repair, forKey: "repair")
            try container.encode(remaining, forKey: "remaining")
            for part in named {
                try container.encode(part, forKey: JSONKey(part.part.inspection.jsonKey))
            }
        }
    }

    /// What `verify --json` prints of a named part (the database): path, `<item>sChecked`
    /// (rowsChecked), valid, problems (kind, id, key, reason; id and key null for a problem of
    /// the whole part), repair (null, or `deleted<Item>s` and `removed<Key>`: deletedRows and
    /// removedDatabase) and remaining.
    struct NamedPart: Encodable {
        /// One problem of the part.
        struct Problem: Encodable {
            /// checksumMismatch, metadataChecksumMismatch, keyDoesNotMatchID, keyNotUTF8, structure or unreadable.
            var kind: String
            /// The damaged row's id, or `null`.
            var id: OrNull<Int64>
            /// The damaged row's key, or `null`.
            var key: OrNull<String>
            /// Why it is a problem.
            var reason: String
        }

        /// The part as examined and repaired.
        var part: Report.Part

        func encode(to encoder: any Encoder) throws {
            let inspection = part.inspection
            let item = inspection.itemName.capitalizedFirst
            var container = encoder.container(keyedBy: JSONKey.self)
            try container.encode(inspection.path, forKey: "path")
            try container.encode(inspection.examined, forKey: JSONKey("\(inspection.itemName)sChecked"))
            try container.encode(inspection.entries.count, forKey: "valid")
            try container.encode(inspection.problems.map { Problem(kind: $0.kind, id: OrNull($0.id), key: OrNull($0.key.map(printedKey)), reason: $0.reason) }, forKey: "problems")
            if let outcome = part.repair {
                var repair = container.nestedContainer(keyedBy: JSONKey.self, forKey: "repair")
                try repair.encode(outcome.removed.count, forKey: JSONKey("deleted\(item)s"))
                try repair.encode(outcome.removedFiles, forKey: JSONKey("removed\(inspection.jsonKey.capitalizedFirst)"))
            } else {
                try container.encodeNil(forKey: "repair")
            }
            try container.encode(part.remaining, forKey: "remaining")
        }
    }
}
