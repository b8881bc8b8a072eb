import CFileBaseline
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The baselines of the file benchmarks: the least a program must do with plain system calls.
enum RawFiles {
    /// Writes `bytes` to a new temporary file beside `path`, then renames it over `path`.
    static func writeThenRename(_ bytes: UnsafeRawBufferPointer, to path: String, temporary: String) {
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        precondition(fd >= 0, "open \(temporary): \(errno)")
        writeAll(bytes, to: fd)
        precondition(rename(temporary, path) == 0, "rename: \(errno)")
    }

    /// Opens, reads `size` bytes into a new buffer, closes: what a reader must do to hand out a value.
    static func read(_ path: String, size: Int) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        precondition(fd >= 0, "open \(path): \(errno)")
        return readAll(from: fd, size: size)
    }

    /// Writes every byte, then closes the file.
    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32) {
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
            precondition(n > 0, "write: \(errno)")
            done += n
        }
        close(fd)
    }

    /// Reads up to `size` bytes into a new buffer, then closes the file.
    private static func readAll(from fd: Int32, size: Int) -> [UInt8] {
        defer { close(fd) }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var done = 0
            while done < size {
                let n = Glibc.read(fd, buffer.baseAddress! + done, size - done)
                if n <= 0 { break }
                done += n
            }
            count = done
        }
    }

    /// `writeThenRename` through descriptors, as FileStore writes: the shard folder opened
    /// (`O_PATH | O_NOFOLLOW`) from the folder's descriptor, the temporary file created in it
    /// (`openat`), written, renamed (`renameat`).
    static func writeThenRename(_ bytes: UnsafeRawBufferPointer, shard: String, name: String, temporary: String, in root: Int32) {
        let folder = openat(root, shard, baseline_o_path() | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        precondition(folder >= 0, "openat \(shard): \(errno)")
        defer { close(folder) }
        let fd = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        precondition(fd >= 0, "openat \(temporary): \(errno)")
        writeAll(bytes, to: fd)
        precondition(renameat(folder, temporary, folder, name) == 0, "renameat: \(errno)")
    }

    /// `read(_:size:)` through the folder's descriptor, as FileStore reads: one `openat2` of
    /// `<shard>/<name>` that follows no link and stays below the folder.
    static func read(relative path: String, in root: Int32, size: Int) -> [UInt8] {
        let fd = baseline_openat2_beneath(root, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        precondition(fd >= 0, "openat2 \(path): \(errno)")
        return readAll(from: fd, size: size)
    }

    /// Lists every folder below `root` and `stat`s every file: what any start-up index must do.
    static func listAndStat(_ root: String) -> (files: Int, bytes: Int) {
        var files = 0
        var bytes = 0
        guard let directory = opendir(root) else { return (0, 0) }
        defer { closedir(directory) }
        let fd = dirfd(directory)
        var folders: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name == "." || name == ".." { continue }
            var info = stat()
            guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                folders.append(root + "/" + name)
            } else {
                files += 1
                bytes += Int(info.st_size)
            }
        }
        for folder in folders {
            let (f, b) = listAndStat(folder)
            files += f
            bytes += b
        }
        return (files, bytes)
    }

    static func makeDirectory(_ path: String) {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    static func removeDirectory(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// A new, empty directory for one benchmark.
    static func scratchDirectory(_ name: String) -> String {
        let path = (ProcessInfo.processInfo.environment["HANEKE_BENCH_DIR"] ?? "/tmp") + "/haneke-bench-\(name)-\(UUID().uuidString.prefix(8))"
        makeDirectory(path)
        return path
    }
}
