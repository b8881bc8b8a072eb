#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the system calls FileStore makes. Foundation's file APIs are avoided on
/// purpose (shared/TOOLCHAIN.md): every Foundation write calls `fsync`, `replaceItemAt` is broken,
/// and attribute lookups cost 9–25× a `stat`.
enum POSIX {
    /// A failed system call: the call, the path, and `errno`.
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var path: String
        var code: Int32

        var description: String { "\(call)(\(path)) failed: \(String(cString: strerror(code))) (errno \(code))" }

        var isNotFound: Bool { code == ENOENT || code == ENOTDIR }

        /// The path is not a regular file (a folder, a FIFO, a device) where one was expected.
        var isNotARegularFile: Bool { code == EISDIR || code == ESPIPE || code == EINVAL || code == ENXIO }
    }

    static func fail(_ call: String, _ path: String) -> Failure {
        Failure(call: call, path: path, code: errno)
    }

    // MARK: - Files

    /// What opening an entry's path found.
    enum Opened {
        case file(Int32)
        case missing
        /// A symbolic link: never followed, so a planted link cannot make the store read elsewhere.
        case symbolicLink
    }

    /// Opens `path` for reading without following a symbolic link and without blocking (a FIFO
    /// planted at an entry's path must not hang a read: it opens, and reading it fails).
    static func openEntry(_ path: String) throws(Failure) -> Opened {
        let fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
        if fd >= 0 { return .file(fd) }
        let failure = fail("open", path)
        if failure.isNotFound { return .missing }
        if failure.code == ELOOP { return .symbolicLink }
        throw failure
    }

    /// Opens `path` for reading; `nil` when it does not exist.
    static func openForReading(_ path: String) throws(Failure) -> Int32? {
        switch try openEntry(path) {
        case .file(let fd): return fd
        case .missing: return nil
        case .symbolicLink: throw Failure(call: "open", path: path, code: ELOOP)
        }
    }

    /// Creates `path`, which must not exist, for writing.
    static func createExclusively(_ path: String) throws(Failure) -> Int32 {
        let fd = retryingOnInterrupt { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { throw fail("open", path) }
        return fd
    }

    /// Reads up to `count` bytes into `buffer` at `offset` in the file, stopping early only at the end
    /// of the file; returns the number read.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int, path: String) throws(Failure) -> Int {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset + done))
            if n > 0 {
                done += n
            } else if n == 0 {
                break
            } else if errno != EINTR {
                throw fail("pread", path)
            }
        }
        return done
    }

    /// Writes every byte of `first` then `second`.
    static func writeAll(_ fd: Int32, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, path: String) throws(Failure) {
        var vectors = [
            iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count),
        ]
        var remaining = first.count + second.count
        var index = 0
        while remaining > 0 {
            while index < vectors.count, vectors[index].iov_len == 0 { index += 1 }
            let n = vectors.withUnsafeMutableBufferPointer { buffer in
                writev(fd, buffer.baseAddress! + index, Int32(buffer.count - index))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw fail("writev", path)
            }
            remaining -= n
            var written = n
            while written > 0, index < vectors.count {
                let take = min(written, vectors[index].iov_len)
                vectors[index].iov_base = vectors[index].iov_base.map { $0 + take }
                vectors[index].iov_len -= take
                written -= take
                if vectors[index].iov_len == 0 { index += 1 }
            }
        }
    }

    /// Appends every byte of `bytes` (the file must be open with `O_APPEND`). If only part could be
    /// written (a full disk), the file is cut back to its old length, so it never ends in half a record.
    static func append(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(Failure) {
        let before = lseek(fd, 0, SEEK_END)
        do {
            try writeAll(fd, bytes, UnsafeRawBufferPointer(start: nil, count: 0), path: path)
        } catch {
            if before >= 0 { _ = ftruncate(fd, before) }
            throw error
        }
    }

    /// Creates `path` for writing, replacing a leftover file of the same name.
    static func createExclusivelyReplacing(_ path: String) throws(Failure) -> Int32 {
        _ = Glibc.unlink(path)
        return try createExclusively(path)
    }

    static func synchronize(_ fd: Int32, path: String) throws(Failure) {
        guard retryingOnInterrupt({ fsync(fd) }) == 0 else { throw fail("fsync", path) }
    }

    /// Flushes a directory's entries (a rename into it) to the disk.
    static func synchronizeDirectory(_ path: String) throws(Failure) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw fail("open", path) }
        defer { close(fd) }
        try synchronize(fd, path: path)
    }

    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    static func size(of fd: Int32, path: String) throws(Failure) -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw fail("fstat", path) }
        return Int(info.st_size)
    }

    /// The identity (device, inode) of an open file, to tell a file from its replacement.
    static func identity(of fd: Int32, path: String) throws(Failure) -> FileIdentity {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw fail("fstat", path) }
        return FileIdentity(info)
    }

    /// The identity of whatever is at `path` (a link is not followed), or `nil` when there is nothing.
    static func identity(ofPath path: String) -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileIdentity(info)
    }

    // MARK: - Names

    static func rename(_ from: String, _ to: String) throws(Failure) {
        guard Glibc.rename(from, to) == 0 else { throw fail("rename", "\(from) → \(to)") }
    }

    /// Removes a file; `false` when it did not exist.
    @discardableResult
    static func unlink(_ path: String) throws(Failure) -> Bool {
        if Glibc.unlink(path) == 0 { return true }
        let failure = fail("unlink", path)
        if failure.isNotFound { return false }
        throw failure
    }

    /// Creates `path` and any missing parents; an existing directory is fine.
    static func makeDirectories(_ path: String) throws(Failure) {
        if mkdir(path, 0o755) == 0 { return }
        let failure = fail("mkdir", path)
        switch failure.code {
        case EEXIST:
            var info = stat()
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { return }
            throw Failure(call: "mkdir", path: path, code: ENOTDIR)
        case ENOENT:
            let parent = parentPath(of: path)
            guard parent != path, !parent.isEmpty else { throw failure }
            try makeDirectories(parent)
            if mkdir(path, 0o755) == 0 || errno == EEXIST { return }
            throw fail("mkdir", path)
        default:
            throw failure
        }
    }

    static func parentPath(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// Removes whatever is at `path`: a file, a link (never what it points to), or a directory and
    /// everything in it. Nothing there is fine.
    static func removeTree(_ path: String) throws(Failure) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let failure = fail("lstat", path)
            if failure.isNotFound { return }
            throw failure
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            try unlink(path)
            return
        }
        // O_NOFOLLOW: if the directory was swapped for a link since the lstat, do not descend into it.
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0, let directory = fdopendir(fd) else {
            let failure = fail("open", path)
            if fd >= 0 { Glibc.close(fd) }
            if failure.isNotFound { return }
            throw failure
        }
        var children: [String] = []
        while let entry = readdir(directory) {
            let name = entryName(entry)
            if name != "." && name != ".." { children.append(name) }
        }
        closedir(directory)
        for child in children {
            try removeTree(path + "/" + child)
        }
        guard rmdir(path) == 0 else {
            let failure = fail("rmdir", path)
            if failure.isNotFound { return }
            throw failure
        }
    }

    // MARK: - Listing

    /// What `fstat` says of a name inside an open directory (a link is not followed).
    struct Status {
        var isFile: Bool
        var isDirectory: Bool
        var size: Int
        /// Modification time, milliseconds since 1970.
        var modified: Int64
        var identity: FileIdentity
    }

    static func statusOf(_ name: String, inDirectory dirfd: Int32) -> Status? {
        var info = stat()
        guard fstatat(dirfd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        let modified = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
        let type = info.st_mode & S_IFMT
        return Status(isFile: type == S_IFREG, isDirectory: type == S_IFDIR, size: Int(info.st_size), modified: modified, identity: FileIdentity(info))
    }

    /// Calls `body` with the name of each entry of a directory (not `.` and `..`) and the
    /// directory's descriptor, for `fstatat` and `unlinkat`. `false` when the directory does not
    /// exist or is not a directory.
    static func forEachEntry(in path: String, _ body: (_ name: String, _ directory: Int32) -> Void) throws(Failure) -> Bool {
        guard let directory = opendir(path) else {
            let failure = fail("opendir", path)
            if failure.isNotFound { return false }
            throw failure
        }
        defer { closedir(directory) }
        let descriptor = dirfd(directory)
        while let entry = readdir(directory) {
            let name = entryName(entry)
            if name == "." || name == ".." { continue }
            body(name, descriptor)
        }
        return true
    }

    /// Removes a file inside an open directory; failures are ignored (used for clean-up).
    static func unlink(_ name: String, inDirectory directory: Int32) {
        _ = unlinkat(directory, name, 0)
    }

    private static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafePointer(to: entry.pointee.d_name) { pointer in
            pointer.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
        }
    }

    // MARK: - Processes

    /// Whether a process with this id exists (used to tell a live writer's temporary file from a
    /// crashed one's).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    static var processID: Int32 { getpid() }

    private static func retryingOnInterrupt(_ call: () -> Int32) -> Int32 {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }
}

/// A file's identity: the same inode on the same device is the same file, whatever its name.
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    /// The number of names the file has; 0 once it has been removed.
    var links: Int
    /// The file's size in bytes.
    var size: Int
    /// Whether it is a regular file.
    var isRegularFile: Bool

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        links = Int(info.st_nlink)
        size = Int(info.st_size)
        isRegularFile = (info.st_mode & S_IFMT) == S_IFREG
    }

    func isSameFile(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }
}
