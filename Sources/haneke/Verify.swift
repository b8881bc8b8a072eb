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
        valid, problems (each with kind — checksumMismatch, keyDoesNotMatchID, keyNotUTF8, \
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

    func validate() throws {
        if removeForeign, !repair {
            throw ValidationError("--remove-foreign only applies with --repair")
        }
    }

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let inspection = try inspect(folder, judge: PayloadJudge(payloadOptions), progress: progressOptions.line())
        let outcome = repair && !inspection.problems.isEmpty
            ? try FileStore.repair(inspection.problems, removingForeignFiles: removeForeign)
            : nil
        let database = try inspectDatabase(folder, progress: progressOptions.line())
        let databaseRepair = repair && (database?.problemCount ?? 0) > 0 ? try SQLiteStore.repair(directory: folder) : nil
        // A repair leaves the database sound, or removes it.
        let databaseRemaining = databaseRepair == nil ? database?.problemCount ?? 0 : 0
        let filesRemaining: Int = outcome?.kept.count ?? inspection.problems.count
        let remaining = filesRemaining + databaseRemaining
        if json {
            var report = Report(folder, inspection, outcome, remaining: remaining)
            report.database = database.map { DatabaseReport($0, databaseRepair, remaining: databaseRemaining) }
            try printJSON(report)
        } else {
            for problem in inspection.problems {
                print(Self.line(problem))
            }
            print("\(inspection.filesExamined) files checked, \(inspection.entries.count) valid, \(inspection.problems.count) problem(s)")
            if let outcome {
                print("repaired: removed \(outcome.removed.count) path(s)")
                if !outcome.kept.isEmpty { print("kept \(outcome.kept.count) path(s):") }
                for kept in outcome.kept {
                    print("  \(shown(kept.problem.path)): \(kept.reason)")
                }
            }
            if let database { Self.printDatabase(database, databaseRepair) }
        }
        if remaining > 0 { throw ExitStatus.problems }
    }

    /// The database's problems, its summary line and what a repair did.
    static func printDatabase(_ database: SQLiteStore.Inspection, _ repair: SQLiteStore.Repair?) {
        for row in database.damagedRows {
            print("damaged row: \(shown(database.path)): \(row.shownRow): \(row.explanation)")
        }
        if let unreadable = database.unreadable { print("damaged database: \(shown(database.path)): \(unreadable)") }
        if let structure = database.structuralProblems { print("damaged database: \(shown(database.path)): \(structure)") }
        let checked = database.entries.count + database.damagedRows.count
        print("the database: \(checked) rows checked, \(database.entries.count) valid, \(database.problemCount) problem(s)")
        if let repair {
            print("repaired the database: deleted \(repair.deletedRows.count) row(s)\(repair.removedDatabase ? ", removed the database files" : "")")
        }
    }

    /// What `verify --json` prints of the folder's database.
    struct DatabaseReport: Encodable {
        /// One problem of the database.
        struct Problem: Encodable {
            /// checksumMismatch, keyDoesNotMatchID, keyNotUTF8, structure or unreadable.
            var kind: String
            /// The damaged row's id, or `null`.
            var id: OrNull<Int64>
            /// The damaged row's key, or `null`.
            var key: OrNull<String>
            /// Why it is a problem.
            var reason: String
        }

        /// What a repair did.
        struct Repair: Encodable {
            /// The damaged rows deleted.
            var deletedRows: Int
            /// Whether the database files were removed.
            var removedDatabase: Bool
        }

        /// The database's path.
        var path: String
        /// The rows read.
        var rowsChecked: Int
        /// The valid rows.
        var valid: Int
        /// Every problem found.
        var problems: [Problem]
        /// What `--repair` did, or `null`.
        var repair: OrNull<Repair>
        /// The problems left.
        var remaining: Int

        /// The report of the database.
        init(_ database: SQLiteStore.Inspection, _ outcome: SQLiteStore.Repair?, remaining: Int) {
            path = database.path
            rowsChecked = database.entries.count + database.damagedRows.count
            valid = database.entries.count
            problems = database.damagedRows.map { Problem(kind: $0.reason.rawValue, id: OrNull($0.id), key: OrNull($0.key), reason: $0.explanation) }
            if let unreadable = database.unreadable { problems.append(Problem(kind: "unreadable", id: OrNull(nil), key: OrNull(nil), reason: unreadable)) }
            if let structure = database.structuralProblems { problems.append(Problem(kind: "structure", id: OrNull(nil), key: OrNull(nil), reason: structure)) }
            repair = OrNull(outcome.map { Repair(deletedRows: $0.deletedRows.count, removedDatabase: $0.removedDatabase) })
            self.remaining = remaining
        }
    }

    /// A problem on one line, its path escaped (a foreign file's name is anyone's; the reason
    /// shows a key already escaped and cut).
    static func line(_ problem: FileStore.Problem) -> String {
        "\(problem.kind.rawValue): \(shown(problem.path)): \(problem.reason)"
    }

    /// What `verify --json` prints.
    struct Report: Encodable {
        /// One problem.
        struct Problem: Encodable {
            /// Its kind: damaged, wrongName, notAFile, leftover or foreign.
            var kind: String
            /// The path of the offending file or folder.
            var path: String
            /// Why it is a problem.
            var reason: String

            /// A problem as JSON.
            init(_ problem: FileStore.Problem) {
                kind = problem.kind.rawValue
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
        /// The problems left after the run.
        var remaining: Int
        /// The folder's database, when it has one (left out of the JSON otherwise).
        var database: DatabaseReport?

        /// The report of a run.
        init(_ folder: String, _ inspection: FileStore.Inspection, _ outcome: FileStore.Repair?, remaining: Int) {
            directory = folder
            filesExamined = inspection.filesExamined
            valid = inspection.entries.count
            problems = inspection.problems.map { Problem($0) }
            repair = OrNull(outcome.map { outcome in
                Repair(
                    removed: outcome.removed.map { Problem($0) },
                    kept: outcome.kept.map { Kept(kind: $0.problem.kind.rawValue, path: $0.problem.path, reason: $0.problem.reason, keptBecause: $0.reason) }
                )
            })
            self.remaining = remaining
        }
    }
}
