#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StoreFolders

/// The one reader of entry files: every path that looks into one — a read, `containsValue`, the
/// entries' list, a peek, `inspect`, `verify`, `haneke get` and the fuzzer — goes through
/// ``read(_:path:knownSize:extent:sizeLimit:_:)``, so they cannot disagree on what a valid file is.
/// `.header` reads the header, the key and the metadata, never the payload (beyond the first
/// 4 KiB that one `read` may take with them): what `attributes(forKey:)` reads.
enum EntryFile {
    /// How much of the file to read.
    enum Extent {
        /// The header, the key and the metadata; the file's size must match what the header announces.
        case header
        /// The whole file, payload included.
        case whole
    }

    /// What is wrong with a damaged file.
    enum Damage: Equatable, Sendable, CustomStringConvertible {
        case shorterThanHeader(Int)
        case header(EntryHeader.Problem)
        case largerThanLimit(announced: Int, limit: Int)
        case truncated(announced: Int, actual: Int)
        case trailingBytes(Int)
        case keyNotUTF8

        var description: String {
            switch self {
            case .shorterThanHeader(let size): "the file is \(size) bytes, shorter than a header"
            case .header(let problem): "\(problem)"
            case .largerThanLimit(let announced, let limit): "the header announces \(announced) bytes, more than the limit of \(limit)"
            case .truncated(let announced, let actual): "the header announces \(announced) bytes but the file has \(actual)"
            case .trailingBytes(let count): "the file has \(count) bytes after its payload"
            case .keyNotUTF8: "the stored key is not valid UTF-8"
            }
        }
    }

    /// A checked file, or what is wrong with it.
    enum Outcome<Entry> {
        case entry(Entry)
        case damaged(Damage)
    }

    /// Reads and checks one entry file — header (magic, version, checksum, lengths), the size the
    /// header announces, and with `.whole` the payload — then hands the header and the buffer to
    /// `body` (to compare the key, decode it, or take the payload).
    /// - Parameters:
    ///   - descriptor: The open file.
    ///   - path: The file's path, for error messages.
    ///   - knownSize: The file's size when the caller knows it (the index's): with `.whole`, the
    ///     common case reads the file with one `read` and no `fstat`.
    ///   - extent: How much to read.
    ///   - sizeLimit: The largest file accepted, or `nil`: a header announcing more is damage,
    ///     found before anything is allocated for it.
    ///   - body: Called with the header and the reader when the file is whole.
    /// - Throws: `POSIX.Failure` when a system call fails (a folder or a FIFO fails its `pread`).
    static func read<Entry>(
        _ descriptor: Int32,
        path: @autoclosure () -> String,
        knownSize: Int?,
        extent: Extent,
        sizeLimit: Int?,
        waiting: Bool = true,
        _ body: (EntryHeader, inout WholeFileReader) -> Entry
    ) throws(POSIX.Failure) -> Outcome<Entry> {
        let size: Int
        if let knownSize, extent == .whole {
            size = knownSize
        } else {
            size = try POSIX.status(of: descriptor, path: path()).size
        }
        // The first read takes the whole file in the common case; a huge (or sparse, or lying)
        // file is only read further once its checked header says how long it is.
        let first = extent == .whole ? WholeFileReader.firstReadLimit : 4096
        var reader = try WholeFileReader(descriptor: descriptor, expectedSize: min(size, first), waiting: waiting, path: path())
        defer { reader.deallocate() }

        guard try reader.ensure(EntryHeader.fixedSize, path: path()) else { return .damaged(.shorterThanHeader(reader.count)) }
        let fixed = EntryHeader.fixedLength(declaredBy: reader.bytes(0..<EntryHeader.fixedSize))
        guard try reader.ensure(fixed, path: path()) else { return .damaged(.shorterThanHeader(reader.count)) }
        let header: EntryHeader
        do {
            header = try EntryHeader.decode(reader.bytes(0..<fixed))
        } catch {
            return .damaged(.header(error))
        }
        if let sizeLimit, header.fileLength > sizeLimit {
            return .damaged(.largerThanLimit(announced: header.fileLength, limit: sizeLimit))
        }
        switch extent {
        case .whole:
            guard try reader.ensure(header.fileLength, path: path()) else {
                return .damaged(.truncated(announced: header.fileLength, actual: reader.count))
            }
            if reader.count > header.fileLength || (knownSize == nil && size > header.fileLength) {
                return .damaged(.trailingBytes(max(reader.count, size) - header.fileLength))
            }
        case .header:
            guard size == header.fileLength else {
                return size < header.fileLength
                    ? .damaged(.truncated(announced: header.fileLength, actual: size))
                    : .damaged(.trailingBytes(size - header.fileLength))
            }
            guard try reader.ensure(header.length, path: path()) else {
                return .damaged(.truncated(announced: header.fileLength, actual: reader.count))
            }
        }
        guard header.metadataMatches(reader.bytes(header.metadataRange)) else { return .damaged(.header(.badMetadataChecksum)) }
        return .entry(body(header, &reader))
    }
}

/// Reads a file into one `malloc`ed buffer, as far as asked, growing it only when the file really
/// is as long as its header announces (so a lying header cannot make a read allocate gigabytes).
struct WholeFileReader {
    /// The most the first read takes before the header has been checked.
    static let firstReadLimit = 16 << 20

    let descriptor: Int32
    /// `false`: read only what the page cache holds, and throw `EAGAIN` for the rest.
    let waiting: Bool
    private(set) var buffer: UnsafeMutableRawPointer
    private var capacity: Int
    /// Whether `buffer` is still this reader's to free (not handed to a `Data`).
    private var ownsBuffer = true
    /// Bytes read so far.
    private(set) var count = 0
    private var reachedEnd = false

    init(descriptor: Int32, expectedSize: Int, waiting: Bool = true, path: @autoclosure () -> String) throws(POSIX.Failure) {
        self.descriptor = descriptor
        self.waiting = waiting
        self.capacity = max(expectedSize, EntryHeader.fixedSize)
        guard let buffer = malloc(capacity) else { throw POSIX.Failure(call: "malloc", path: path(), code: ENOMEM) }
        self.buffer = buffer
    }

    /// Makes sure the first `needed` bytes are read; `false` if the file is shorter.
    mutating func ensure(_ needed: Int, path: @autoclosure () -> String) throws(POSIX.Failure) -> Bool {
        if count >= needed { return true }
        if count == 0 {
            count = try read(into: buffer, count: capacity, at: 0, path: path())
            reachedEnd = count < capacity
            if count >= needed { return true }
        }
        if reachedEnd { return false }
        if needed > capacity {
            // Grow only for a file that is at least that long.
            guard try POSIX.status(of: descriptor, path: path()).size >= needed else { return false }
            guard let grown = realloc(buffer, needed) else { throw POSIX.Failure(call: "realloc", path: path(), code: ENOMEM) }
            buffer = grown
            capacity = needed
        }
        let read = try read(into: buffer + count, count: needed - count, at: count, path: path())
        count += read
        if count < needed {
            reachedEnd = true
            return false
        }
        return true
    }

    /// `POSIX.read`, or when not ``waiting`` a read of the page cache only.
    private func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int, path: @autoclosure () -> String) throws(POSIX.Failure) -> Int {
        if waiting { return try POSIX.read(descriptor, into: buffer, count: count, at: offset, path: path()) }
        guard let read = POSIX.readWithoutWaiting(descriptor, into: buffer, count: count, at: offset) else {
            throw POSIX.Failure(call: "preadv2(RWF_NOWAIT)", path: path(), code: EAGAIN)
        }
        return read
    }

    func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: buffer + range.lowerBound, count: range.count)
    }

    /// Whether the stored key is `key`, byte for byte.
    func hasKey(_ key: String, header: EntryHeader) -> Bool {
        var key = key
        return key.withUTF8 { wanted in
            guard wanted.count == header.keyLength else { return false }
            guard let start = wanted.baseAddress else { return true }
            return memcmp(start, buffer + header.keyRange.lowerBound, wanted.count) == 0
        }
    }

    /// The stored key, or `nil` when it is not valid UTF-8.
    func key(header: EntryHeader) -> String? {
        String(validating: bytes(header.keyRange), as: UTF8.self)
    }

    /// The metadata, copied (a version 1 file has none).
    func metadata(header: EntryHeader) -> Data {
        header.metadataLength == 0 ? Data() : Data(bytes(header.metadataRange))
    }

    /// The payload as `Data`. Normally the `Data` takes over the buffer (no copy); a payload much
    /// smaller than its header (a huge key) is copied so the key's memory is released.
    mutating func takePayload(header: EntryHeader) -> Data {
        let offset = header.length
        let payloadCount = header.payloadLength
        if payloadCount == 0 { return Data() }
        if offset > 4096, offset > payloadCount {
            return Data(bytes: buffer + offset, count: payloadCount)
        }
        let base = buffer
        ownsBuffer = false
        return Data(bytesNoCopy: base + offset, count: payloadCount, deallocator: .custom { pointer, _ in
            free(pointer - offset)
        })
    }

    func deallocate() {
        if ownsBuffer { free(buffer) }
    }
}

extension EntryHeader {
    /// Whether the entry has expired at `now` (milliseconds since 1970).
    func isExpired(at now: Int64) -> Bool {
        guard let expires else { return false }
        return now >= expires
    }
}
