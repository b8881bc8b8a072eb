public import Foundation
public import HanekeProtocols
import Logging
import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

extension FileStore {
    /// What a read-only walk of a store folder found (``inspect(directory:validatingPayloads:progress:)``).
    public struct Inspection: Sendable {
        /// The valid entries, most recently used first (by the recency journal, then by modification time).
        public var entries: [Entry]
        /// Everything that is wrong, one item per path.
        public var problems: [Problem]
        /// The number of entry files examined.
        public var filesExamined: Int
        /// The bytes the store's marker and journal take on disk.
        public var metadataSize: Int
        /// The bytes the folder and its shard folders take on disk.
        public var foldersSize: Int
        /// The store folder inspected.
        var directory: String
        /// The file each valid entry was read from (device and inode), by the entry's path: a
        /// problem ``markDamaged(_:)`` makes of an entry removes that file, not one that replaced it since.
        var identities: [String: FileIdentity] = [:]

        /// Moves entries to the problems as damaged: for a payload check that can judge a payload
        /// only once it has seen every payload (`haneke verify --payloads auto`, which decides by
        /// the majority whether payloads must be LZ4 frames), so that one walk reads each file once.
        /// A repair of such a problem removes the file examined, not one that replaced it since.
        /// - Parameter reasons: Why each damaged entry is damaged, by the entry's path; entries not
        ///   named stay valid.
        public mutating func markDamaged(_ reasons: [String: String]) {
            guard !reasons.isEmpty else { return }
            var valid: [Entry] = []
            for entry in entries {
                guard let reason = reasons[entry.path] else {
                    valid.append(entry)
                    continue
                }
                let digest = KeyDigest(key: entry.key)
                let location = StoreFolder.Location(shard: digest.firstByte, name: FileName(digest.hex))
                problems.append(Problem(folder: directory, location: location, identity: identities[entry.path], isFolder: false, kind: .damaged, reason: reason))
            }
            entries = valid
        }
    }

    /// Something wrong in a store folder.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// What kind of problem it is.
        public enum Kind: String, Sendable, Hashable, Codable {
            /// A file whose header, size or payload is damaged.
            case damaged
            /// A whole, valid file whose key does not hash to its name.
            case wrongName
            /// A link, folder, FIFO or other non-file where an entry file should be, or something
            /// other than a folder where a shard folder should be.
            case notAFile
            /// A temporary file of a writer that is gone.
            case leftover
            /// A name the store never makes.
            case foreign
        }

        /// The path of the offending file or folder (bytes that are not UTF-8 shown as `\xFF`).
        public var path: String
        /// What kind of problem it is.
        public var kind: Kind
        /// Why, in words.
        public var reason: String

        /// The store folder it was found in.
        var folder: String
        /// Where in the folder, by the bytes of its name.
        var location: StoreFolder.Location
        /// The file found, so that a repair removes that file and not one that replaced it since.
        var identity: FileIdentity?
        var isFolder: Bool

        init(folder: String, location: StoreFolder.Location, status: FileStatus?, kind: Kind, reason: String) {
            self.init(folder: folder, location: location, identity: status?.identity, isFolder: status?.isFolder ?? false, kind: kind, reason: reason)
        }

        init(folder: String, location: StoreFolder.Location, identity: FileIdentity?, isFolder: Bool, kind: Kind, reason: String) {
            self.folder = folder
            self.location = location
            self.identity = identity
            self.isFolder = isFolder
            self.kind = kind
            self.reason = reason
            let shard = location.shard.map { StoreNames.shardName($0) + "/" } ?? ""
            self.path = folder + "/" + shard + location.name.description
        }

        /// `"<kind>: <path>: <reason>"`.
        public var description: String { "\(kind.rawValue): \(path): \(reason)" }
    }

    /// What ``repair(_:removingForeignFiles:)`` did.
    public struct Repair: Sendable {
        /// The problems whose file (or empty folder) was removed.
        public var removed: [Problem]
        /// The problems left as they are, and why.
        public var kept: [Kept]

        /// A problem a repair left alone.
        public struct Kept: Sendable, Hashable {
            /// The problem.
            public var problem: Problem
            /// Why it was kept.
            public var reason: String
        }
    }

    /// Walks a store folder and checks every file — header, size, key against the file's name,
    /// and (with `validatingPayloads`) the payload — without changing anything: no clean-up, no
    /// eviction, no journal write. For tools (`haneke inspect`, `haneke verify`) and tests. The walk
    /// and the file reader are the ones a store uses when it opens and reads, so they agree on what
    /// is the store's and what is valid.
    /// - Parameters:
    ///   - directory: A store's folder.
    ///   - validatingPayloads: Checks an entry's payload and returns why it is damaged, or `nil`;
    ///     when given, every payload is read.
    ///   - progress: Called every 1,000 files with the number examined and the number found.
    /// - Returns: The entries and the problems.
    /// - Throws: `StoreError` with code `notAStore` when the folder is not a store's, `io` when it
    ///   cannot be listed.
    /// - Performs disk I/O: a header (or whole-file) read per entry.
    public static func inspect(
        directory: String,
        validatingPayloads: ((Entry, Data) -> String?)? = nil,
        progress: ((_ examined: Int, _ total: Int) -> Void)? = nil
    ) throws -> Inspection {
        let folder = try StoreFolder(path: directory, access: .ownerAndGroup, purpose: .inspection)
        var problems: [Problem] = []
        var candidates: [FoundFile] = []
        var metadataSize = 0
        var foldersSize = (try? POSIX.status(of: folder.descriptor, path: directory).allocated) ?? 0
        let now = milliseconds(Date())
        func problem(_ location: StoreFolder.Location, _ status: FileStatus?, _ kind: Problem.Kind, _ reason: String) {
            problems.append(Problem(folder: directory, location: location, status: status, kind: kind, reason: reason))
        }
        do {
            try folder.walk { item, _ in
                switch item {
                case .marker(let status), .journal(let status):
                    metadataSize += status.allocated
                case .shard(_, let status):
                    foldersSize += status.allocated
                case .smallValues:
                    break   // SQLiteStore's: it inspects its own database
                case .entry(let digest, let status):
                    candidates.append(FoundFile(digest: digest, size: status.size, allocated: status.allocated, modified: status.modified, identity: status.identity))
                case .temporary(let location, let writer, let status):
                    if isAbandoned(writer: writer, status: status, now: now) {
                        problem(location, status, .leftover, "a temporary file whose writer is gone")
                    }
                case .misplaced(let location, let status):
                    problem(location, status, .notAFile, "\(describe(status)) where the store keeps \(location.shard == nil ? "a folder or its own file" : "an entry file")")
                case .foreign(let location, let status):
                    problem(location, status, .foreign, "\(describe(status)) with a name the store never makes")
                }
            }
        } catch {
            throw ioError("Could not list \(directory)", error)
        }

        let journal = RecencyJournal.readRecords(in: folder)
        let ordered = recencyOrder(of: candidates, journal: journal)
        var entries: [Entry] = []
        var identities: [String: FileIdentity] = [:]
        for (index, (file, lastAccess, _)) in ordered.reversed().enumerated() {
            if index % 1_000 == 0 { progress?(index, ordered.count) }
            let path = file.digest.path(in: directory)
            let location = StoreFolder.Location(shard: file.digest.firstByte, name: FileName(file.digest.hex))
            let examined: EntryFile.Outcome<Examined>
            do {
                guard case .file(let descriptor) = try POSIX.openEntry(in: folder.descriptor, file.digest, path: path) else {
                    continue   // vanished, or swapped for a link, since the walk
                }
                defer { POSIX.close(descriptor) }
                examined = try EntryFile.read(descriptor, path: path, knownSize: nil, extent: validatingPayloads == nil ? .header : .whole, sizeLimit: nil) { header, reader in
                    guard let key = reader.key(header: header) else { return .keyNotUTF8 }
                    guard KeyDigest(key: key) == file.digest else { return .wrongName(key) }
                    let entry = Entry(
                        key: key,
                        path: path,
                        payloadSize: header.payloadLength,
                        storedSize: header.fileLength,
                        allocatedSize: file.allocated,
                        created: date(header.created),
                        expires: header.expires.map(date),
                        lastAccess: date(lastAccess),
                        metadataSize: header.metadataLength
                    )
                    return .valid(entry, validatingPayloads == nil ? nil : reader.takePayload(header: header))
                }
            } catch {
                let kind: Problem.Kind = error.isNotARegularFile ? .notAFile : .damaged
                problems.append(Problem(folder: directory, location: location, identity: file.identity, isFolder: false, kind: kind, reason: "\(error)"))
                continue
            }
            func entryProblem(_ kind: Problem.Kind, _ reason: String) {
                problems.append(Problem(folder: directory, location: location, identity: file.identity, isFolder: false, kind: kind, reason: reason))
            }
            switch examined {
            case .damaged(let damage):
                entryProblem(.damaged, "\(damage)")
            case .entry(.keyNotUTF8):
                entryProblem(.damaged, "\(EntryFile.Damage.keyNotUTF8)")
            case .entry(.wrongName(let key)):
                entryProblem(.wrongName, "holds key \(Logger.describe(key)), whose MD5 is \(KeyDigest(key: key).hex)")
            case .entry(.valid(let entry, let payload)):
                if let validatingPayloads, let payload, let reason = validatingPayloads(entry, payload) {
                    entryProblem(.damaged, reason)
                } else {
                    entries.append(entry)
                    identities[path] = file.identity
                }
            }
        }
        progress?(ordered.count, ordered.count)
        return Inspection(entries: entries, problems: problems, filesExamined: candidates.count, metadataSize: metadataSize, foldersSize: foldersSize, directory: directory, identities: identities)
    }

    /// What examining a whole, valid entry file found.
    private enum Examined {
        case valid(Entry, Data?)
        case wrongName(String)
        case keyNotUTF8
    }

    private static func describe(_ status: FileStatus?) -> String {
        switch status?.kind {
        case nil: "something that vanished"
        case .file?: "a file"
        case .folder?: "a folder"
        case .symbolicLink?: "a symbolic link"
        case .other?: "a FIFO, socket or device"
        }
    }

    /// Removes what the problems point at, where that is the store's to remove: damaged and
    /// misnamed entry files, temporary files of writers that are gone, and links or FIFOs at entry
    /// names; folders at entry names only when empty (`rmdir`, never recursive); foreign files in
    /// shard folders only with `removingForeignFiles`. Nothing at the top of the folder that the
    /// store did not make, and nothing inside a folder it did not make, is ever removed. Every
    /// removal goes through the folder's descriptors (no link followed) and removes only the file
    /// the inspection found (not one that replaced it since).
    /// - Parameters:
    ///   - problems: Problems from ``inspect(directory:validatingPayloads:progress:)``.
    ///   - removingForeignFiles: Whether to remove files with names the store never makes, inside
    ///     its shard folders.
    /// - Returns: What was removed and what was kept, and why.
    /// - Throws: `StoreError` with code `notAStore` or `unsafeDirectory` for a folder the caller
    ///   may not repair; `io` for the first path that could not be removed.
    /// - Performs disk I/O.
    public static func repair(_ problems: [Problem], removingForeignFiles: Bool = false) throws -> Repair {
        var repair = Repair(removed: [], kept: [])
        for (directory, group) in Dictionary(grouping: problems, by: \.folder).sorted(by: { $0.key < $1.key }) {
            let folder = try StoreFolder(path: directory, access: .ownerAndGroup, purpose: .repair)
            for problem in group {
                if let reason = reasonToKeep(problem, removingForeignFiles: removingForeignFiles) {
                    repair.kept.append(Repair.Kept(problem: problem, reason: reason))
                    continue
                }
                do {
                    if let reason = try remove(problem, in: folder) {
                        repair.kept.append(Repair.Kept(problem: problem, reason: reason))
                    } else {
                        repair.removed.append(problem)
                    }
                } catch {
                    throw ioError("Could not remove \(problem.path)", error)
                }
            }
        }
        return repair
    }

    /// Why a problem is not the store's to repair, or `nil` when it is.
    private static func reasonToKeep(_ problem: Problem, removingForeignFiles: Bool) -> String? {
        guard problem.location.shard != nil || problem.kind == .leftover else {
            return "not the store's: it only removes its own files at the top of its folder"
        }
        switch problem.kind {
        case .damaged, .wrongName, .leftover, .notAFile:
            return nil
        case .foreign:
            if problem.isFolder { return "a folder the store did not make: it never removes what is inside" }
            return removingForeignFiles ? nil : "a file the store did not make (removed only when asked to remove foreign files)"
        }
    }

    /// Removes one problem's file; returns why it was kept instead, or `nil` when it was removed.
    private static func remove(_ problem: Problem, in folder: StoreFolder) throws -> String? {
        let removal: () throws -> String? = {
            let directory: Int32
            var shardDescriptor: Int32?
            if let shard = problem.location.shard {
                guard let opened = try folder.openShard(StoreNames.shardName(shard), create: false) else { return "gone already" }
                shardDescriptor = opened
                directory = opened
            } else {
                directory = folder.descriptor
            }
            defer { if let shardDescriptor { POSIX.close(shardDescriptor) } }
            return try problem.location.name.withCString { name throws -> String? in
                guard let status = POSIX.status(of: name, in: directory) else { return "gone already" }
                if let identity = problem.identity, status.identity != identity { return "replaced since it was examined" }
                if status.isFolder {
                    return try POSIX.removeEmptyFolder(name, in: directory, path: problem.path) ? nil : "a folder that is not empty: the store never removes what is inside a folder it did not make"
                }
                return try POSIX.unlink(name, in: directory, path: problem.path) ? nil : "gone already"
            }
        }
        do {
            return try removal()
        } catch let failure as POSIX.Failure where failure.code == ENOTDIR {
            return "its shard folder is not a folder"
        }
    }

    /// The value stored for `key` in a store folder, read without opening a store (nothing is
    /// changed): the payload as written, which for a compressed store is an LZ4 frame.
    /// - Parameters:
    ///   - key: The key.
    ///   - directory: A store's folder.
    ///   - clock: What time it is, for the entry's expiry; the system clock by default.
    /// - Returns: The payload, or `nil` when there is no valid, unexpired entry for the key.
    /// - Throws: `StoreError` with code `corrupted` when the entry's file is damaged, `notAStore`
    ///   when the folder is not a store's, `io` when it cannot be read.
    /// - Performs disk I/O.
    public static func payload(forKey key: String, inDirectory directory: String, clock: any StoreClock = SystemClock()) throws -> Data? {
        let folder = try StoreFolder(path: directory, access: .ownerAndGroup, purpose: .inspection)
        let digest = KeyDigest(key: key)
        let path = digest.path(in: directory)
        let now = milliseconds(clock.now())
        let outcome: EntryFile.Outcome<Data?>
        do {
            switch try POSIX.openEntry(in: folder.descriptor, digest, path: path) {
            case .missing:
                return nil
            case .symbolicLink:
                throw StoreError(.corrupted, "\(path) is a symbolic link, not an entry file")
            case .file(let descriptor):
                defer { POSIX.close(descriptor) }
                outcome = try EntryFile.read(descriptor, path: path, knownSize: nil, extent: .whole, sizeLimit: nil) { header, reader in
                    reader.hasKey(key, header: header) && !header.isExpired(at: now) ? reader.takePayload(header: header) : nil
                }
            }
        } catch let error as StoreError {
            throw error
        } catch let failure as POSIX.Failure where failure.isNotARegularFile {
            throw StoreError(.corrupted, "\(path) is not a regular file", cause: failure, posixCode: failure.posixCode)
        } catch {
            throw ioError("Could not read \(path)", error)
        }
        switch outcome {
        case .entry(let payload): return payload
        case .damaged(let damage): throw StoreError(.corrupted, "\(path) is damaged: \(damage)")
        }
    }
}
