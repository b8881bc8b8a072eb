public import Foundation
import HanekeProtocols
import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

extension FileStore {
    /// For the fuzzer (`Fuzz/`): reads `bytes` as the file of `key` through the one entry-file
    /// reader that `value(forKey:)` uses — header checks, size checks, key comparison, payload
    /// hand-off — and says what it found. The bytes go to an unlinked scratch file (in `/dev/shm`,
    /// in memory, when there is one). Not for applications.
    /// - Parameters:
    ///   - bytes: The contents of an entry file.
    ///   - key: The key the read asks for.
    ///   - sizeHint: Whether the read trusts a size from the index (as for a known entry).
    /// - Returns: `"value <n>"`, `"other key"` or `"damaged: <reason>"`, or `"error: <error>"`.
    @_spi(Fuzzing)
    public func readEntryForFuzzing(_ bytes: Data, key: String, sizeHint: Bool) -> String {
        let folder = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let path = folder + "/haneke-fuzz-\(POSIX.processID)-\(UInt64.random(in: 0...UInt64.max))"
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return "error: no scratch file" }
        unlink(path)
        defer { POSIX.close(descriptor) }
        let written = bytes.withUnsafeBytes { buffer -> Bool in
            (try? POSIX.writeAll(descriptor, buffer, UnsafeRawBufferPointer(start: nil, count: 0), path: path)) != nil
        }
        guard written else { return "error: write failed" }
        do {
            let outcome = try EntryFile.read(descriptor, path: path, knownSize: sizeHint ? bytes.count : nil, extent: .whole, sizeLimit: configuration.capacity) { header, reader in
                reader.hasKey(key, header: header) ? "value \(reader.takePayload(header: header).count)" : "other key"
            }
            switch outcome {
            case .entry(let description): return description
            case .damaged(let damage): return "damaged: \(damage)"
            }
        } catch {
            return "error: \(error)"
        }
    }
}
