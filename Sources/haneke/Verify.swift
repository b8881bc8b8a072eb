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

    enum Payloads: String, ExpressibleByArgument, CaseIterable {
        case auto, lz4, raw
    }

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Flag(help: "Remove every damaged, misnamed or leftover file found.")
    var repair = false

    @Flag(help: "With --repair, also remove files in shard folders whose names the store never makes.")
    var removeForeign = false

    @Option(help: "What the payloads are: lz4 frames, raw bytes, or auto (decided by the majority).")
    var payloads: Payloads = .auto

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
        let expectFrames: Bool
        switch payloads {
        case .lz4: expectFrames = true
        case .raw: expectFrames = false
        case .auto: expectFrames = try Self.mostPayloadsAreFrames(in: folder)
        }
        let inspection = try FileStore.inspect(
            directory: folder,
            validatingPayloads: { _, payload in
                guard expectFrames else { return nil }
                guard LZ4Frame.looksLikeFrame(payload) else { return "the payload is not an LZ4 frame (its magic number is damaged)" }
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

    /// Whether most entries of the folder hold LZ4 frames (a compressed store's folder).
    static func mostPayloadsAreFrames(in folder: String) throws -> Bool {
        var frames = 0
        var total = 0
        _ = try FileStore.inspect(directory: folder, validatingPayloads: { _, payload in
            total += 1
            if LZ4Frame.looksLikeFrame(payload) { frames += 1 }
            return nil
        })
        return total > 0 && frames * 2 > total
    }
}
