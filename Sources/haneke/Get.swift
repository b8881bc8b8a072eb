import ArgumentParser
import Foundation
import Haneke

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the value stored for a key to stdout, decompressing an LZ4 frame.",
        discussion: """
        Reads the file directly: nothing is changed, and an expired entry counts as missing. A key \
        without a file is looked up in the folder's SQLite database, when it has one (a format \
        with a small-value threshold keeps small values there), read-only; a damaged row is an \
        error (exit status 1).
        """ + ExitStatus.help
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Argument(help: "The key.")
    var key: String

    @Flag(help: "Write the payload as stored, without decompressing it.")
    var raw = false

    @Option(parsing: .unconditional, help: ArgumentHelp("The most bytes a value may decompress to.", valueName: "size"))
    var decompressionLimit = ByteSize(bytes: 1 << 30)

    func run() throws {
        let folder = try requireStoreFolder(directory)
        // The first engine that holds the key (a key is in one of them).
        var found: Data?
        for engine in diskEngines where found == nil {
            found = try engine.storedValue(forKey: key, inFolder: folder)
        }
        guard let payload = found else {
            throw ToolError.problems("no entry for key \(shown(key, quoted: true)) in \(shown(folder))")
        }
        let value = !raw && LZ4Frame.looksLikeFrame(payload)
            ? try LZ4Frame.decompress(payload, limit: decompressionLimit.bytes)
            : payload
        do {
            try FileHandle.standardOutput.write(contentsOf: value)
        } catch {
            throw ToolError.io("could not write the value to stdout", error)
        }
    }
}
