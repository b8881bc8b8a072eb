import ArgumentParser
import Foundation
import Haneke

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every file of a cache folder; with --repair, remove what is wrong.",
        discussion: """
        Checks each file's header, that its key hashes to its name, and that an LZ4 payload decodes \
        with its checksum; also finds leftovers of crashed writers and things that are not files. \
        Exits with status 1 when problems remain.
        """
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Flag(help: "Remove every damaged, misnamed or foreign file found.")
    var repair = false

    @Flag(help: "Do not show progress on stderr.")
    var quiet = false

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let showProgress = !quiet
        let inspection = try FileStore.inspect(
            directory: folder,
            validatingPayloads: { _, payload in
                guard LZ4Frame.looksLikeFrame(payload) else { return nil }
                do {
                    _ = try LZ4Frame.decompress(payload, limit: Int.max)
                    return nil
                } catch let error as StoreError {
                    return error.message
                } catch {
                    return "\(error)"
                }
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
        if repair {
            let removed = try FileStore.repair(inspection.problems)
            print("repaired: removed \(removed) path(s)")
        } else {
            throw ExitCode(1)
        }
    }
}
