package import HanekeProtocols
import Synchronization

#if canImport(Glibc)
package import Glibc
#endif

/// A store's folder, held open: every file operation below it goes through this descriptor (and
/// descriptors of the shard folders opened from it, never following a link), so nothing inside the
/// folder can redirect the store elsewhere.
///
/// The folder is the store's only if it says so: a marker file `.haneke-store` (magic `HNKS` and
/// a format version) is written when a store creates the folder or finds it empty, and an existing
/// folder without one is refused. A store's folder must belong to the user running the process
/// and must not be writable by others (by the group only with `FolderAccess.ownerAndGroup`).
package final class StoreFolder: Sendable {
    /// What the folder is opened for.
    package enum Purpose: Equatable {
        /// A store: created when missing (with its parents), adopted when empty, ownership checked.
        case store
        /// Reading only (`haneke inspect`, `get`, `stats`, `verify`): must exist and be a store's;
        /// any owner.
        case inspection
        /// Removing files (`haneke verify --repair`): must exist and be a store's; ownership checked.
        case repair
    }

    /// The magic and format version at the start of the marker file.
    static let markerMagic: [UInt8] = Array("HNKS".utf8) + [1, 0, 0, 0]
    static let markerVersion: UInt8 = 1
    private static let markerText = Array("""

    This folder is a Haneke FileStore. Its files are named by the MD5 of their keys and are \
    managed by the store: it deletes them as it sees fit. Do not keep other files here.

    """.utf8)

    package let path: String
    package let access: FolderAccess
    private let current: Atomic<Int32>
    private let reopenings = Atomic<Int>(0)
    /// Descriptors of folders that were deleted behind the store's back, replaced by a new folder:
    /// closed only when the store goes, since another thread may still be using one. Held alone,
    /// never with a stripe lock or the index: ``reopenIfDeleted(_:)`` opens the new folder before
    /// taking it, and is reached only from a shard opened with `create` (outside any stripe lock)
    /// and from `forgetVanishedFile` before its stripe lock.
    private let retired = Locked<[Int32]>([])

    /// Opens (and for a store, creates) the folder at `path`.
    /// - Parameter afterReadingMarker: for tests, called each time the marker has been read (with
    ///   its bytes), before they are checked: to do what another store does at that moment.
    /// - Throws: `StoreError` with code `notAStore` for a folder that is not a store's,
    ///   `unsafeDirectory` for one that belongs to another user or others may write, `io` when it
    ///   cannot be created or opened.
    package init(path: String, access: FolderAccess, purpose: Purpose, afterReadingMarker: (@Sendable ([UInt8]) -> Void)? = nil) throws(StoreError) {
        self.path = path
        self.access = access
        self.current = Atomic(try Self.open(path, access: access, purpose: purpose, afterReadingMarker: afterReadingMarker))
    }

    deinit {
        POSIX.close(current.load(ordering: .acquiring))
        for descriptor in retired.withLock({ $0 }) { POSIX.close(descriptor) }
    }

    /// The folder's descriptor, the base of every `*at` call.
    package var descriptor: Int32 { current.load(ordering: .acquiring) }

    /// How many times the folder was opened again after being deleted behind the store's back.
    package var generation: Int { reopenings.load(ordering: .acquiring) }

    package func path(of name: String) -> String { path + "/" + name }

    // MARK: - Opening

    private static func open(_ path: String, access: FolderAccess, purpose: Purpose, afterReadingMarker: (@Sendable ([UInt8]) -> Void)? = nil) throws(StoreError) -> Int32 {
        var created = false
        if purpose == .store {
            do {
                try POSIX.makeFolders(atPath: POSIX.parentPath(of: path), mode: access.folderMode)
                created = mkdir(path, access.folderMode) == 0
                if !created, errno != EEXIST { throw POSIX.fail("mkdir", path) }
            } catch {
                throw StoreError.ioFailure("Could not create the store folder \(path)", error)
            }
        }
        let descriptor: Int32
        do {
            descriptor = try POSIX.openFolder(atPath: path)
        } catch {
            switch error.code {
            case ENOENT: throw StoreError.ioFailure("There is no folder at \(path)", error)
            case ENOTDIR: throw StoreError.ioFailure("\(path) is not a folder", error)
            default: throw StoreError.ioFailure("Could not open the folder \(path)", error)
            }
        }
        do {
            let status = try POSIX.status(of: descriptor, path: path)
            if created, access == .ownerAndGroup { _ = fchmod(descriptor, access.folderMode) }
            if purpose != .inspection { try checkOwnership(status, path: path, access: access) }
            try MarkerCheck(folder: descriptor, path: path, access: access, purpose: purpose, afterReading: afterReadingMarker).verify()
            return descriptor
        } catch let error as StoreError {
            POSIX.close(descriptor)
            throw error
        } catch {
            POSIX.close(descriptor)
            throw StoreError.ioFailure("Could not examine the folder \(path)", error)
        }
    }

    /// Refuses a folder that another user owns, or that others may write to (anyone who can write
    /// there could plant a value or replace a file).
    private static func checkOwnership(_ status: FileStatus, path: String, access: FolderAccess) throws(StoreError) {
        let user = POSIX.effectiveUserID
        guard status.owner == user else {
            throw StoreError(
                .unsafeDirectory,
                "\(path) belongs to user \(status.owner), not to user \(user) who runs this process; a store only uses a folder of its own user"
            )
        }
        let open = status.permissions & UInt32(access.forbiddenWriteBits)
        guard open == 0 else {
            let who = open & 0o002 != 0 ? "every user" : "its group"
            let mode = String(status.permissions, radix: 8)
            let advice = access == .owner ? "; make it private (chmod go-w) or configure group access" : "; make it private to the group (chmod o-w)"
            throw StoreError(.unsafeDirectory, "\(path) can be written by \(who) (mode \(mode)), who could plant or replace cached values\(advice)")
        }
    }

    /// The names a store makes at the top of its folder (a `FileStore`'s and an `SQLiteStore`'s).
    private static let ownNames: Set<String> = Set([StoreNames.marker, StoreNames.journal, StoreNames.smallValues, StoreNames.changes] + StoreNames.smallValuesCompanions)

    /// Checks a folder's marker as it opens; writes one into an empty folder that a store opens.
    private struct MarkerCheck {
        let folder: Int32
        let path: String
        let access: FolderAccess
        let purpose: Purpose
        let afterReading: (@Sendable ([UInt8]) -> Void)?

        var markerPath: String { path + "/" + StoreNames.marker }

        /// Checks the marker, or writes one. `attempt` counts the times another store was seen
        /// making the folder's marker meanwhile.
        func verify(attempt: Int = 0) throws {
            let marker: Int32?
            do {
                marker = try POSIX.openFile(StoreNames.marker, in: folder, flags: O_RDONLY | O_NONBLOCK, path: markerPath)
            } catch {
                guard error.code == ELOOP else { throw error }
                throw StoreError(.notAStore, "\(markerPath) is a symbolic link, not a store's marker; refusing to use \(path)")
            }
            if let marker {
                let bytes: [UInt8]
                do {
                    defer { POSIX.close(marker) }
                    let status = try POSIX.status(of: marker, path: markerPath)
                    guard status.isFile, status.size <= 4096 else {
                        throw StoreError(.notAStore, "\(markerPath) is not a store's marker (not a small file); refusing to use \(path)")
                    }
                    bytes = try POSIX.readAll(marker, limit: status.size, path: markerPath)
                }
                afterReading?(bytes)
                try check(bytes, attempt: attempt)
                return
            }
            let (count, names) = try StoreFolder.namesInFolder(folder, path: path)
            if count == 0 {
                guard purpose == .store else {
                    throw StoreError(.notAStore, "\(path) is empty: it is not a store's folder (no \(StoreNames.marker))")
                }
                try write(replacing: false)
                return
            }
            // Another store (another process) made the marker between the open above and the
            // listing: only the stores' own names are there, the marker among them. Check it again.
            if names.contains(StoreNames.marker), count <= ownNames.count, names.allSatisfy(ownNames.contains), attempt < 3 {
                return try verify(attempt: attempt + 1)
            }
            let shown = names.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (count > 5 ? ", …" : "")
            throw StoreError(
                .notAStore,
                "\(path) holds \(count) file\(count == 1 ? "" : "s") or folder\(count == 1 ? "" : "s") (\(shown)) but no \(StoreNames.marker), so it is not a store's folder; a FileStore never adopts or cleans a folder that holds anything else: use a new or empty folder"
            )
        }

        /// Checks a marker's bytes: the magic and a version this code reads.
        private func check(_ bytes: [UInt8], attempt: Int) throws {
            if bytes.isEmpty {
                let (count, names) = try StoreFolder.namesInFolder(folder, path: path)
                // A store was interrupted between creating its marker and writing it, or another
                // store (a FileStore and an SQLiteStore opening one new folder at once) is writing
                // it now and may have made its first files already: only the stores' own names
                // are there.
                if purpose == .store, count <= ownNames.count, names.allSatisfy(ownNames.contains) {
                    try write(replacing: true)
                    return
                }
                // Or the other store wrote it after this one read it, then made files of its own
                // (shards, entries, temporary files) before the listing: a store writes its marker
                // before anything else, so the marker read again has its bytes.
                if attempt < 3 { return try verify(attempt: attempt + 1) }
                throw StoreError(.notAStore, "\(markerPath) is empty: it is not a Haneke store marker; refusing to use \(path)")
            }
            guard bytes.count >= markerMagic.count, bytes[0..<4].elementsEqual(markerMagic[0..<4]) else {
                throw StoreError(.notAStore, "\(markerPath) is not a Haneke store marker; refusing to use \(path)")
            }
            guard bytes[4] == markerVersion else {
                throw StoreError(.notAStore, "\(path) is a store of format version \(bytes[4]), which this version of Haneke cannot read (it reads version \(markerVersion))")
            }
        }

        private func write(replacing: Bool) throws {
            let descriptor: Int32
            if replacing {
                guard let opened = try POSIX.openFile(StoreNames.marker, in: folder, flags: O_WRONLY | O_NONBLOCK, path: markerPath) else {
                    return try write(replacing: false)
                }
                descriptor = opened
            } else {
                do {
                    descriptor = try POSIX.createExclusively(StoreNames.marker, in: folder, mode: access.fileMode, path: markerPath)
                } catch {
                    guard error.code == EEXIST else { throw error }
                    // Another store made it at the same moment: check theirs.
                    return try verify()
                }
            }
            defer { POSIX.close(descriptor) }
            if access == .ownerAndGroup { _ = fchmod(descriptor, access.fileMode) }
            try POSIX.append(descriptor, markerMagic + markerText, path: markerPath)
        }
    }

    /// How many names the folder holds, and the first few (escaped).
    private static func namesInFolder(_ folder: Int32, path: String) throws(POSIX.Failure) -> (count: Int, names: [String]) {
        var count = 0
        var names: [String] = []
        try POSIX.forEachName(in: folder, path: path) { name in
            count += 1
            if names.count < 5 { names.append(FileName(name).description) }
        }
        return (count, names.sorted())
    }

    // MARK: - The folder deleted behind the store's back

    /// Called when an operation relative to `failed` found something missing. If the folder itself
    /// has been deleted behind the store's back, opens it again — a new, empty store folder at the
    /// same path — and returns `true`, so that the operation can try again; `false` when the folder
    /// is still there.
    /// - Throws: `StoreError` when the folder cannot be made again, or someone else made one there
    ///   that is not a store's.
    package func reopenIfDeleted(_ failed: Int32) throws(StoreError) -> Bool {
        if descriptor != failed { return true }
        guard let status = try? POSIX.status(of: failed, path: path), status.links == 0 else { return false }
        let fresh = try Self.open(path, access: access, purpose: .store)
        retired.withLock { retired in
            if current.load(ordering: .acquiring) == failed {
                current.store(fresh, ordering: .releasing)
                reopenings.add(1, ordering: .releasing)
                retired.append(failed)
            } else {
                // Another thread opened it again first.
                POSIX.close(fresh)
            }
        }
        return true
    }

    // MARK: - Shards and files

    /// Opens the shard folder for `*at` calls, never through a link, creating it when `create` is
    /// set. `nil` when there is no such folder and it is not created — also when a link or a file
    /// has its name (nothing of the store's can be there); creating it then fails with `ENOTDIR`.
    /// Creating it opens the store's folder again if that was deleted.
    package func openShard(_ shard: String, create: Bool) throws -> Int32? {
        for _ in 0..<3 {
            let root = descriptor
            let opened: Int32?
            do {
                opened = try POSIX.openFolder(shard, in: root, path: self.path(of: shard))
            } catch {
                guard error.code == ENOTDIR, !create else { throw error }
                return nil
            }
            if let opened { return opened }
            guard create else { return nil }
            let made: Bool
            do {
                made = try POSIX.makeFolder(shard, in: root, mode: access.folderMode, path: self.path(of: shard))
            } catch {
                // ENOENT: the store's folder itself is gone.
                guard error.code == ENOENT, try reopenIfDeleted(root) else { throw error }
                continue
            }
            if made, access == .ownerAndGroup, let opened = try POSIX.openFolder(shard, in: root, forListing: true, path: self.path(of: shard)) {
                // Set the mode the umask may have narrowed, on the folder just made (not on a link).
                _ = fchmod(opened, access.folderMode)
                POSIX.close(opened)
            }
        }
        throw POSIX.fail("openat", self.path(of: shard), code: ENOENT)
    }

    /// Runs `body` with the shard folder's descriptor (see ``openShard(_:create:)``); `nil` when
    /// the shard does not exist and `create` is not set.
    package func withShard<T>(_ shard: String, create: Bool, _ body: (Int32) throws -> T) throws -> T? {
        guard let descriptor = try openShard(shard, create: create) else { return nil }
        defer { POSIX.close(descriptor) }
        return try body(descriptor)
    }

    /// Creates a new file `name` in `directory` with the store's file mode.
    package func createFile(_ name: String, in directory: Int32, path: @autoclosure () -> String) throws(POSIX.Failure) -> Int32 {
        let descriptor = try POSIX.createExclusively(name, in: directory, mode: access.fileMode, path: path())
        if access == .ownerAndGroup { _ = fchmod(descriptor, access.fileMode) }
        return descriptor
    }

    // MARK: - Walking

    /// Where something is in the folder: at its top, or in a shard folder.
    package struct Location: Hashable, Sendable {
        package var shard: UInt8?
        package var name: FileName

        package init(shard: UInt8?, name: FileName) {
            self.shard = shard
            self.name = name
        }
    }

    /// One thing the walk found.
    package enum Item {
        case marker(FileStatus)
        case journal(FileStatus)
        /// `SQLiteStore`'s database or one of its companion files, or the change counters: not the
        /// `FileStore`'s to count or remove.
        case smallValues(FileStatus?)
        case shard(UInt8, FileStatus)
        /// A regular file with an entry's name, in its shard.
        case entry(KeyDigest, FileStatus)
        /// A regular file with a temporary name, and the process that was writing it.
        case temporary(Location, writer: Int32, FileStatus)
        /// One of the store's names holding the wrong kind of thing: a link, a FIFO or a folder where
        /// an entry file should be, a file or a link where a shard folder should be. `nil` status:
        /// it vanished while the walk looked at it.
        case misplaced(Location, FileStatus?)
        /// A name that is not of the store's grammar.
        case foreign(Location, FileStatus?)
    }

    /// Walks the folder and its shard folders, calling `visit` with each thing found and the
    /// descriptor of the folder it is in (for `unlinkat`). The one walk that opening a store,
    /// `inspect`, `verify` and `repair` share: they cannot disagree on what is the store's.
    /// - Performs disk I/O: one `fstatat` per name.
    package func walk(_ visit: (Item, _ directory: Int32) -> Void) throws(POSIX.Failure) {
        let root = descriptor
        var shards: [UInt8] = []
        try POSIX.forEachName(in: root, path: path) { name in
            let status = POSIX.status(of: POSIX.cString(name), in: root)
            let location = { Location(shard: nil, name: FileName(name)) }
            switch StoreNames.classifyInFolder(name) {
            case .shard(let shard):
                if let status, status.isFolder {
                    shards.append(shard)
                    visit(.shard(shard, status), root)
                } else {
                    visit(.misplaced(location(), status), root)
                }
            case .marker:
                visit(status?.isFile == true ? .marker(status!) : .misplaced(location(), status), root)
            case .journal:
                visit(status?.isFile == true ? .journal(status!) : .misplaced(location(), status), root)
            case .temporary(let writer):
                visit(status?.isFile == true ? .temporary(location(), writer: writer, status!) : .misplaced(location(), status), root)
            case .smallValues:
                visit(.smallValues(status), root)
            case .entry, .foreign:
                visit(.foreign(location(), status), root)
            }
        }
        for shard in shards {
            let name = StoreNames.shardName(shard)
            let opened: Int32?
            do {
                opened = try POSIX.openFolder(name, in: root, forListing: true, path: path(of: name))
            } catch {
                guard error.code == ENOTDIR || error.code == ELOOP else { throw error }
                // Swapped for something else since it was listed.
                visit(.misplaced(Location(shard: nil, name: FileName(name)), POSIX.status(of: name, in: root)), root)
                continue
            }
            guard let folder = opened else { continue }
            defer { POSIX.close(folder) }
            try POSIX.forEachName(in: folder, path: path(of: name)) { entryName in
                let status = POSIX.status(of: POSIX.cString(entryName), in: folder)
                let location = { Location(shard: shard, name: FileName(entryName)) }
                switch StoreNames.classifyInShard(entryName, shard: shard) {
                case .entry(let digest):
                    visit(status?.isFile == true ? .entry(digest, status!) : .misplaced(location(), status), folder)
                case .temporary(let writer):
                    visit(status?.isFile == true ? .temporary(location(), writer: writer, status!) : .misplaced(location(), status), folder)
                default:
                    visit(.foreign(location(), status), folder)
                }
            }
        }
    }
}

extension FolderAccess {
    /// The mode of the folders a store makes.
    var folderMode: mode_t {
        switch self {
        case .owner: 0o700
        case .ownerAndGroup: 0o2770
        }
    }

    /// The mode of the files a store makes.
    package var fileMode: mode_t {
        switch self {
        case .owner: 0o600
        case .ownerAndGroup: 0o660
        }
    }

    /// The write permissions an existing folder must not grant.
    var forbiddenWriteBits: mode_t {
        switch self {
        case .owner: 0o022
        case .ownerAndGroup: 0o002
        }
    }
}
