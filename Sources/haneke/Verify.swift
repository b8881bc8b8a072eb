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
        things that are not files. --repair removes only what is the store's to remove: damaged \
        entry files, leftovers, links and FIFOs at entry names, and empty folders there; files with \
        names the store never makes are removed from its shard folders only with --remove-foreign, \
        and nothing else (a file at the top of the folder, anything inside a folder the store did \
        not make) ever is. Exits with status 1 when problems remain.
        """
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Flag(help: "Remove every damaged, misnamed or leftover file found.")
    var repair = false

    @Flag(help: "With --repair, also remove files in shard folders whose names the store never makes.")
    var removeForeign = false

    @OptionGroup var payloadOptions: PayloadOptions

    @Flag(help: "Do not show progress on stderr.")
    var quiet = false

    func validate() throws {
        if removeForeign, !repair {
            throw ValidationError("--remove-foreign only applies with --repair")
        }
    }

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let showProgress = !quiet
        let expectFrames = try PayloadCheck.expectFrames(payloadOptions.payloads, in: folder)
        let limit = payloadOptions.decompressionLimit.bytes
        let inspection = try FileStore.inspect(
            directory: folder,
            validatingPayloads: { _, payload in
                if case .damaged(let reason) = PayloadCheck.check(payload, expectFrames: expectFrames, limit: limit) { return reason }
                return nil
            },
            progress: { examined, total in
                if showProgress, total >= 5_000 { printError("\rchecked \(examined) of \(total) files", terminator: "") }
            }
        )
        if showProgress, inspection.filesExamined >= 5_000 { printError("") }
        for problem in inspection.problems {
            print(problem)
        }
        print("\(inspection.filesExamined) files checked, \(inspection.entries.count) valid, \(inspection.problems.count) problem(s)")
        guard !inspection.problems.isEmpty else { return }
        guard repair else { throw ExitCode(1) }
        let outcome = try FileStore.repair(inspection.problems, removingForeignFiles: removeForeign)
        print("repaired: removed \(outcome.removed.count) path(s)")
        guard !outcome.kept.isEmpty else { return }
        print("kept \(outcome.kept.count) path(s):")
        for kept in outcome.kept {
            print("  \(kept.problem.path): \(kept.reason)")
        }
        throw ExitCode(1)
    }
}
