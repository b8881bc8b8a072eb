import Foundation
public import HanekeProtocols

/// Fetches values from files: a file that is missing and a file that does not decode are different
/// errors (`notFound` and `decoding`), and a file larger than `configuration.maximumFileSize`
/// (`64 MiB` by default) is refused with `valueTooLarge` before any of it is read. Only regular
/// files are read: a FIFO, a device or a socket is refused with `unsupported` at once (the file is
/// opened without blocking, then `fstat` decides), so no fetch waits for a writer that never comes.
/// The read runs off Swift's cooperative threads, and a cancelled fetch stops waiting for it.
///
/// ```swift
/// let config = try await cache.fetch(path: "/etc/myapp/config.json")
/// ```
public struct DiskFetcher<Value: DataConvertible & Sendable>: Fetcher {
    /// The limits of a `DiskFetcher`.
    public struct Configuration: Sendable, Hashable {
        /// `64 MiB` by default: the largest file read; `nil` for no limit. A larger file is refused
        /// with `valueTooLarge` from its size alone, before any of it is read; a file that grows
        /// past the limit while it is read (or a `/proc` file, whose size is not known) is refused
        /// once the limit is passed.
        public var maximumFileSize: Int?

        /// Creates a configuration.
        /// - Parameter maximumFileSize: The largest file read; `64 MiB` by default, `nil` for no
        ///   limit.
        public init(maximumFileSize: Int? = 64 << 20) {
            self.maximumFileSize = maximumFileSize
        }
    }

    /// The file every fetch reads, or `nil` to read the key itself as a path.
    public let path: String?
    /// The fetcher's limits.
    public let configuration: Configuration

    /// Creates a fetcher.
    /// - Parameters:
    ///   - path: The file to read whatever the key; `nil` (the default) reads the key as a path.
    ///   - configuration: The limits; the defaults of `Configuration` by default.
    public init(path: String? = nil, configuration: Configuration = Configuration()) {
        self.path = path
        self.configuration = configuration
    }

    /// Reads the file and decodes it.
    /// - Parameter key: The cache key; used as the path when the fetcher has none.
    /// - Returns: The decoded contents.
    /// - Throws: `StoreError` with code `notFound` (no such file), `unsupported` (not a regular
    ///   file), `valueTooLarge`, `decoding`, or `io`; `notFound` and `io` carry the system's error
    ///   number as `posixCode`; `CancellationError` when the task is cancelled.
    public func fetch(_ key: String) async throws -> Value {
        let path = self.path ?? key
        let maximum = configuration.maximumFileSize
        let data = try await IOExecutor.shared.runUntilCancelled { try Self.contents(of: path, maximum: maximum) }
        do {
            return try Value.convertFromData(data)
        } catch {
            throw StoreError.wrapping(error, as: .decoding, "The file \(path) (\(data.count) bytes) does not decode as \(Value.self)")
        }
    }

    /// Reads the file at `path`, refusing it from its size (`fstat`) before reading when it is over
    /// `maximum`, and while reading when it grows past it.
    private static func contents(of path: String, maximum: Int?) throws -> Data {
        // Non-blocking: opening a FIFO for reading would otherwise wait for a writer, for good.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { throw failure(errno, path) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw failure(errno, path) }
        let kind = status.st_mode & S_IFMT
        guard kind != S_IFDIR else { throw failure(EISDIR, path) }
        guard kind == S_IFREG else {
            throw StoreError(.unsupported, "\(path) is \(Self.describe(kind)), not a regular file; DiskFetcher reads regular files only")
        }
        let size = Int(status.st_size)
        if let maximum, size > maximum {
            throw StoreError(.valueTooLarge, "The file \(path) holds \(size) bytes, more than the maximumFileSize of \(maximum) bytes")
        }
        // One byte more than the size, to see a file that grew; a size of 0 may mean an unknown
        // size (a device, a file under /proc): the buffer grows as long as the limit allows.
        var data = Data(count: size + 1)
        var length = 0
        while true {
            if length == data.count {
                if let maximum, length > maximum {
                    throw StoreError(.valueTooLarge, "The file \(path) holds more than the maximumFileSize of \(maximum) bytes")
                }
                data.count = min(data.count * 2, maximum.map { $0 + 1 } ?? .max)
            }
            let count = data.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + length, buffer.count - length)
            }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(errno, path)
            }
            length += count
        }
        data.count = length
        return data
    }

    /// What kind of file a mode's type bits say, for errors.
    private static func describe(_ kind: mode_t) -> String {
        switch kind {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "a special file"
        }
    }

    private static func failure(_ number: Int32, _ path: String) -> StoreError {
        let code = POSIXErrorCode(rawValue: number)
        if code == .ENOENT || code == .ENOTDIR {
            return StoreError(.notFound, "There is no file at \(path)", posixCode: code)
        }
        return StoreError(.io, "Could not read \(path)", posixCode: code)
    }
}
