internal import CFileStoreShims
import Synchronization

#if canImport(Glibc)
package import Glibc
#endif

/// Thin wrappers over the system calls the disk stores make. Below the store's folder every call is
/// relative to a directory descriptor and never follows a symbolic link (`openat` with
/// `O_NOFOLLOW`, `fstatat` with `AT_SYMLINK_NOFOLLOW`, `unlinkat`, `renameat`, `mkdirat`), so a
/// link planted anywhere inside the folder, or swapped in while the store works, cannot lead a
/// read, a write or a removal out of it.
///
/// Foundation's file APIs are avoided on purpose: every Foundation write calls `fsync`,
/// `replaceItemAt` is broken on Linux, and attribute lookups cost 9–25× a `stat`.
package enum POSIX {
    /// A failed system call: the call, the path it was about (for messages), and `errno`.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package var call: String
        package var path: String
        package var code: Int32

        package init(call: String, path: String, code: Int32) {
            self.call = call
            self.path = path
            self.code = code
        }

        /// The error number as a typed code.
        package var posixCode: POSIXErrorCode? { POSIXErrorCode(rawValue: code) }

        package var description: String {
            let name = posixCode.map { " \($0)" } ?? ""
            return "\(call)(\(path)) failed: \(String(cString: strerror(code))) (errno \(code)\(name))"
        }

        var isNotFound: Bool { code == ENOENT || code == ENOTDIR }

        /// The path is not a regular file (a folder, a FIFO, a device) where one was expected.
        package var isNotARegularFile: Bool { code == EISDIR || code == ESPIPE || code == EINVAL || code == ENXIO }
    }

    package static func fail(_ call: String, _ path: String, code: Int32 = errno) -> Failure {
        Failure(call: call, path: path, code: code)
    }

    // MARK: - Folders

    /// Opens the folder at `path` (the store's own folder: links in the path the caller gave are
    /// followed, as for any path a user passes), for use as the base of the `*at` calls.
    package static func openFolder(atPath path: String) throws(Failure) -> Int32 {
        let fd = retryingOnInterrupt { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw fail("open", path) }
        return fd
    }

    /// Opens the folder `name` inside `directory`, never following a link: a link (or a file) where
    /// the folder should be fails with `ENOTDIR`. `forListing` opens it for `readdir`; otherwise
    /// the descriptor (`O_PATH`) only serves as the base of `*at` calls, which is cheaper.
    package static func openFolder(_ name: UnsafePointer<CChar>, in directory: Int32, forListing: Bool = false, path: @autoclosure () -> String) throws(Failure) -> Int32? {
        let flags = (forListing ? O_RDONLY : haneke_o_path()) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        let fd = retryingOnInterrupt { openat(directory, name, flags) }
        if fd >= 0 { return fd }
        if errno == ENOENT { return nil }
        throw fail("openat", path())
    }

    /// Creates the folder `name` inside `directory`; `false` when something already has that name.
    package static func makeFolder(_ name: UnsafePointer<CChar>, in directory: Int32, mode: Glibc.mode_t, path: @autoclosure () -> String) throws(Failure) -> Bool {
        if mkdirat(directory, name, mode) == 0 { return true }
        if errno == EEXIST { return false }
        throw fail("mkdirat", path())
    }

    /// Creates the folder at `path` and any missing parents (with `mode`); an existing folder is fine.
    /// For the store's own folder and its parents, which the caller named.
    static func makeFolders(atPath path: String, mode: Glibc.mode_t) throws(Failure) {
        if mkdir(path, mode) == 0 || errno == EEXIST { return }
        let failure = fail("mkdir", path)
        guard failure.code == ENOENT else { throw failure }
        let parent = parentPath(of: path)
        guard parent != path, !parent.isEmpty else { throw failure }
        try makeFolders(atPath: parent, mode: mode)
        if mkdir(path, mode) == 0 || errno == EEXIST { return }
        throw fail("mkdir", path)
    }

    static func parentPath(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// Removes the folder `name` inside `directory` if it is empty (`rmdir`: never recursive, so it
    /// cannot be led anywhere); `false` when it is not empty or not there.
    @discardableResult
    package static func removeEmptyFolder(_ name: UnsafePointer<CChar>, in directory: Int32, path: @autoclosure () -> String) throws(Failure) -> Bool {
        if unlinkat(directory, name, AT_REMOVEDIR) == 0 { return true }
        switch errno {
        case ENOENT, ENOTEMPTY, EEXIST: return false
        default: throw fail("unlinkat", path())
        }
    }

    /// Calls `body` with the name of each entry of the folder open as `directory` (not `.` and
    /// `..`), as the bytes the file system holds, followed in memory by the `NUL` that `readdir`
    /// wrote (``cString(_:)``). The listing uses a descriptor of its own.
    package static func forEachName(in directory: Int32, path: @autoclosure () -> String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) throws(Failure) {
        let fd = retryingOnInterrupt { openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw fail("openat", path()) }
        guard let stream = fdopendir(fd) else {
            let failure = fail("fdopendir", path())
            Glibc.close(fd)
            throw failure
        }
        defer { closedir(stream) }
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw fail("readdir", path()) }
                return
            }
            let start = UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!
            let name = UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: strlen(start.assumingMemoryBound(to: CChar.self)))
            if name.count == 1 && name[0] == 0x2E { continue }
            if name.count == 2 && name[0] == 0x2E && name[1] == 0x2E { continue }
            body(name)
        }
    }

    /// A name from ``forEachName(in:path:_:)`` as a C string, for the `*at` calls.
    package static func cString(_ name: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar> {
        UnsafeRawPointer(name.baseAddress!).assumingMemoryBound(to: CChar.self)
    }

    // MARK: - Files

    /// What opening an entry's path found.
    package enum Opened {
        case file(Int32)
        case missing
        /// A symbolic link at the entry's name or its shard's: never followed.
        case symbolicLink
    }

    /// Whether this kernel has `openat2` (Linux 5.6 and later); cleared at the first `ENOSYS`.
    private static let hasOpenat2 = Atomic<Bool>(true)

    /// Whether entries are opened with `O_NOATIME`, cleared at the first `EPERM` it causes (a file
    /// another user owns, read by a process without `CAP_FOWNER`). The store keeps recency in its
    /// own journal, never in access times, and an access time updated by the first read after each
    /// write dirties the inode: 1.5–4 µs of that read and a later write to the disk.
    private static let leavesAccessTime = Atomic<Bool>(true)

    /// The flags an entry is opened with for reading.
    private static var entryReadFlags: Int32 {
        O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (leavesAccessTime.load(ordering: .relaxed) ? haneke_o_noatime() : 0)
    }

    /// After an open of an entry failed with `EPERM`: true (try again) when `O_NOATIME` was among
    /// `flags`, which it no longer will be.
    private static func refusedForAccessTime(_ flags: Int32) -> Bool {
        guard flags & haneke_o_noatime() != 0 else { return false }
        leavesAccessTime.store(false, ordering: .relaxed)
        return true
    }

    /// Opens the entry file of `digest`, `<shard>/<hex>` below `root`, for reading, following no
    /// link in either component and without blocking (a FIFO planted at an entry's path must not
    /// hang a read: it opens, and reading it fails). One `openat2` with `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH` where the
    /// kernel has it; otherwise the shard folder, then the file, each with `O_NOFOLLOW`.
    package static func openEntry(in root: Int32, _ digest: KeyDigest, path: @autoclosure () -> String) throws(Failure) -> Opened {
        if hasOpenat2.load(ordering: .relaxed) {
            while true {
                let flags = entryReadFlags
                let fd = digest.withRelativePath { haneke_openat2_beneath(root, $0, flags) }
                if fd >= 0 { return .file(fd) }
                switch errno {
                case EINTR, EAGAIN: continue
                case EPERM where refusedForAccessTime(flags): continue
                case ENOENT, ENOTDIR: return .missing
                case ELOOP, EXDEV: return .symbolicLink
                case ENOSYS, EPERM, E2BIG: hasOpenat2.store(false, ordering: .relaxed)
                default: throw fail("openat2", path())
                }
                break
            }
        }
        let shardFolder: Int32
        do {
            guard let opened = try openFolder(digest.shard, in: root, path: path()) else { return .missing }
            shardFolder = opened
        } catch where error.code == ENOTDIR {
            return .missing
        }
        defer { Glibc.close(shardFolder) }
        let name = digest.hex
        var flags = entryReadFlags
        var fd = retryingOnInterrupt { openat(shardFolder, name, flags) }
        if fd < 0 && errno == EPERM && refusedForAccessTime(flags) {
            flags = entryReadFlags
            fd = retryingOnInterrupt { openat(shardFolder, name, flags) }
        }
        if fd >= 0 { return .file(fd) }
        switch errno {
        case ENOENT, ENOTDIR: return .missing
        case ELOOP: return .symbolicLink
        default: throw fail("openat", path())
        }
    }

    /// Opens the entry file of `digest` only if the kernel can do it without reading the disk (its
    /// path is in the lookup cache): the descriptor, or `nil` when it cannot, when there is no such
    /// file, or for anything unusual — the caller then opens it the usual way, where it may block.
    package static func openEntryWithoutWaiting(in root: Int32, _ digest: KeyDigest) -> Int32? {
        guard hasOpenat2.load(ordering: .relaxed) else { return nil }
        let flags = entryReadFlags
        let fd = digest.withRelativePath { haneke_openat2_beneath_cached(root, $0, flags) }
        if fd < 0 && errno == EPERM { _ = refusedForAccessTime(flags) }
        return fd >= 0 ? fd : nil
    }

    /// Reads `count` bytes at `offset` from the page cache only: the bytes read (fewer at the end
    /// of the file), or `nil` as soon as a page is not cached or anything else goes wrong.
    package static func readWithoutWaiting(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int) -> Int? {
        var done = 0
        while done < count {
            let n = haneke_pread_nowait(fd, buffer + done, UInt(count - done), Int64(offset + done))
            if n > 0 {
                done += n
            } else if n == 0 {
                break
            } else if errno != EINTR {
                return nil
            }
        }
        return done
    }

    /// Opens the file `name` inside `directory` with `flags` (to which `O_NOFOLLOW | O_CLOEXEC`
    /// are added); `nil` when it does not exist.
    package static func openFile(_ name: UnsafePointer<CChar>, in directory: Int32, flags: Int32, mode: Glibc.mode_t = 0, path: @autoclosure () -> String) throws(Failure) -> Int32? {
        let fd = retryingOnInterrupt { openat(directory, name, flags | O_NOFOLLOW | O_CLOEXEC, mode) }
        if fd >= 0 { return fd }
        if errno == ENOENT { return nil }
        throw fail("openat", path())
    }

    /// Creates the file `name` inside `directory`, which must not exist, for writing.
    static func createExclusively(_ name: UnsafePointer<CChar>, in directory: Int32, mode: Glibc.mode_t, path: @autoclosure () -> String) throws(Failure) -> Int32 {
        let fd = retryingOnInterrupt { openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
        guard fd >= 0 else { throw fail("openat", path()) }
        return fd
    }

    /// Reads up to `count` bytes into `buffer` at `offset` in the file, stopping early only at the end
    /// of the file; returns the number read.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int, path: @autoclosure () -> String) throws(Failure) -> Int {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset + done))
            if n > 0 {
                done += n
            } else if n == 0 {
                break
            } else if errno != EINTR {
                throw fail("pread", path())
            }
        }
        return done
    }

    /// Reads a whole small file (at most `limit` bytes are read).
    static func readAll(_ fd: Int32, limit: Int, path: @autoclosure () -> String) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: limit)
        let result = bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(Failure) -> Int in try read(fd, into: buffer.baseAddress!, count: limit, at: 0, path: path()) }
        }
        let count = try result.get()
        return Array(bytes[0..<count])
    }

    /// Writes every byte of `first` then `second`.
    package static func writeAll(_ fd: Int32, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, path: @autoclosure () -> String) throws(Failure) {
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
                throw fail("writev", path())
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
    package static func append(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: @autoclosure () -> String) throws(Failure) {
        let before = lseek(fd, 0, SEEK_END)
        do {
            try writeAll(fd, bytes, UnsafeRawBufferPointer(start: nil, count: 0), path: path())
        } catch {
            if before >= 0 { _ = ftruncate(fd, before) }
            throw error
        }
    }

    /// Appends every byte of `bytes` (see ``append(_:_:path:)-(_,UnsafeRawBufferPointer,_)``).
    package static func append(_ fd: Int32, _ bytes: [UInt8], path: @autoclosure () -> String) throws(Failure) {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(Failure) in try append(fd, buffer, path: path()) }
        }
        try result.get()
    }

    package static func synchronize(_ fd: Int32, path: @autoclosure () -> String) throws(Failure) {
        guard retryingOnInterrupt({ fsync(fd) }) == 0 else { throw fail("fsync", path()) }
    }

    /// Closes `fd`. Closing a descriptor twice is a bug that can close another thread's file (its
    /// number is reused at once): debug builds stop at the `EBADF` that reveals it.
    package static func close(_ fd: Int32) {
        let closed = Glibc.close(fd)
        assert(closed == 0 || errno != EBADF, "closed descriptor \(fd), which was not open: a descriptor closed twice")
    }

    /// What `fstat` says of an open file.
    package static func status(of fd: Int32, path: @autoclosure () -> String) throws(Failure) -> FileStatus {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw fail("fstat", path()) }
        return FileStatus(info)
    }

    /// What `stat` says of `path`, following links (for `/proc/self/fd/<n>`, the file held open);
    /// `nil` when it cannot be examined.
    package static func status(followingLinksOf path: String) -> FileStatus? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStatus(info)
    }

    /// What `fstatat` says of `name` inside `directory`, not following a link; `nil` when there is
    /// nothing (or it cannot be examined).
    package static func status(of name: UnsafePointer<CChar>, in directory: Int32) -> FileStatus? {
        var info = stat()
        guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileStatus(info)
    }

    // MARK: - Names

    /// Renames `from` to `to`, both inside `directory`, atomically replacing what `to` named (a
    /// link at `to` is replaced, never followed).
    package static func rename(_ from: UnsafePointer<CChar>, to: UnsafePointer<CChar>, in directory: Int32, path: @autoclosure () -> String) throws(Failure) {
        guard renameat(directory, from, directory, to) == 0 else { throw fail("renameat", path()) }
    }

    /// Removes `name` inside `directory` (a file, or a link itself, never what it points to);
    /// `false` when it did not exist.
    @discardableResult
    package static func unlink(_ name: UnsafePointer<CChar>, in directory: Int32, path: @autoclosure () -> String) throws(Failure) -> Bool {
        if unlinkat(directory, name, 0) == 0 { return true }
        if errno == ENOENT { return false }
        throw fail("unlinkat", path())
    }

    // MARK: - Processes and users

    /// Whether a process with this id exists (used to tell a live writer's temporary file from a
    /// crashed one's).
    package static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    package static var processID: Int32 { getpid() }

    static var effectiveUserID: UInt32 { geteuid() }

    private static func retryingOnInterrupt(_ call: () -> Int32) -> Int32 {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }
}

/// A file's identity: the same inode on the same device is the same file, whatever its name.
package struct FileIdentity: Hashable, Sendable {
    package var device: UInt64
    package var inode: UInt64
}

/// What `stat` says of a file, in the units the disk stores use.
package struct FileStatus: Sendable {
    package enum Kind: Sendable {
        case file, folder, symbolicLink, other
    }

    package var kind: Kind
    /// The length in bytes.
    package var size: Int
    /// The bytes allocated on disk (`st_blocks × 512`, what `du` counts).
    package var allocated: Int
    /// Modification time, milliseconds since 1970.
    package var modified: Int64
    /// The number of names the file has; 0 once it has been removed.
    package var links: Int
    package var owner: UInt32
    /// The permission bits (including set-group-ID and sticky).
    var permissions: UInt32
    /// The file system's preferred block size for this file (`st_blksize`).
    package var blockSize: Int
    package var identity: FileIdentity

    package init(_ info: Glibc.stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .file
        case S_IFDIR: kind = .folder
        case S_IFLNK: kind = .symbolicLink
        default: kind = .other
        }
        size = Int(info.st_size)
        allocated = Int(info.st_blocks) * 512
        modified = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
        links = Int(info.st_nlink)
        owner = UInt32(info.st_uid)
        permissions = UInt32(info.st_mode & 0o7777)
        blockSize = Int(info.st_blksize)
        identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    package var isFile: Bool { kind == .file }
    package var isFolder: Bool { kind == .folder }
}
