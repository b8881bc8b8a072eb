import Foundation
import FileStore
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A store touches only what it made: it refuses folders that are not its own, follows no link
/// inside its folder, keeps its files private, and removes nothing whose name it did not make.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct FileSystemSafetyTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "safety")
    }

    /// Opens a store and waits until it has indexed its folder (and deleted what opening deletes).
    func open(_ path: String? = nil, access: FileStore.Access = .owner, capacity: Int? = nil) throws -> FileStore {
        let store = try FileStore(directory: path ?? directory.path, configuration: .init(capacity: capacity, access: access))
        store.waitUntilIndexed()
        return store
    }

    // MARK: - Helpers

    static func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & 0o7777
    }

    /// Every file, folder and link below `root` with its bytes (or link target): to prove nothing
    /// changed, byte for byte.
    static func snapshot(of root: String) throws -> [String: String] {
        var result: [String: String] = [:]
        for path in try FileManager.default.subpathsOfDirectory(atPath: root) {
            let full = root + "/" + path
            var info = stat()
            lstat(full, &info)
            switch info.st_mode & S_IFMT {
            case S_IFREG: result[path] = "file " + (try Data(contentsOf: URL(fileURLWithPath: full))).base64EncodedString()
            case S_IFLNK: result[path] = "link " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: full)) ?? "?")
            case S_IFDIR: result[path] = "folder"
            default: result[path] = "other"
            }
        }
        return result
    }

    /// A folder a person uses for other things, holding what the review planted: a `.trash` folder,
    /// a text file named `journal`, a file named `42`, a folder with a two-hex-digit name holding a
    /// dot file, and `AB/notes.txt`.
    static func plantForeignFiles(in root: String) throws {
        try write("an old photo", to: root + "/.trash/old-photos/img1.jpg")
        try write("dear diary", to: root + "/journal")
        try write("the answer", to: root + "/42")
        try write("notes", to: root + "/10/.tmp.notes")
        try write("my notes", to: root + "/AB/notes.txt")
    }

    // MARK: - The marker

    @Test func creatingAStoreWritesItsMarker() throws {
        let path = directory.appending("new/store")
        let store = try open(path)
        let marker = try Data(contentsOf: URL(fileURLWithPath: path + "/" + FileStore.markerFileName))
        #expect(Array(marker.prefix(5)) == Array("HNKS".utf8) + [1])
        #expect(FileStore.markerFileName == ".haneke-store")
        try store.setValue(Data("v".utf8), forKey: "k")
        #expect(try open(path).value(forKey: "k") == Data("v".utf8))
    }

    @Test func aFolderThatIsNotAStoresIsRefusedAndLeftUntouched() throws {
        try Self.plantForeignFiles(in: directory.path)
        let before = try Self.snapshot(of: directory.path)

        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore)
        #expect(error?.message.contains(directory.path) == true)
        #expect(error?.message.contains("'journal'") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("5 files or folders") == true, "\(error?.message ?? "")")
        let inspection = #expect(throws: StoreError.self) { try FileStore.inspect(directory: directory.path) }
        #expect(inspection?.code == .notAStore)
        let read = #expect(throws: StoreError.self) { try FileStore.payload(forKey: "k", inDirectory: directory.path) }
        #expect(read?.code == .notAStore)
        #expect(try Self.snapshot(of: directory.path) == before)
    }

    @Test(arguments: [
        ("garbage", Data("not a marker".utf8), "not a Haneke store marker"),
        ("a newer format", Data(Array("HNKS".utf8) + [2, 0, 0, 0]), "format version 2"),
    ])
    func aMarkerThatIsNotThisStoresIsRefused(label: String, bytes: Data, message: String) throws {
        try bytes.write(to: URL(fileURLWithPath: directory.appending(".haneke-store")))
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore, "\(label)")
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.appending(".haneke-store"))) == bytes)
    }

    /// A marker too large to be one is refused — and its descriptor closed once (the debug build
    /// stops at a second `close`, which could close another thread's file under the reused number).
    @Test func aMarkerThatIsALargeFileIsRefused() throws {
        let bytes = Data(Array("HNKS".utf8) + [1, 0, 0, 0] + [UInt8](repeating: 0x20, count: 8_192))
        try bytes.write(to: URL(fileURLWithPath: directory.appending(".haneke-store")))
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore)
        #expect(error?.message.contains("not a small file") == true, "\(error?.message ?? "")")
    }

    @Test func aMarkerThatIsALinkIsRefused() throws {
        let outside = try TemporaryDirectory()
        _ = try open(outside.path)
        try FileManager.default.createSymbolicLink(atPath: directory.appending(".haneke-store"), withDestinationPath: outside.appending(".haneke-store"))
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .notAStore)
        #expect(error?.message.contains("symbolic link") == true)
    }

    @Test func anEmptyMarkerInAnOtherwiseEmptyFolderIsWrittenAgain() throws {
        // A store killed between creating its marker and writing it.
        _ = FileManager.default.createFile(atPath: directory.appending(".haneke-store"), contents: Data())
        let store = try open()
        try store.setValue(Data([1]), forKey: "k")
        let marker = try Data(contentsOf: URL(fileURLWithPath: directory.appending(".haneke-store")))
        #expect(marker.starts(with: Array("HNKS".utf8)))
    }

    // MARK: - Private by default

    @Test func foldersAreMadePrivateAndFilesTooWhateverTheUmask() throws {
        let path = directory.appending("a/b/store")
        let store = try open(path)
        try store.setValue(Data("secret".utf8), forKey: "https://example.com/?token=abc")
        try store.flush()
        let entry = store.path(forKey: "https://example.com/?token=abc")
        for folder in [directory.appending("a"), directory.appending("a/b"), path, (entry as NSString).deletingLastPathComponent] {
            #expect(Self.mode(folder) == 0o700, "\(folder)")
        }
        for file in [entry, path + "/.haneke-store", path + "/.haneke-journal"] {
            #expect(Self.mode(file) == 0o600, "\(file)")
        }
    }

    @Test func groupAccessSharesTheFilesWithTheFoldersGroup() throws {
        let path = directory.appending("shared")
        let store = try open(path, access: .ownerAndGroup)
        try store.setValue(Data("v".utf8), forKey: "k")
        try store.flush()
        #expect(Self.mode(path) == 0o2770)
        #expect(Self.mode((store.path(forKey: "k") as NSString).deletingLastPathComponent) == 0o2770)
        for file in [store.path(forKey: "k"), path + "/.haneke-store", path + "/.haneke-journal"] {
            #expect(Self.mode(file) == 0o660, "\(file)")
        }
        // A group-writable folder is a group's cache, not the owner's alone.
        let error = #expect(throws: StoreError.self) { try open(path) }
        #expect(error?.code == .unsafeDirectory)
        #expect(error?.message.contains("its group") == true)
    }

    @Test(arguments: [0o777, 0o1777, 0o757, 0o775])
    func aFolderOthersMayWriteIsRefused(mode: Int) throws {
        _ = try open()
        chmod(directory.path, mode_t(mode))
        let error = #expect(throws: StoreError.self) { try open() }
        #expect(error?.code == .unsafeDirectory)
        #expect(error?.message.contains(String(mode, radix: 8)) == true, "\(error?.message ?? "")")
        if mode & 0o002 != 0 {
            #expect(throws: StoreError.self) { try open(access: .ownerAndGroup) }
        } else {
            #expect(throws: Never.self) { try open(access: .ownerAndGroup) }
        }
    }

    @Test func aFolderOwnedByAnotherUserIsRefused() throws {
        let store = try open()
        try store.setValue(Data("theirs".utf8), forKey: "k")
        if getuid() == 0 {
            // Another user's cache folder, with a value planted in it.
            chown(directory.path, 65534, 65534)
            let error = #expect(throws: StoreError.self) { try open() }
            #expect(error?.code == .unsafeDirectory)
            #expect(error?.message.contains("belongs to user 65534") == true, "\(error?.message ?? "")")
            chown(directory.path, 0, 0)
        } else {
            // "/" belongs to root: any other user's store refuses it before looking inside.
            let error = #expect(throws: StoreError.self) { try open("/") }
            #expect(error?.code == .unsafeDirectory)
        }
    }

    // MARK: - No link is followed

    @Test func aShardSwappedForALinkIsNeverFollowed() throws {
        let store = try open()
        try store.setValue(Data("mine".utf8), forKey: "k")
        let shard = (store.path(forKey: "k") as NSString).deletingLastPathComponent
        let outside = try TemporaryDirectory()
        try Self.write("precious", to: outside.appending("precious.txt"))
        let before = try Self.snapshot(of: outside.path)
        try FileManager.default.moveItem(atPath: shard, toPath: directory.appending("moved-away"))
        try FileManager.default.createSymbolicLink(atPath: shard, withDestinationPath: outside.path)

        #expect(try store.value(forKey: "k") == nil)
        let error = #expect(throws: StoreError.self) { try store.setValue(Data("again".utf8), forKey: "k") }
        #expect(error?.code == .io)
        #expect(error?.posixCode == .ENOTDIR)
        try store.removeValue(forKey: "k")
        try store.removeAll()
        #expect(try Self.snapshot(of: outside.path) == before, "the store wrote or deleted through the link")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: shard) == outside.path)
    }

    @Test func aJournalSwappedForALinkIsReplacedNotFollowed() throws {
        let outside = try TemporaryDirectory()
        try Self.write("someone's diary", to: outside.appending("diary"))
        let before = try Self.snapshot(of: outside.path)
        do {
            let store = try open()
            for key in ["a", "b", "c"] { try store.setValue(Data([1]), forKey: key) }
            try FileManager.default.removeItem(atPath: directory.appending(".haneke-journal"))
            try FileManager.default.createSymbolicLink(atPath: directory.appending(".haneke-journal"), withDestinationPath: outside.appending("diary"))
            _ = try store.value(forKey: "a")
            try store.flush()
        }
        #expect(try Self.snapshot(of: outside.path) == before, "the journal was written through the link")
        let reopened = try open()
        #expect(Set(reopened.keys()) == ["a", "b", "c"])
        var info = stat()
        lstat(directory.appending(".haneke-journal"), &info)
        #expect((info.st_mode & S_IFMT) == S_IFREG)
    }

    /// Rewriting the journal writes a new file and renames it over the journal. When the rename
    /// fails — here a folder has the journal's name; a folder deleted meanwhile does the same — the
    /// error is reported, the new file removed, and its descriptor closed once (before the fix it was
    /// closed again, which closed whatever another thread had just opened under that number).
    @Test func aJournalRewriteThatCannotRenameFailsCleanly() throws {
        let store = try open()
        try store.setValue(Data([1]), forKey: "a")
        try store.flush()
        try FileManager.default.removeItem(atPath: directory.appending(".haneke-journal"))
        try FileManager.default.createDirectory(atPath: directory.appending(".haneke-journal/inside"), withIntermediateDirectories: true)
        let error = #expect(throws: StoreError.self) { try store.removeAll() }
        #expect(error?.code == .io)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".haneke-tmp.") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        #expect(store.count == 0)
    }

    /// The pattern of CVE-2022-21658: while the store removes everything, shard folders keep being
    /// swapped for links to a tree that looks exactly like a store's. Not one file of it is touched.
    @Test(.tags(.slow)) func removeAllCannotBeRedirectedByALinkSwappedInMidWalk() async throws {
        let store = try open()
        let keys = (0..<2_000).map { "key-\($0)" }
        for key in keys { try await store.setValue(Data("v".utf8), forKey: key) }
        let sentinel = try TemporaryDirectory(prefix: "sentinel")
        let shards = (0..<256).map { String(format: "%02X", $0) }
        for shard in shards {
            for i in 0..<16 {
                try Self.write("sentinel \(shard) \(i)", to: sentinel.appending("\(shard)/\(shard)\(String(format: "%030d", i))"))
            }
        }
        let before = try Self.snapshot(of: sentinel.path)
        #expect(before.count == 256 * 17)

        let stop = Locked(false)
        let swaps = Locked(0)
        let root = directory.path
        let sentinelPath = sentinel.path
        async let swapper: Void = offThePool {
            while !stop.withLock({ $0 }) {
                for shard in shards where !stop.withLock({ $0 }) {
                    guard rename(root + "/" + shard, root + "/swap-" + shard) == 0 else { continue }
                    symlink(sentinelPath + "/" + shard, root + "/" + shard)
                    sched_yield()
                    unlink(root + "/" + shard)
                    rename(root + "/swap-" + shard, root + "/" + shard)
                    swaps.withLock { $0 += 1 }
                }
            }
        }
        for _ in 0..<20 {
            for key in keys.prefix(200) { try? await store.setValue(Data("v".utf8), forKey: key) }
            try? await store.removeAll()
        }
        stop.withLock { $0 = true }
        try await swapper
        #expect(swaps.withLock { $0 } > 0)
        let after = try Self.snapshot(of: sentinel.path)
        #expect(after == before, "a removal followed a link out of the store's folder")
        let touched = before.filter { after[$0.key] != $0.value }.count
        print("link swaps: \(swaps.withLock { $0 }) shard folders swapped for links during 20 removeAll calls; \(touched) of \(before.count - 256) sentinel files touched")
        try await store.removeAll()
        #expect(store.count == 0)
        for key in keys.prefix(10) { #expect(try await store.value(forKey: key) == nil) }
    }

    @Test func repairCannotBeRedirectedByALinkSwappedIn() throws {
        let store = try open()
        try store.setValue(Data("v".utf8), forKey: "k")
        let entry = store.path(forKey: "k")
        try Data("damaged".utf8).write(to: URL(fileURLWithPath: entry))
        let inspection = try FileStore.inspect(directory: directory.path)
        #expect(inspection.problems.count == 1)

        // Between the inspection and the repair, the shard becomes a link to a look-alike.
        let shard = (entry as NSString).deletingLastPathComponent
        let sentinel = try TemporaryDirectory(prefix: "sentinel")
        try Self.write("damaged", to: sentinel.appending((entry as NSString).lastPathComponent))
        let before = try Self.snapshot(of: sentinel.path)
        try FileManager.default.moveItem(atPath: shard, toPath: directory.appending("elsewhere"))
        try FileManager.default.createSymbolicLink(atPath: shard, withDestinationPath: sentinel.path)

        let repair = try FileStore.repair(inspection.problems)
        #expect(repair.removed.isEmpty)
        #expect(repair.kept.count == 1)
        #expect(try Self.snapshot(of: sentinel.path) == before)
    }

    // MARK: - Only the store's own names

    @Test func repairRemovesOnlyWhatIsTheStores() throws {
        let store = try open()
        for key in ["a", "b"] { try store.setValue(Data("v".utf8), forKey: key) }
        try Self.plantForeignFiles(in: directory.path)
        try Self.write("photo", to: directory.appending("CD/photos/img.jpg"))    // a foreign folder in a shard
        let notUTF8 = directory.path + "/AB/caf\u{E9}"
        try Self.write("latin-1", to: notUTF8)
        // …renamed to a name that is not UTF-8: "caf" followed by the byte 0xE9.
        let rawName = Array("\(directory.path)/AB/caf".utf8) + [0xE9, 0]
        rawName.withUnsafeBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { _ = rename(notUTF8, $0.baseAddress!) }
        }
        let damaged = store.path(forKey: "b")
        try Data("damaged".utf8).write(to: URL(fileURLWithPath: damaged))
        let protected = try Self.snapshot(of: directory.path).filter { path, _ in
            !path.hasPrefix("10/") && !path.hasPrefix("AB/") && path != String(damaged.dropFirst(directory.path.count + 1))
        }

        let inspection = try FileStore.inspect(directory: directory.path)
        #expect(inspection.entries.map(\.key) == ["a"])
        let paths = Set(inspection.problems.map(\.path))
        #expect(paths.contains(directory.path + "/AB/caf\\xE9"), "\(paths)")
        #expect(paths.contains(directory.path + "/42"))
        #expect(paths.contains(directory.path + "/journal"))

        // Without asking for foreign files: only the damaged entry goes.
        let first = try FileStore.repair(inspection.problems)
        #expect(first.removed.map(\.path) == [damaged])
        #expect(FileManager.default.fileExists(atPath: directory.appending("AB/notes.txt")))

        // With foreign files: the files in shard folders go too, by their bytes; nothing at the top,
        // nothing inside a foreign folder.
        let second = try FileStore.repair(try FileStore.inspect(directory: directory.path).problems, removingForeignFiles: true)
        #expect(Set(second.removed.map(\.path)) == [directory.appending("10/.tmp.notes"), directory.appending("AB/notes.txt"), directory.path + "/AB/caf\\xE9"])
        for removed in second.removed { #expect(!FileManager.default.fileExists(atPath: removed.path.replacingOccurrences(of: "\\xE9", with: "é"))) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.appending("AB")).isEmpty)
        let after = try Self.snapshot(of: directory.path)
        for (path, contents) in protected where !path.hasPrefix(".haneke-journal") {
            #expect(after[path] == contents, "\(path) changed")
        }
        #expect(Set(second.kept.map(\.problem.path)).isSuperset(of: [directory.appending("42"), directory.appending("journal"), directory.appending(".trash"), directory.appending("CD/photos")]))
        #expect(try open().value(forKey: "a") == Data("v".utf8))
    }

    @Test func verifyFindsTheLeftoversThatOpeningDeletes() throws {
        let store = try open()
        try store.setValue(Data("v".utf8), forKey: "k")
        let deadPID = try #require((100_000...4_000_000).first { kill(pid_t($0), 0) != 0 && errno == ESRCH })
        let shard = (store.path(forKey: "k") as NSString).deletingLastPathComponent
        let leftovers = [shard + "/.haneke-tmp.\(deadPID).7", directory.appending(".haneke-tmp.\(deadPID).8")]
        for path in leftovers { try Self.write("half", to: path) }

        let inspection = try FileStore.inspect(directory: directory.path)
        #expect(Set(inspection.problems.filter { $0.kind == .leftover }.map(\.path)) == Set(leftovers))
        _ = try open()
        for path in leftovers { #expect(!FileManager.default.fileExists(atPath: path)) }
        #expect(try FileStore.inspect(directory: directory.path).problems.isEmpty)
    }

    // MARK: - One reader

    @Test func peekingExpiresByTheStoresClock() async throws {
        let clock = TestClock()
        let store = try FileStore(directory: directory.path, configuration: .init(timeToLive: .seconds(60), clock: clock))
        try await store.setValue(Data("v".utf8), forKey: "k")
        #expect(try await store.peekValue(forKey: "k") == Data("v".utf8))
        #expect(try FileStore.payload(forKey: "k", inDirectory: directory.path, clock: clock) == Data("v".utf8))
        clock.advance(by: .seconds(61))
        #expect(try await store.peekValue(forKey: "k") == nil)
        // The tool reads the same file with the clock it is given.
        #expect(try FileStore.payload(forKey: "k", inDirectory: directory.path, clock: clock) == nil)
    }

    // MARK: - Recency reaches the disk

    @Test func recencyReachesTheJournalWithoutAFlushOrARelease() async throws {
        #expect(FileStore.Configuration().recencyFlushInterval == .seconds(1))
        let store = try FileStore(directory: directory.path, configuration: .init(recencyFlushInterval: .milliseconds(50)))
        await store.waitUntilIndexed()   // the journal is rewritten once the store is indexed
        let journal = directory.appending(".haneke-journal")
        let opened = try #require(try FileManager.default.attributesOfItem(atPath: journal)[.size] as? Int)
        for key in ["a", "b", "c"] { try await store.setValue(Data([1]), forKey: key) }
        _ = try await store.value(forKey: "a")
        // Four records of 25 bytes, written by the store's timer: no flush, no release.
        let expected = opened + 4 * 25
        let start = ContinuousClock.now
        try await waitUntil("the journal holding the four records") {
            (try? FileManager.default.attributesOfItem(atPath: journal)[.size] as? Int) ?? 0 >= expected
        }
        print("recency reached the journal \(ContinuousClock.now - start) after the last read (interval 50 ms)")
        withExtendedLifetime(store) {}
    }

    // MARK: - Errors

    @Test func errorsNameTheSystemCallAndTheErrorNumber() throws {
        let missing = #expect(throws: StoreError.self) { try FileStore.inspect(directory: directory.appending("nope")) }
        #expect(missing?.code == .io)
        #expect(missing?.posixCode == .ENOENT)
        #expect("\(missing.map { "\($0)" } ?? "")".contains("open(\(directory.appending("nope"))) failed: No such file or directory (errno 2 ENOENT)"))

        let file = directory.appending("a-file")
        try Self.write("x", to: file)
        let notAFolder = #expect(throws: StoreError.self) { try open(file + "/store") }
        #expect(notAFolder?.posixCode == .ENOTDIR)
    }
}
