import ArgumentParser
import Foundation
import Haneke

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a cache folder: entries, sizes, LZ4 ratio, expired entries, problems.",
        discussion: "\"on disk\" is the blocks the files take, as du counts them (what the capacity bounds); \"in files\" is their lengths."
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @OptionGroup var payloadOptions: PayloadOptions

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let now = Date()
        let expectFrames = try PayloadCheck.expectFrames(payloadOptions.payloads, in: folder)
        let limit = payloadOptions.decompressionLimit.bytes
        var frames = 0
        var framed = 0
        var unframed = 0
        var content = 0
        // One walk: the payloads come with the entries, each decoded within the limit, never sized
        // by what its frame claims; damage counts among the problems exactly as `verify` finds it.
        let inspection = try FileStore.inspect(directory: folder, validatingPayloads: { entry, payload in
            switch PayloadCheck.check(payload, expectFrames: expectFrames, limit: limit) {
            case .damaged(let reason):
                return reason
            case .frame(let contentSize):
                guard (entry.expires ?? .distantFuture) > now else { return nil }   // expired: not a value
                frames += 1
                framed += payload.count
                content += contentSize
            case .raw:
                guard (entry.expires ?? .distantFuture) > now else { return nil }
                unframed += payload.count
            }
            return nil
        })
        let entries = inspection.entries
        let allocated = entries.reduce(0) { $0 + $1.allocatedSize }
        let rows: [[String]] = [
            ["entries", "\(entries.count)"],
            ["on disk (du)", ByteSize.format(allocated + inspection.metadataSize + inspection.foldersSize)],
            ["  entry files", ByteSize.format(allocated)],
            ["  marker and journal", ByteSize.format(inspection.metadataSize)],
            ["  folders", ByteSize.format(inspection.foldersSize)],
            ["in files", ByteSize.format(entries.reduce(0) { $0 + $1.storedSize })],
            ["payloads", ByteSize.format(entries.reduce(0) { $0 + $1.payloadSize })],
            ["LZ4 frames", "\(frames)"],
            ["values before compression", ByteSize.format(content + unframed)],
            ["LZ4 ratio", framed == 0 ? "—" : String(format: "%.2f", Double(content) / Double(framed))],
            ["expired", "\(entries.filter { ($0.expires ?? .distantFuture) <= now }.count)"],
            ["oldest", entries.map(\.created).min()?.iso8601 ?? "—"],
            ["newest", entries.map(\.created).max()?.iso8601 ?? "—"],
            ["problems", "\(inspection.problems.count)"],
        ]
        printTable(["", folder], rows)
    }
}
