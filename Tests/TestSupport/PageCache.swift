import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Drops files from the kernel's page cache, for tests of reads that must not be served from it.
public enum PageCache {
    /// The failure to drop a file's pages.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    /// Writes `path` to the disk and has the kernel drop its pages, until none is resident
    /// (`mincore`): a dirty page, one under writeback or one still in another CPU's list of new
    /// pages is not dropped at the first try. Blocks: call it off the cooperative pool.
    /// - Throws: ``Failure`` when the file cannot be opened or mapped, or keeps a page resident.
    public static func drop(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "cannot open \(path): errno \(errno)") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size > 0 else { return }
        let size = Int(info.st_size)
        for _ in 0..<200 {
            fsync(fd)
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
            if try residentPages(fd, size: size) == 0 { return }
            usleep(5_000)
        }
        throw Failure(description: "\(path) keeps pages in the page cache")
    }

    /// Drops every entry file (`XX/<32 hex digits>`) of the store folder at `folder`.
    public static func dropEntryFiles(in folder: String) throws {
        for path in try FileManager.default.subpathsOfDirectory(atPath: folder) where path.utf8.count == 35 && path.dropFirst(2).hasPrefix("/") {
            try drop(folder + "/" + path)
        }
    }

    private static func residentPages(_ fd: Int32, size: Int) throws -> Int {
        guard let mapping = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), mapping != MAP_FAILED else {
            throw Failure(description: "cannot map the file: errno \(errno)")
        }
        defer { munmap(mapping, size) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (size + page - 1) / page)
        guard mincore(mapping, size, &vector) == 0 else { throw Failure(description: "mincore failed: errno \(errno)") }
        return vector.reduce(0) { $0 + Int($1 & 1) }
    }
}
