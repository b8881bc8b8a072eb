import ArgumentParser
import Foundation
import Haneke

#if canImport(Glibc)
import Glibc
#endif

/// The exit statuses of every command, in one place: thrown to end a command with a status and
/// nothing more to say, and documented in every command's `--help` (``help``) and the DocC article "The haneke Tool".
enum ExitStatus: Int32, Error {
    /// Success.
    case ok = 0
    /// Problems found: `verify` found damage that remains, `get` found no entry for its key (or a
    /// damaged one), `thumbnail` could not read or resize some images.
    case problems = 1
    /// A usage mistake: a bad option or value, a missing or wrong operand (not a folder, not a
    /// store's folder).
    case usage = 2
    /// An I/O failure: a system call failed (permission denied, a disk error…).
    case io = 3

    /// The table, at the end of every command's discussion.
    static let help = """


        EXIT STATUS:
          0  success
          1  problems found: verify found damage that remains; get found no entry
             for its key (or a damaged one); thumbnail could not read or resize
             some images (listed, with their reasons)
          2  usage: no command, a bad option or value, a missing or wrong operand
             (not a folder, not a store's folder), help for no such command
          3  an I/O failure: a system call failed (permission denied, a disk
             error…)
        """
}

/// An error the tool reports: one line on stderr (`haneke: <message>`) and its exit status.
struct ToolError: Error {
    /// The exit status.
    var status: ExitStatus
    /// The line, without the `haneke: ` prefix.
    var message: String

    /// A usage mistake (exit status 2).
    static func usage(_ message: String) -> ToolError { ToolError(status: .usage, message: message) }

    /// Problems found (exit status 1).
    static func problems(_ message: String) -> ToolError { ToolError(status: .problems, message: message) }

    /// A failed system call (exit status 3): what failed, then the system's reason.
    static func io(_ what: String, _ error: any Error) -> ToolError {
        ToolError(status: .io, message: "\(what): \(reason(error))")
    }

    /// What the user sees of any error a command throws: its status and its one line (empty for
    /// none); for `--help` and `--version`, status 0 and ArgumentParser's text for stdout.
    static func report(_ error: any Error) -> (status: ExitStatus, line: String) {
        switch error {
        case let status as ExitStatus:
            return (status, "")
        case let error as ToolError:
            return (error.status, error.message)
        case let error as StoreError:
            return (status(of: error), reason(error))
        default:
            switch HanekeCommand.exitCode(for: error) {
            case .success: return (.ok, HanekeCommand.fullMessage(for: error))
            case .validationFailure: return (.usage, firstLine(HanekeCommand.message(for: error)))
            default: return (.io, reason(error))
            }
        }
    }

    /// The status of a library error: a folder refused is a usage mistake, damage is a problem
    /// found, anything else a failure of the system.
    private static func status(of error: StoreError) -> ExitStatus {
        switch error.code {
        case .notAStore, .unsafeDirectory: .usage
        case .corrupted, .decompressionLimitExceeded, .decoding, .missingData: .problems
        default: .io
        }
    }

    /// An error in words, on one line, once: a `StoreError`'s message (which never repeats its
    /// cause) with the system's reason when it has a `posixCode` (the failed call that is its
    /// cause is not printed: it repeats the path), or else with its cause's reason; a system
    /// error's reason (a Foundation error's underlying one), or the error's own description.
    static func reason(_ error: any Error) -> String {
        if let error = error as? StoreError {
            if let code = error.posixCode { return error.message + ": " + describe(code) }
            return error.message + (error.cause.map { ": " + reason($0) } ?? "")
        }
        let bridged = error as NSError
        if bridged.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(bridged.code)) { return describe(code) }
        if let underlying = bridged.userInfo[NSUnderlyingErrorKey] as? any Error { return reason(underlying) }
        if error is CocoaError { return firstLine(error.localizedDescription) }
        return firstLine("\(error)")
    }

    /// `Permission denied (errno 13 EACCES)`.
    private static func describe(_ code: POSIXErrorCode) -> String {
        "\(String(cString: strerror(code.rawValue))) (errno \(code.rawValue) \(code))"
    }

    private static func firstLine(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? ""
    }
}
