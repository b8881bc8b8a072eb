import ArgumentParser
import Foundation
import Haneke
import Logging
import HanekeProtocols
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Makes sure `folder` is `command`'s to use: a folder that does not exist yet (made `0700`), an
/// empty one, or one that command marked before with the file `marker`, which is written (`0600`)
/// to mark it. Anything else is refused, untouched, with a usage error ending in `refusal`.
func claimFolder(_ folder: String, marker: String, command: String, refusal: String, markerText: String) throws {
    let manager = FileManager.default
    var isDirectory: ObjCBool = false
    if manager.fileExists(atPath: folder, isDirectory: &isDirectory) {
        guard isDirectory.boolValue else { throw ToolError.usage("\(shown(folder)) is not a folder") }
        let names: [String]
        do { names = try manager.contentsOfDirectory(atPath: folder) } catch { throw ToolError.io("could not list \(shown(folder))", error) }
        if names.contains(marker) { return }
        guard names.isEmpty else {
            throw ToolError.usage("\(shown(folder)) is not empty and is not a folder `\(command)` made; refusing to use it\(refusal): pass a new or empty folder")
        }
    } else {
        do {
            try manager.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ToolError.io("could not create \(shown(folder))", error)
        }
    }
    guard manager.createFile(atPath: folder + "/" + marker, contents: Data(markerText.utf8), attributes: [.posixPermissions: 0o600]) else {
        throw ToolError.io("could not write \(shown(folder + "/" + marker))", POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO))
    }
}

/// Claims `root` (`claim`, on the I/O executor), runs `body`, then removes `root` when `deleting`,
/// whatever `body` did. `body`'s error comes first; a folder that could not be removed is the error
/// of a run that otherwise went well (`what` names the folder in that message).
func withClaimedFolder<T>(
    _ root: String,
    deleting: Bool,
    what: String,
    claim: @escaping @Sendable (String) throws -> Void,
    _ body: () async throws -> T
) async throws -> T {
    let outcome: Result<T, any Error>
    do {
        try await IOExecutor.shared.run { try claim(root) }
        outcome = .success(try await body())
    } catch {
        outcome = .failure(error)
    }
    if deleting {
        do {
            try await IOExecutor.shared.run { try FileManager.default.removeItem(atPath: root) }
        } catch {
            _ = try outcome.get()
            throw ToolError.io("could not delete \(what) \(shown(root))", error)
        }
    }
    return try outcome.get()
}

/// Checks that `directory` is a store's folder — it holds the marker every FileStore writes — with
/// a hint when it is a cache's folder instead. Every command checks this first, so none reads or
/// changes a folder that a store did not make (the FileStore calls refuse such a folder too).
func requireStoreFolder(_ directory: String) throws -> String {
    var info = stat()
    guard stat(directory, &info) == 0 else {
        // A folder the user may not reach is a permission problem (exit status 3), not a mistake.
        if errno == EACCES || errno == EPERM { throw permissionProblem(directory, reaching: true) }
        throw ToolError.usage("\(shown(directory)) is not a folder")
    }
    guard info.st_mode & S_IFMT == S_IFDIR else { throw ToolError.usage("\(shown(directory)) is not a folder") }
    var marker = stat()
    if lstat(directory + "/" + FileStore.markerFileName, &marker) == 0 {
        if marker.st_mode & S_IFMT == S_IFREG { return directory }
    } else if errno == EACCES || errno == EPERM {
        throw permissionProblem(directory, reaching: false)
    }
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
        if access(directory, R_OK | X_OK) != 0 { throw permissionProblem(directory, reaching: false) }
        throw ToolError.usage("\(shown(directory)) is not a Haneke store folder (it has no \(FileStore.markerFileName)); refusing to read or change it")
    }
    let formats = names.filter { isFile(directory + "/" + $0 + "/" + FileStore.markerFileName) }.sorted()
    if !formats.isEmpty {
        throw ToolError.usage("\(shown(directory)) is a cache's folder; pass one of its formats: \(formats.map { shown(directory + "/" + $0) }.joined(separator: ", "))")
    }
    throw ToolError.usage("\(shown(directory)) is not a Haneke store folder (it has no \(FileStore.markerFileName)); refusing to read or change it")
}

/// The error of a folder the user may not read (or reach, through a parent it may not search):
/// exit status 3, with the system's reason (`errno` as the failed call left it, else `EACCES`).
private func permissionProblem(_ directory: String, reaching: Bool) -> ToolError {
    let code = POSIXErrorCode(rawValue: errno).flatMap { $0 == .EPERM || $0 == .EACCES ? $0 : nil } ?? .EACCES
    return ToolError.io("\(reaching ? "Could not reach" : "Could not read") \(shown(directory))", POSIXError(code))
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

/// A size such as `512`, `64K`, `100M`, `1.5G`, `100KiB` (powers of 1024, as `du -h` prints them)
/// or `100KB`, `2GB` (SI's powers of 1000); case does not matter.
struct ByteSize: ExpressibleByArgument, CustomStringConvertible {
    var bytes: Int

    /// What `--help` says of sizes.
    static let syntax = "bytes, or a number with K, M, G or T or KiB, MiB, GiB or TiB (powers of 1024), or KB, MB, GB or TB (powers of 1000)"

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).uppercased()
        let units: [(String, Int)] = [
            ("TIB", 1 << 40), ("GIB", 1 << 30), ("MIB", 1 << 20), ("KIB", 1 << 10),
            ("TB", 1_000_000_000_000), ("GB", 1_000_000_000), ("MB", 1_000_000), ("KB", 1_000),
            ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1),
        ]
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

/// Text from a cache — a key, a file name — as human-readable output shows it, on one line and
/// harmless to a terminal: newlines, tabs, backslashes, control characters (escape sequences
/// included), bidirectional overrides and line separators escaped Swift-style (`\n`, `\u{1b}`);
/// with `quoted`, inside double quotes (`"` escaped). Text longer than `limit` characters is cut
/// with an ellipsis and its length in bytes, so that a 100 KB key is never echoed whole. JSON
/// output carries keys whole instead, escaped by JSON.
/// - Parameters:
///   - text: The key or name.
///   - quoted: Whether to put it in double quotes, as messages do.
///   - limit: The most characters shown (Unicode scalars, before escaping); 200 by default.
/// - Returns: The text to print.
func shown(_ text: String, quoted: Bool = false, limit: Int = 200) -> String {
    var result = quoted ? "\"" : ""
    for (index, scalar) in text.unicodeScalars.enumerated() {
        if index == limit {
            result += "…\(quoted ? "\"" : "") (\(text.utf8.count) bytes)"
            return result
        }
        switch scalar {
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case "\\": result += "\\\\"
        case "\"" where quoted: result += "\\\""
        case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
            || scalar.value == 0x2028 || scalar.value == 0x2029:
            result += "\\u{\(String(scalar.value, radix: 16))}"
        default:
            result.unicodeScalars.append(scalar)
        }
    }
    return result + (quoted ? "\"" : "")
}

/// Prints `value` as JSON on stdout: pretty, keys sorted (a stable order), dates in ISO 8601,
/// slashes unescaped; strings whole, with JSON's escapes.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// An optional value in JSON output: `null` when absent, so that every field is always there
/// (the synthesized encoding leaves a `nil` out).
struct OrNull<Wrapped: Encodable>: Encodable {
    /// The value, or `nil` for `null`.
    var value: Wrapped?

    /// Wraps `value`.
    init(_ value: Wrapped?) { self.value = value }

    /// Encodes the value, or `null`.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value { try container.encode(value) } else { try container.encodeNil() }
    }
}

/// The option that turns progress off, shared by the commands that show it.
/// Whether keys are printed with their secrets (`--show-secrets`): by default a key that is a URL
/// shows its user info and the values of its sensitive query items (`token`, `signature`, `code`,
/// `X-Goog-Signature`, …) as `***`, as the library's logs and errors do.
let secretsShown = Atomic<Bool>(false)

/// `key` as the tool prints it: without its secrets unless `--show-secrets`, then escaped and cut
/// by ``shown(_:quoted:limit:)``.
func shownKey(_ key: String, quoted: Bool = false) -> String {
    shown(printedKey(key), quoted: quoted)
}

/// `key` without its secrets unless `--show-secrets` (JSON output: escaped by JSON, not cut).
func printedKey(_ key: String) -> String {
    secretsShown.load(ordering: .relaxed) ? key : Redaction.redactingURL(key)
}

/// `--show-secrets`, for the commands that print keys.
struct SecretOptions: ParsableArguments {
    @Flag(help: "Print keys whole, with the values of their tokens, signatures and passwords (shown as *** by default).")
    var showSecrets = false

    @Option(
        name: .customLong("sensitive-query-item"),
        help: ArgumentHelp(
            "Also hide the value of the query item NAME in the keys printed, beside the common names of tokens, signatures and passwords (repeatable).",
            valueName: "NAME"
        )
    )
    var sensitiveQueryItems: [String] = []

    /// Applies the choice to every key printed from now on.
    func apply() {
        secretsShown.store(showSecrets, ordering: .relaxed)
        if !sensitiveQueryItems.isEmpty { SensitiveQueryItems.current.formUnion(sensitiveQueryItems) }
    }
}

struct ProgressOptions: ParsableArguments {
    @Flag(help: "Do not show progress on stderr (shown only when stderr is a terminal).")
    var quiet = false

    /// The status line these options ask for.
    func line() -> ProgressLine { ProgressLine(enabled: !quiet && isatty(STDERR_FILENO) == 1) }
}

/// A status line on stderr for a person watching a long command: shown only when stderr is a
/// terminal (never a `\r` into a log file or a pipe), rewritten in place at most ten times a
/// second, and erased when the work ends. Used on one thread.
final class ProgressLine {
    private let enabled: Bool
    private var shownAt: ContinuousClock.Instant?

    /// A line, shown only when `enabled`.
    init(enabled: Bool) { self.enabled = enabled }

    /// Replaces the line with `text`, unless the last one is under 0.1 s old and `now` is false.
    func show(_ text: String, now: Bool = false) {
        guard enabled else { return }
        let time = ContinuousClock.now
        if !now, let shownAt, time - shownAt < .milliseconds(100) { return }
        shownAt = time
        printError("\r\u{1B}[K" + text, terminator: "")
    }

    /// Erases the line, if one is shown.
    func end() {
        guard enabled, shownAt != nil else { return }
        shownAt = nil
        printError("\r\u{1B}[K", terminator: "")
    }
}

/// How the user runs this tool, for hints: `haneke` once installed, `swift run -c release haneke`
/// when the running executable is a build inside a `.build/` folder.
var toolInvocation: String {
    let executable = Bundle.main.executableURL?.resolvingSymlinksInPath().path ?? CommandLine.arguments[0]
    return executable.contains("/.build/") ? "swift run -c release haneke" : "haneke"
}

/// `count` and the noun, singular for one: `1 entry`, `2 entries`.
func counted(_ count: Int, _ singular: String, _ plural: String) -> String {
    "\(count) \(count == 1 ? singular : plural)"
}
