#if canImport(Glibc)
public import Glibc
#endif

/// The one error type of the framework: what failed (`code`), a sentence naming the key or file
/// (`message`), and the lower-level error that caused it, if any (`cause`).
///
/// Each fact is said once: the message says what failed, and why when the framework itself
/// decided it (a damaged header, a limit passed); a lower-level error is kept as `cause` and never
/// repeated in the message. ``description`` joins them on one line:
///
/// ```text
/// decoding: Could not decode the value stored for key user-1: Could not decode User from 12 bytes of JSON (cause: expected Int at id: Expected to decode Int but found a string instead.)
/// io: Could not read /etc/shadow (cause: Permission denied (errno 13 EACCES))
/// ```
///
/// Codes are an extensible set of static values rather than an enum, so new backends can add codes
/// without breaking anyone's `switch`. Compare codes with `==`:
///
/// ```swift
/// do { _ = try await store.value(forKey: "42") }
/// catch let error as StoreError where error.code == .decoding { … }
/// ```
///
/// Cancellation is not a `StoreError`: it surfaces as `CancellationError`.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public var code: Code
    /// A human-readable sentence: what failed, on which key or file, and why when the reason is
    /// not another error (that one is ``cause``, which the message does not repeat).
    public var message: String
    /// The lower-level error that caused this one, if any: a failed system call, a
    /// `DecodingError`, a `URLError`, another `StoreError`… ``description`` prints it.
    public var cause: (any Error)?
    /// For `invalidStatusCode`: the status the server answered with (404, 503, …); `nil` otherwise.
    public var statusCode: Int?
    /// For a failed system call: its error number (`.ENOSPC` for a full disk, `.EACCES` for a
    /// permission problem, `.ENOENT` for a missing file or folder); `nil` otherwise.
    public var posixCode: POSIXErrorCode?

    /// Creates an error.
    /// - Parameters:
    ///   - code: What kind of failure this is.
    ///   - message: What failed, on which key or file; not the cause's text, which
    ///     ``description`` adds.
    ///   - cause: The lower-level error that caused this one, if any.
    ///   - statusCode: For `invalidStatusCode`, the server's status.
    ///   - posixCode: For a failed system call, its error number.
    public init(_ code: Code, _ message: String, cause: (any Error)? = nil, statusCode: Int? = nil, posixCode: POSIXErrorCode? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
        self.statusCode = statusCode
        self.posixCode = posixCode
    }

    /// `"<code>: <message>"`, then `" (cause: <cause>)"` when there is a cause or a ``posixCode``:
    /// a `StoreError` cause as its own description, a system error as its reason and number
    /// (`Permission denied (errno 13 EACCES)`), a `DecodingError` or `EncodingError` as its
    /// problem and coding path, a `URLError` as its description and code, any other error as
    /// itself; with no cause, the ``posixCode`` as a system error.
    public var description: String {
        if let cause {
            return "\(code): \(message) (cause: \(CauseText.describe(cause)))"
        }
        if let posixCode {
            return "\(code): \(message) (cause: \(CauseText.describe(posixCode)))"
        }
        return "\(code): \(message)"
    }
}

extension StoreError {
    /// The kind of a `StoreError`. An open set: backends may declare their own codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, as printed and logged.
        public let name: String

        /// Declares a code. Use a short camel-case name unique to your backend.
        /// - Parameter name: The code's stable name.
        public init(_ name: String) { self.name = name }

        /// The code's name.
        public var description: String { name }

        /// A system call or file operation failed.
        public static let io = Code("io")
        /// A value could not be turned into bytes.
        public static let encoding = Code("encoding")
        /// Bytes could not be turned into the expected value.
        public static let decoding = Code("decoding")
        /// Stored bytes are damaged (bad header, checksum mismatch, truncation).
        public static let corrupted = Code("corrupted")
        /// The key cannot be used by this store.
        public static let invalidKey = Code("invalidKey")
        /// The value is larger than the store could ever hold.
        public static let valueTooLarge = Code("valueTooLarge")
        /// Decompressing would exceed the configured size limit.
        public static let decompressionLimitExceeded = Code("decompressionLimitExceeded")
        /// Nothing is cached for the key and no fetcher could produce it.
        public static let notFound = Code("notFound")
        /// A server answered with a status that is not a success.
        public static let invalidStatusCode = Code("invalidStatusCode")
        /// A response or file had no data, or less than it announced.
        public static let missingData = Code("missingData")
        /// A cache was asked for a format it does not have.
        public static let formatNotFound = Code("formatNotFound")
        /// A backend (a server, a directory) cannot be reached right now.
        public static let unavailable = Code("unavailable")
        /// The backend refused the credentials, or requires credentials that were not given (a
        /// wrong Redis password, none configured for a server that wants one). Retrying will not
        /// help until the configuration changes.
        public static let authentication = Code("authentication")
        /// An operation did not finish in the time allowed.
        public static let timeout = Code("timeout")
        /// Memory could not be allocated for the operation: nothing is known to be wrong with the
        /// stored bytes (a chain treats the read as a miss and keeps the entry).
        public static let outOfMemory = Code("outOfMemory")
        /// A folder exists and holds files, but no store marker: a disk store never adopts or
        /// cleans a folder that is not its own.
        public static let notAStore = Code("notAStore")
        /// A folder belongs to another user, or others may write to it: a disk store refuses it,
        /// since anyone who can write there could plant or replace cached values.
        public static let unsafeDirectory = Code("unsafeDirectory")
        /// The store cannot do what was asked: a store that keeps no lifetimes or metadata was
        /// given an entry with them, or has no atomic add-if-absent.
        public static let unsupported = Code("unsupported")
    }
}
