public import Foundation
@_spi(HanekeInternals) import HanekeProtocols
import Logging

extension FileStore {
    /// What a read-only walk of a store directory found (``inspect(directory:validatingPayloads:progress:)``).
    public struct Inspection: Sendable {
        /// The valid entries, most recently used first (by the recency journal, then by modification time).
        public var entries: [Entry]
        /// Everything that is wrong, one item per path.
        public var problems: [Problem]
        /// The number of entry files examined.
        public var filesExamined: Int
    }

    /// Something wrong in a store directory.
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// What kind of problem it is.
        public enum Kind: String, Sendable, Hashable, Codable {
            /// A file whose header, size or payload is damaged.
            case damaged
            /// A whole, valid file whose key does not hash to its name.
            case wrongName
            /// A link, folder, FIFO or other non-file where an entry file or a shard folder should be.
            case notAFile
            /// A temporary file of a writer that is gone, or a folder left by an interrupted `removeAll`.
            case leftover
            /// A file in a shard folder with a name no entry has.
            case foreign
        }

        /// The path of the offending file or folder.
        public var path: String
        /// What kind of problem it is.
        public var kind: Kind
        /// Why, in words.
        public var reason: String

        /// `"<kind>: <path>: <reason>"`.
        public var description: String { "\(kind.rawValue): \(path): \(reason)" }
    }

    /// Walks a store directory and checks every file — header, size, key against the file's name,
    /// and (with `validatingPayloads`) the payload — without changing anything: no clean-up, no
    /// eviction, no journal write. For tools (`haneke inspect`, `haneke verify`) and tests.
    /// - Parameters:
    ///   - directory: A store's directory.
    ///   - validatingPayloads: Checks an entry's payload and returns why it is damaged, or `nil`;
    ///     when given, every payload is read.
    ///   - progress: Called every 1,000 files with the number examined and the number found.
    /// - Returns: The entries and the problems.
    /// - Throws: `StoreError` with code `io` when the directory cannot be listed.
    /// - Performs disk I/O: a header (or whole-file) read per entry.
    public static func inspect(
        directory: String,
        validatingPayloads: ((Entry, Data) -> String?)? = nil,
        progress: ((_ examined: Int, _ total: Int) -> Void)? = nil
    ) throws -> Inspection {
        var problems: [Problem] = []
        var candidates: [(path: String, digest: KeyDigest, found: FoundFile)] = []
        let selfID = POSIX.processID
        do {
            var shards: [String] = []
            let exists = try POSIX.forEachEntry(in: directory) { name, folder in
                let path = directory + "/" + name
                if isShardName(name) {
                    if let status = POSIX.statusOf(name, inDirectory: folder), status.isDirectory {
                        shards.append(name)
                    } else {
                        problems.append(Problem(path: path, kind: .notAFile, reason: "a shard should be a folder"))
                    }
                } else if name.hasPrefix(".trash") {
                    problems.append(Problem(path: path, kind: .leftover, reason: "left by an interrupted removeAll"))
                }
            }
            guard exists else {
                throw StoreError(.io, "\(directory) does not exist")
            }
            for shard in shards {
                _ = try POSIX.forEachEntry(in: directory + "/" + shard) { name, folder in
                    let path = directory + "/" + shard + "/" + name
                    if name.utf8.count == 32, name.hasPrefix(shard), let digest = KeyDigest(hex: name) {
                        guard let status = POSIX.statusOf(name, inDirectory: folder), status.isFile else {
                            problems.append(Problem(path: path, kind: .notAFile, reason: "an entry's path holds something that is not a file"))
                            return
                        }
                        candidates.append((path, digest, FoundFile(digest: digest, size: status.size, modified: status.modified, identity: status.identity)))
                    } else if name.hasPrefix(".tmp.") {
                        let parts = name.split(separator: ".")
                        if parts.count < 2 || Int32(parts[1]).map({ $0 != selfID && !POSIX.processExists($0) }) ?? true {
                            problems.append(Problem(path: path, kind: .leftover, reason: "a temporary file whose writer is gone"))
                        }
                    } else {
                        problems.append(Problem(path: path, kind: .foreign, reason: "no entry has this name"))
                    }
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.io, "Could not list \(directory): \(error)", cause: error)
        }

        let journal = RecencyJournal.readRecords(directory: directory)
        let ordered = recencyOrder(of: candidates.map(\.found), journal: journal)
        var entries: [Entry] = []
        for (index, (file, lastAccess)) in ordered.reversed().enumerated() {
            if index % 1_000 == 0 { progress?(index, ordered.count) }
            let path = file.digest.path(in: directory)
            switch examine(path: path, digest: file.digest, readPayload: validatingPayloads != nil) {
            case .failure(let problem):
                problems.append(problem)
            case .success(let (header, key, payload)):
                let entry = Entry(
                    key: key,
                    path: path,
                    payloadSize: header.payloadLength,
                    storedSize: header.fileLength,
                    created: date(header.created),
                    expires: header.expires.map(date),
                    lastAccess: date(lastAccess)
                )
                if let validatingPayloads, let payload, let reason = validatingPayloads(entry, payload) {
                    problems.append(Problem(path: path, kind: .damaged, reason: reason))
                } else {
                    entries.append(entry)
                }
            }
        }
        progress?(ordered.count, ordered.count)
        return Inspection(entries: entries, problems: problems, filesExamined: candidates.count)
    }

    /// Removes what the problems point at: files, links (never what they point to) and folders.
    /// - Parameter problems: Problems from ``inspect(directory:validatingPayloads:progress:)``.
    /// - Returns: How many paths were removed.
    /// - Throws: `StoreError` with code `io` for the first path that could not be removed.
    /// - Performs disk I/O.
    @discardableResult
    public static func repair(_ problems: [Problem]) throws -> Int {
        var removed = 0
        for problem in problems {
            do {
                try POSIX.removeTree(problem.path)
                removed += 1
            } catch {
                throw StoreError(.io, "Could not remove \(problem.path): \(error)", cause: error)
            }
        }
        return removed
    }

    /// The value stored for `key` in a store directory, read without opening a store (nothing is
    /// changed): the payload as written, which for a compressed store is an LZ4 frame.
    /// - Parameters:
    ///   - key: The key.
    ///   - directory: A store's directory.
    /// - Returns: The payload, or `nil` when there is no valid, unexpired entry for the key.
    /// - Throws: `StoreError` with code `corrupted` when the entry's file is damaged, `io` when it cannot be read.
    /// - Performs disk I/O.
    public static func payload(forKey key: String, inDirectory directory: String) throws -> Data? {
        let digest = KeyDigest(key: key)
        switch examine(path: digest.path(in: directory), digest: digest, readPayload: true) {
        case .success(let (header, storedKey, payload)):
            guard storedKey == key else { return nil }
            if let expires = header.expires, milliseconds(Date()) >= expires { return nil }
            return payload
        case .failure(let problem) where problem.kind == .notAFile && problem.reason == "nothing is there":
            return nil
        case .failure(let problem):
            throw StoreError(problem.kind == .notAFile ? .io : .corrupted, problem.description)
        }
    }

    /// Reads and checks one entry file: header, size, key against its name, and optionally the payload.
    private static func examine(path: String, digest: KeyDigest, readPayload: Bool) -> Result<(EntryHeader, String, Data?), Problem> {
        func problem(_ kind: Problem.Kind, _ reason: String) -> Result<(EntryHeader, String, Data?), Problem> {
            .failure(Problem(path: path, kind: kind, reason: reason))
        }
        let descriptor: Int32
        do {
            switch try POSIX.openEntry(path) {
            case .file(let opened): descriptor = opened
            case .missing: return problem(.notAFile, "nothing is there")
            case .symbolicLink: return problem(.notAFile, "a symbolic link")
            }
        } catch {
            return problem(.notAFile, "\(error)")
        }
        defer { POSIX.close(descriptor) }
        do {
            let size = try POSIX.size(of: descriptor, path: path)
            var reader = try WholeFileReader(descriptor: descriptor, path: path, expectedSize: min(size, readPayload ? WholeFileReader.firstReadLimit : 4096))
            defer { reader.deallocate() }
            guard try reader.ensure(EntryHeader.fixedSize) else { return problem(.damaged, "\(size) bytes, shorter than a header") }
            let header: EntryHeader
            do {
                header = try EntryHeader.decode(reader.bytes(0..<EntryHeader.fixedSize))
            } catch {
                return problem(.damaged, "\(error)")
            }
            guard size == header.fileLength else {
                return problem(.damaged, "\(size) bytes, but the header announces \(header.fileLength)")
            }
            guard try reader.ensure(header.length) else { return problem(.damaged, "truncated in its key") }
            guard let key = String(validating: reader.bytes(EntryHeader.fixedSize..<header.length), as: UTF8.self) else {
                return problem(.damaged, "the stored key is not valid UTF-8")
            }
            guard KeyDigest(key: key) == digest else {
                return problem(.wrongName, "holds key \(Logger.describe(key)), whose MD5 is \(KeyDigest(key: key).hex)")
            }
            guard readPayload else { return .success((header, key, nil)) }
            guard try reader.ensure(header.fileLength) else { return problem(.damaged, "truncated in its payload") }
            return .success((header, key, reader.takePayload(offset: header.length, count: header.payloadLength)))
        } catch where error.isNotARegularFile {
            return problem(.notAFile, "\(error)")
        } catch {
            return problem(.damaged, "\(error)")
        }
    }
}
