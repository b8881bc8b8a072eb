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
        let remaining = outcome.map(\.kept.count) ?? inspection.problems.count
        if json {
            try printJSON(Report(folder, inspection, outcome, remaining: remaining))
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
        }
        if remaining > 0 { throw ExitStatus.problems }
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
