import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
@testable import HanekeFaultWorker
import Testing
import TestSupport

/// A full disk, a folder the writer may not write, and the folder deleted while tasks write: writes
/// fail with a clear error, nothing already stored is damaged, and the store recovers. The tests use
/// the synchronous API and the file system directly: their bodies run off the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(3)), .offThePool, .tags(.disk, .process, .slow))
struct ResourceFaultTests {
    static let worker = ChildProcess.binary("HanekeFaultWorker")

    func storeSomeValues(in directory: String) throws -> [String: Data] {
        let store = try FileStore(directory: directory, configuration: .init(capacity: nil))
        var values: [String: Data] = [:]
        for i in 0..<20 {
            let value = WorkerValue.make(key: "kept-\(i)", sequence: i, maximumLength: 5_000)
            try store.setValue(value, forKey: "kept-\(i)")
            values["kept-\(i)"] = value
        }
        try store.flush()
        return values
    }

    func expectIntact(_ values: [String: Data], in directory: String) throws {
        let store = try FileStore(directory: directory, configuration: .init(capacity: nil))
        for (key, value) in values {
            #expect(try store.value(forKey: key) == value, "\(key) was damaged")
        }
        // Opening removes the temporary files of writers that are gone, and rewrites the journal
        // through one of its own, as it indexes: count them once it has (this suite runs off the pool).
        store.waitUntilIndexed()
        let temporaries = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.contains(".haneke-tmp.") }
        #expect(temporaries.isEmpty, "\(temporaries)")
    }

    @Test func aFullDiskFailsWritesClearlyAndDamagesNothing() async throws {
        let directory = try TemporaryDirectory(prefix: "full")
        let values = try storeSomeValues(in: directory.path)
        // The child may write no file over 64 KiB: a larger value fails with EFBIG, as on a full disk.
        let run = try await ChildProcess.run(Self.worker, ["fill", directory.path, "65536"])
        #expect(run.output.hasPrefix("failed io"), "\(run.output) \(run.stderr)")
        #expect(run.output.contains("fill-"), "the error names the key")
        try expectIntact(values, in: directory.path)
        // The fault goes: writing works again.
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: nil))
        try await store.setValue(Data(count: 100_000), forKey: "after")
        #expect(try await store.value(forKey: "after")?.count == 100_000)
    }

    @Test func aSmallFullFileSystemFailsWritesClearly() async throws {
        // A 1 MiB tmpfs where the machine lets us mount one (as root here); a full file system, not a limit.
        let mountPoint = try TemporaryDirectory(prefix: "tmpfs")
        let mount = try await ChildProcess.run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", mountPoint.path])
        guard mount.status == 0 else {
            print("tmpfs could not be mounted here (\(mount.stderr.trimmingCharacters(in: .whitespacesAndNewlines))); covered by the RLIMIT_FSIZE test")
            return
        }
        let path = mountPoint.path
        let failure: (any Error)?
        do {
            try fillAndRecover(path)
            failure = nil
        } catch {
            failure = error
        }
        // Lazily: the store's folder descriptor may still be open (a journal flush pending), and
        // a busy tmpfs left mounted would keep its mount point in the temporary folder for good.
        _ = try? await ChildProcess.run("/bin/umount", ["--lazy", mountPoint.path])
        if let failure { throw failure }
    }

    /// Fills the store on a full file system until a write fails, checks the failure and the
    /// values stored before, then frees room and writes again.
    func fillAndRecover(_ path: String) throws {
        let values = try storeSomeValues(in: path)
        let store = try FileStore(directory: path, configuration: .init(capacity: nil))
        var failure: StoreError?
        for i in 0..<200 {
            do {
                try store.setValue(Data(count: 20_000), forKey: "filler-\(i)")
            } catch let error as StoreError {
                failure = error
                break
            }
        }
        #expect(failure?.code == .io)
        #expect(failure?.posixCode == .ENOSPC)
        #expect("\(failure.map { "\($0)" } ?? "")".contains("No space left on device (errno 28 ENOSPC)"))
        try expectIntact(values, in: path)
        for i in 0..<200 { try? store.removeValue(forKey: "filler-\(i)") }
        try store.setValue(Data(count: 1_000), forKey: "after")
        #expect(try store.value(forKey: "after")?.count == 1_000)
    }

    @Test func aFolderTheWriterMayNotWriteFailsClearly() async throws {
        let directory = try TemporaryDirectory(prefix: "readonly")
        let values = try storeSomeValues(in: directory.path)
        // The folder and its shards made read-only for their owner. Root writes anywhere: then the
        // folder is given to `nobody`, who runs the writer.
        let asNobody = getuid() == 0
        func setOwnerAndModes(_ owner: uid_t, _ mode: mode_t) throws {
            for path in [directory.path] + (try FileManager.default.contentsOfDirectory(atPath: directory.path)).map(directory.appending) {
                if asNobody { chown(path, owner, owner) }
                var info = stat()
                if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { chmod(path, mode) }
            }
        }
        try setOwnerAndModes(65534, 0o500)
        let run: ChildProcess.Outcome
        if asNobody {
            run = try await ChildProcess.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Self.worker, "write-once", directory.path, "kept-1", "overwritten"])
        } else {
            run = try await ChildProcess.run(Self.worker, ["write-once", directory.path, "kept-1", "overwritten"])
        }
        try setOwnerAndModes(getuid(), 0o700)
        #expect(run.output.hasPrefix("failed io"), "\(run.output) \(run.stderr)")
        #expect(run.output.contains("Permission denied (errno 13 EACCES)"), "\(run.output)")
        try expectIntact(values, in: directory.path)
    }

    /// Another user's cache folder, even one that user may read: a store running as `nobody`
    /// refuses root's folder rather than reading or writing there.
    @Test(.enabled(if: getuid() == 0, "running a process as another user needs root"))
    func aStoreFolderOfAnotherUserIsRefused() async throws {
        let directory = try TemporaryDirectory(prefix: "others")
        let values = try storeSomeValues(in: directory.path)
        chmod(directory.path, 0o755)
        let run = try await ChildProcess.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Self.worker, "write-once", directory.path, "kept-1", "planted"])
        chmod(directory.path, 0o700)
        #expect(run.output.hasPrefix("failed unsafeDirectory"), "\(run.output) \(run.stderr)")
        #expect(run.output.contains("belongs to user 0, not to user 65534"), "\(run.output)")
        try expectIntact(values, in: directory.path)
    }

    @Test func theFolderDeletedWhileTasksWriteIsRecoveredFrom() async throws {
        let directory = try TemporaryDirectory(prefix: "deleted")
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: nil))
        let errors = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<4 {
                group.addTask {
                    var errors = 0
                    for i in 0..<500 {
                        do {
                            try await store.setValue(WorkerValue.make(key: "t\(task)-\(i % 10)", sequence: i, maximumLength: 1_000), forKey: "t\(task)-\(i % 10)")
                            if let read = try await store.value(forKey: "t\(task)-\(i % 10)"), WorkerValue.parse(read) == nil { errors += 1_000 }
                        } catch let error as StoreError {
                            // `io`, or `notAStore`: a deletion racing the writes can leave a folder
                            // without its marker, which a store opening the path again refuses.
                            #expect(error.code == .io || error.code == .notAStore, "\(error)")
                            errors += 1
                        }
                    }
                    return errors
                }
            }
            group.addTask {
                for _ in 0..<20 {
                    try? FileManager.default.removeItem(atPath: directory.path)
                    await Task.yield()
                }
                return 0
            }
            return try await group.reduce(0, +)
        }
        #expect(errors < 1_000, "a read returned a value that was not whole")
        try await store.setValue(Data("after".utf8), forKey: "after")
        #expect(try await store.value(forKey: "after") == Data("after".utf8))
    }
}
