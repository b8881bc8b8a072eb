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
    /// - Throws: `StoreError` with code `notAStore`, `unsafeDirectory` or `io`, as `FileStore` does.
    package init(path: String, access: FileStore.Access, inspecting: Bool = false) throws(StoreError) {
        folder = try StoreFolder(path: path, access: access, purpose: inspecting ? .inspection : .store)
    }

    /// The folder as given.
    package var path: String { folder.path }

    /// The folder's path without links, checked to be the folder held open: what to give a library
    /// that opens files by path, so that a link swapped in for the folder (or for one of its
    /// parents) after it was checked is not followed to somewhere else.
    /// - Throws: `StoreError` with code `unsafeDirectory` when the path no longer leads to the
    ///   folder held open.
    package func resolvedPath() throws(StoreError) -> String {
        guard let resolved = realpath(folder.path, nil) else {
            throw StoreError(.io, "Could not resolve the path of \(folder.path)", posixCode: POSIXErrorCode(rawValue: errno))
        }
        defer { free(resolved) }
        let path = String(cString: resolved)
        guard let held = try? POSIX.status(of: folder.descriptor, path: folder.path),
              let found = path.withCString({ POSIX.status(of: $0, in: AT_FDCWD) }),
              held.identity == found.identity
        else {
            throw StoreError(.unsafeDirectory, "\(folder.path) no longer leads to the store folder that was opened (it was moved or replaced)")
        }
        return path
    }

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

    /// Refuses `name` when it exists and is not a regular file of one name.
    /// - Throws: `StoreError` with code `notAStore`.
    package func checkFile(_ name: String) throws(StoreError) {
        guard let status = name.withCString({ POSIX.status(of: $0, in: folder.descriptor) }) else { return }
        guard status.isFile, status.links == 1 else {
            let what = status.kind == .symbolicLink ? "a symbolic link" : status.isFile ? "a file with \(status.links) names" : "not a regular file"
            throw StoreError(.notAStore, "\(folder.path(of: name)) is \(what); the store makes only regular files of its own and follows no link")
        }
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
