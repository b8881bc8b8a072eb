import ArgumentParser
import Foundation
import Haneke
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// An error printed as one line on stderr, with a non-zero exit status.
struct ToolError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Checks that `directory` is a store's folder — it holds the marker every FileStore writes — with
/// a hint when it is a cache's folder instead. Every command checks this first, so none reads or
/// changes a folder that a store did not make (the FileStore calls refuse such a folder too).
func requireStoreFolder(_ directory: String) throws -> String {
    let manager = FileManager.default
    var isDirectory: ObjCBool = false
    guard manager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw ToolError("\(directory) is not a folder")
    }
    if isFile(directory + "/" + FileStore.markerFileName) { return directory }
    let names = (try? manager.contentsOfDirectory(atPath: directory)) ?? []
    let formats = names.filter { isFile(directory + "/" + $0 + "/" + FileStore.markerFileName) }.sorted()
    if !formats.isEmpty {
        throw ToolError("\(directory) is a cache's folder; pass one of its formats: \(formats.map { directory + "/" + $0 }.joined(separator: ", "))")
    }
    throw ToolError("\(directory) is not a Haneke store folder (it has no \(FileStore.markerFileName)); refusing to read or change it")
}

/// Whether a regular file (not a link) is at `path`.
private func isFile(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
}

/// A logger for the stores the tool opens: failures reach the user as the command's one-line
/// error, not as a log line per file.
let quietLogger: Logger = {
    var logger = Logger(label: "haneke")
    logger.logLevel = .critical
    return logger
}()

/// A size such as `512`, `64K`, `100M`, `1.5G` (powers of 1024).
struct ByteSize: ExpressibleByArgument, CustomStringConvertible {
    var bytes: Int

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).uppercased()
        let units: [(String, Int)] = [("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10),
                                      ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            guard let number = Double(text.dropLast(suffix.count)), number >= 0, number * Double(factor) < 9e18 else { return nil }
            bytes = Int(number * Double(factor))
            return
        }
        guard let number = Int(text), number >= 0 else { return nil }
        bytes = number
    }

    init(bytes: Int) { self.bytes = bytes }

    var description: String { Self.format(bytes) }

    static func format(_ bytes: Int) -> String {
        switch bytes {
        case (1 << 30)...: String(format: "%.2f GiB", Double(bytes) / Double(1 << 30))
        case (1 << 20)...: String(format: "%.2f MiB", Double(bytes) / Double(1 << 20))
        case (1 << 10)...: String(format: "%.1f KiB", Double(bytes) / Double(1 << 10))
        default: "\(bytes) B"
        }
    }
}

/// Prints `rows` as a table with a header, columns padded to their widest cell.
func printTable(_ header: [String], _ rows: [[String]], rightAligned: Set<Int> = []) {
    let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { column, cell in
            let padding = String(repeating: " ", count: widths[column] - cell.count)
            return rightAligned.contains(column) ? padding + cell : cell + padding
        }.joined(separator: "  ")
    }
    print(line(header))
    print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
    for row in rows { print(line(row)) }
}

extension Date {
    /// ISO 8601 in UTC, to the second.
    var iso8601: String {
        formatted(.iso8601)
    }
}

/// Writes a line to stderr (progress, warnings), leaving stdout to results.
func printError(_ text: String, terminator: String = "\n") {
    try? FileHandle.standardError.write(contentsOf: Data((text + terminator).utf8))
}

/// A key as it appears in messages: quoted, with newlines and other control characters escaped,
/// so that an error stays on one line.
func quoted(_ key: String) -> String {
    key.debugDescription
}
