package import HanekeProtocols

#if canImport(Glibc)
import Glibc
#endif

/// A store folder as another backend of this package sees it (`SQLiteStore` keeps its database in
/// one): the same checks when it is opened — the marker, the owner, no write access for others —
/// and the same rules for the files it makes there: created private to the user, never through a
/// link. `package`, not public: it is no part of the API.
package struct SharedStoreFolder: Sendable {
    private let folder: StoreFolder

    /// Opens (for a store, creates) the store folder at `path`.
    /// - Parameters:
    ///   - path: The folder.
    ///   - access: Who may read and write the files.
    ///   - inspecting: Whether it is opened for reading only, by anyone (`haneke inspect`), rather
    ///     than for a store of this user.
    ///   - afterReadingMarker: For tests: called each time the marker has been read, with its
    ///     bytes, before they are checked.
    /// - Throws: `StoreError` with code `notAStore`, `unsafeDirectory` or `io`, as `FileStore` does.
    package init(path: String, access: FolderAccess, inspecting: Bool = false, afterReadingMarker: (@Sendable ([UInt8]) -> Void)? = nil) throws(StoreError) {
        folder = try StoreFolder(path: path, access: access, purpose: inspecting ? .inspection : .store, afterReadingMarker: afterReadingMarker)
    }

    /// The folder as given.
    package var path: String { folder.path }

    /// Creates the file `name` in the folder, private to the user (or the group, as configured),
    /// unless it exists. Whatever is there must be a regular file with one name: a link, a folder
    /// or a file with other names is refused.
    /// - Throws: `StoreError` with code `notAStore` for something that is not a regular file.
    package func prepareFile(_ name: String) throws(StoreError) {
        let path = folder.path(of: name)
        do {
            let descriptor = try folder.createFile(name, in: folder.descriptor, path: path)
            POSIX.close(descriptor)
            return
        } catch {
            guard error.code == EEXIST else { throw StoreError(.io, "Could not create \(path): \(error)", posixCode: error.posixCode) }
        }
        try checkFile(name)
    }

    /// Opens the file `name` of the folder for reading and writing, making it (private to the user,
    /// or the group, as configured) when it is not there, never through a link: a link, a folder or
    /// a file with other names is refused, also when swapped in between the check and the opening.
    /// - Returns: The descriptor, for the caller to close.
    /// - Throws: `StoreError` with code `notAStore` for something that is not a regular file of one
    ///   name, `io` when it cannot be opened.
    package func openFile(_ name: String) throws(StoreError) -> Int32 {
        try prepareFile(name)
        let path = folder.path(of: name)
        let opened: Int32?
        do {
            opened = try name.withCString { (name) throws(POSIX.Failure) in
                try POSIX.openFile(name, in: folder.descriptor, flags: O_RDWR, path: path)
            }
        } catch {
            throw StoreError(.io, "Could not open \(path): \(error)", posixCode: (error as? POSIX.Failure)?.posixCode)
        }
        guard let descriptor = opened else {
            throw StoreError(.io, "Could not open \(path): it was removed as it was opened", posixCode: .ENOENT)
        }
        let status = try? POSIX.status(of: descriptor, path: path)
        if let what = Self.refusal(of: status), status != nil {
            POSIX.close(descriptor)
            throw StoreError(.notAStore, "\(path) is \(what); the store makes only regular files of its own and follows no link")
        }
        return descriptor
    }

    /// Refuses `name` when it exists and is not a regular file of one name (a file whose last name
    /// is being removed as it is looked at counts as not there: see ``refusal(of:)``).
    /// - Throws: `StoreError` with code `notAStore`.
    package func checkFile(_ name: String) throws(StoreError) {
        let status = name.withCString { POSIX.status(of: $0, in: folder.descriptor) }
        if let what = Self.refusal(of: status) {
            throw StoreError(.notAStore, "\(folder.path(of: name)) is \(what); the store makes only regular files of its own and follows no link")
        }
    }

    /// Why a file found with `status` is refused, or `nil` when it may stay: when it is not there,
    /// or is a regular file of one name. A regular file of no name is one whose name was removed
    /// while it was looked at — SQLite deletes its log and the log's index when its last
    /// connection closes, which a store released just before may be doing on the executor — so
    /// there is nothing left at that name to refuse.
    package static func refusal(of status: FileStatus?) -> String? {
        guard let status else { return nil }
        if status.isFile, status.links <= 1 { return nil }
        return status.kind == .symbolicLink ? "a symbolic link" : status.isFile ? "a file with \(status.links) names" : "not a regular file"
    }

    /// A path to `name` in the folder that the kernel resolves from the descriptor held open —
    /// `/proc/self/fd/<n>/<name>` — never from the folder's path: what to give a library that
    /// opens, deletes and tests files by path (SQLite, through a VFS that keeps such names as they
    /// are), so that a parent folder renamed or replaced after the checks redirects nothing. Valid
    /// while this folder (and so its descriptor) lives.
    /// - Throws: `StoreError` with code `io` when `/proc` is not mounted, or does not lead to the
    ///   folder held open.
    package func descriptorPath(of name: String) throws(StoreError) -> String {
        let descriptor = folder.descriptor
        let base = "/proc/self/fd/\(descriptor)"
        guard let held = try? POSIX.status(of: descriptor, path: folder.path),
              let reached = POSIX.status(followingLinksOf: base),
              reached.identity == held.identity
        else {
            throw StoreError(.io, "Could not reach \(folder.path) through its descriptor (\(base)): is /proc mounted?", posixCode: POSIXErrorCode(rawValue: errno))
        }
        return base + "/" + name
    }

    /// Opens the folder again when it was deleted behind the store's back (a new, empty store
    /// folder at the same path); whether it did. The earlier descriptor stays open while this
    /// folder lives.
    /// - Throws: `StoreError` when the folder cannot be made again.
    package func reopenIfDeleted() throws(StoreError) -> Bool {
        try folder.reopenIfDeleted(folder.descriptor)
    }

    /// The identity (device and inode) of `name`, or `nil` when it is not there (a link is not
    /// followed).
    package func identity(of name: String) -> FileIdentity? {
        name.withCString { POSIX.status(of: $0, in: folder.descriptor) }.map(\.identity)
    }

    /// The length of `name` in bytes, or `nil` when it is not there (a link is not followed).
    package func length(of name: String) -> Int? {
        name.withCString { POSIX.status(of: $0, in: folder.descriptor) }.map(\.size)
    }

    /// The bytes `name` takes on disk (`du`'s count), or `nil` when it is not there.
    package func allocatedSize(of name: String) -> Int? {
        name.withCString { POSIX.status(of: $0, in: folder.descriptor) }.map(\.allocated)
    }

    /// Removes `name` from the folder when it is a regular file; whether it did.
    /// - Throws: `StoreError` with code `io` when it cannot.
    @discardableResult
    package func removeFile(_ name: String) throws(StoreError) -> Bool {
        guard let status = name.withCString({ POSIX.status(of: $0, in: folder.descriptor) }), status.isFile else { return false }
        let path = folder.path(of: name)
        do {
            return try name.withCString { try POSIX.unlink($0, in: folder.descriptor, path: path) }
        } catch {
            throw StoreError(.io, "Could not remove \(path): \(error)", posixCode: (error as? POSIX.Failure)?.posixCode)
        }
    }

    /// The high 64 bits of the MD5 of `key`: the name of its place in a store, as the whole MD5
    /// names its file in `FileStore`.
    package static func digestHigh(of key: String) -> UInt64 {
        KeyDigest(key: key).high
    }
}
