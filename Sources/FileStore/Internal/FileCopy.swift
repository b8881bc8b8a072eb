internal import CFileStoreShims
#if canImport(Glibc)
import Glibc
#endif
import StoreFolders

/// Copies a range of one open file into another: what ``FileStore/setAttributes(_:forKey:)`` does
/// with the payload of the file it replaces, so that the value is not read into memory.
enum FileCopy {
    /// The buffer of the copy through memory, where the kernel cannot copy.
    private static let chunk = 1 << 20

    /// Copies `count` bytes at `sourceOffset` in `source` to `destinationOffset` in `destination`
    /// with `copy_file_range(2)` (in the kernel, sharing the blocks on file systems that can), or
    /// through a buffer where it is not available (`ENOSYS`, `EXDEV`, `EINVAL`, `EOPNOTSUPP`).
    /// - Throws: `POSIX.Failure`; `EIO` when the source is shorter than `count`.
    static func copy(_ count: Int, from source: Int32, at sourceOffset: Int, to destination: Int32, at destinationOffset: Int, path: @autoclosure () -> String) throws(POSIX.Failure) {
        var copied = 0
        var inKernel = true
        while copied < count {
            if inKernel {
                var input = Int64(sourceOffset + copied)
                var output = Int64(destinationOffset + copied)
                let n = haneke_copy_file_range(source, &input, destination, &output, UInt(count - copied))
                if n > 0 {
                    copied += n
                    continue
                }
                if n == 0 { throw POSIX.fail("copy_file_range", path(), code: EIO) }   // the source ended early
                switch errno {
                case EINTR: continue
                case ENOSYS, EXDEV, EINVAL, EOPNOTSUPP, EPERM: inKernel = false
                default: throw POSIX.fail("copy_file_range", path())
                }
            }
            try copyThroughMemory(count - copied, from: source, at: sourceOffset + copied, to: destination, at: destinationOffset + copied, path: path())
            return
        }
    }

    private static func copyThroughMemory(_ count: Int, from source: Int32, at sourceOffset: Int, to destination: Int32, at destinationOffset: Int, path: @autoclosure () -> String) throws(POSIX.Failure) {
        let size = min(count, chunk)
        guard let buffer = malloc(max(size, 1)) else { throw POSIX.fail("malloc", path(), code: ENOMEM) }
        defer { free(buffer) }
        var copied = 0
        while copied < count {
            let wanted = min(size, count - copied)
            let read = try POSIX.read(source, into: buffer, count: wanted, at: sourceOffset + copied, path: path())
            guard read == wanted else { throw POSIX.fail("pread", path(), code: EIO) }
            var written = 0
            while written < read {
                let n = pwrite(destination, buffer + written, read - written, off_t(destinationOffset + copied + written))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw POSIX.fail("pwrite", path())
                }
                written += n
            }
            copied += read
        }
    }
}
