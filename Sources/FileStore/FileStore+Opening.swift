import Foundation
@_spi(HanekeInternals) import HanekeProtocols
import Logging

extension FileStore {
    /// A file found when the store opened its directory.
    struct FoundFile {
        var digest: KeyDigest
        var size: Int
        var modified: Int64
        var identity: FileIdentity
    }

    /// The most one file counts for in the index (256 TiB): a sparse or hostile file cannot overflow
    /// the total size, and a file this large is over any capacity anyway.
    static let largestIndexedSize = 1 << 48

    /// Indexes the directory: lists every shard folder and `stat`s every entry file, replays the
    /// recency journal, orders the files by it (files the journal does not know — written by another
    /// process, or after the last flush before a crash — by their modification time), evicts what
    /// exceeds the limits, and rewrites the journal. Temporary files of crashed writers and folders
    /// left by an interrupted `removeAll` are deleted.
    func openDirectory() throws {
        do {
            try POSIX.makeDirectories(directory)
        } catch {
            throw StoreError(.io, "Could not create the FileStore directory \(directory): \(error)", cause: error)
        }
        let found: [FoundFile]
        do {
            found = try scanDirectory()
        } catch {
            throw StoreError(.io, "Could not index the FileStore directory \(directory): \(error)", cause: error)
        }
        let records = RecencyJournal.readRecords(directory: directory)
        let usedInLastSession = Self.usedSinceLastSessionRecord(records)
        lastSession.withLock { $0 = usedInLastSession }
        let ordered = Self.recencyOrder(of: found, journal: records)
        let victims = state.withLock { state in
            for (file, lastAccess) in ordered {
                state.entries.setValue(
                    EntryRecord(size: file.size, lastAccess: lastAccess, identity: file.identity),
                    forKey: file.digest, cost: file.size, expiry: .infinity
                )
            }
            return evictToLimits(&state.entries)
        }
        removeEvicted(victims, journaling: false)
        do {
            try journal.rewrite(with: currentRecencyRecords())
        } catch {
            logger.warning("Could not rewrite the recency journal", metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
    }

    /// The digests read or written after the journal's last session record (by record order, not
    /// by time, so clocks cannot blur it), minus those removed since.
    static func usedSinceLastSessionRecord(_ records: [RecencyJournal.Record]) -> Set<KeyDigest> {
        guard let start = records.lastIndex(where: { $0.kind == .session }) else { return [] }
        var used = Set<KeyDigest>()
        for record in records[(start + 1)...] {
            switch record.kind {
            case .access: used.insert(record.digest)
            case .removal: used.remove(record.digest)
            case .clear: used.removeAll()
            case .session: break
            }
        }
        return used
    }

    /// Orders files from least to most recently used: the journal's order for the files it knows,
    /// with the other files merged in by modification time. Returns each file with its last access.
    static func recencyOrder(of files: [FoundFile], journal: [RecencyJournal.Record]) -> [(FoundFile, Int64)] {
        var replay = LRUList<KeyDigest, Int64>()
        for record in journal {
            switch record.kind {
            case .access: replay.setValue(record.time, forKey: record.digest, cost: 0, expiry: .infinity)
            case .removal: replay.removeValue(forKey: record.digest)
            case .clear: replay.removeAll()
            case .session: break
            }
        }
        var byDigest = Dictionary(files.map { ($0.digest, $0) }, uniquingKeysWith: { first, _ in first })
        var known: [(FoundFile, Int64)] = []
        for digest in replay.keysByRecency.reversed() {
            if let file = byDigest.removeValue(forKey: digest) {
                known.append((file, replay.peekValue(forKey: digest) ?? file.modified))
            }
        }
        let unknown = byDigest.values.sorted { ($0.modified, $0.digest.high, $0.digest.low) < ($1.modified, $1.digest.high, $1.digest.low) }
            .map { ($0, $0.modified) }

        var merged: [(FoundFile, Int64)] = []
        merged.reserveCapacity(known.count + unknown.count)
        var i = 0
        var j = 0
        while i < known.count || j < unknown.count {
            if j == unknown.count || (i < known.count && known[i].1 <= unknown[j].1) {
                merged.append(known[i])
                i += 1
            } else {
                merged.append(unknown[j])
                j += 1
            }
        }
        return merged
    }

    /// Lists the entry files of every shard folder and cleans up what crashed writers left.
    private func scanDirectory() throws -> [FoundFile] {
        var found: [FoundFile] = []
        var shards: [String] = []
        var leftovers: [String] = []
        let selfID = POSIX.processID
        // File times are the system's, whatever clock the store was given.
        let staleAfter = Self.milliseconds(Date()) - 3_600_000
        _ = try POSIX.forEachEntry(in: directory) { name, folder in
            if Self.isShardName(name) {
                // A shard folder must be a real folder: a link could lead reads and writes elsewhere.
                if let status = POSIX.statusOf(name, inDirectory: folder), status.isDirectory {
                    shards.append(name)
                } else {
                    logger.warning("Ignoring a shard that is not a folder", metadata: ["path": "\(directory)/\(name)"])
                }
            } else if name.hasPrefix(".trash") {
                leftovers.append(directory + "/" + name)
            } else if name.hasPrefix(RecencyJournal.fileName + ".tmp."),
                      let pid = Int32(name.dropFirst(RecencyJournal.fileName.count + 5)),
                      pid != selfID, !POSIX.processExists(pid) {
                leftovers.append(directory + "/" + name)
            }
        }
        for folder in leftovers {
            do {
                try POSIX.removeTree(folder)
            } catch {
                logger.warning("Could not remove a leftover", metadata: ["path": "\(folder)", "error": "\(error)"])
            }
        }
        for shard in shards {
            _ = try POSIX.forEachEntry(in: directory + "/" + shard) { name, folder in
                if name.utf8.count == 32, name.hasPrefix(shard), let digest = KeyDigest(hex: name) {
                    if let status = POSIX.statusOf(name, inDirectory: folder), status.isFile {
                        found.append(FoundFile(
                            digest: digest,
                            size: min(status.size, Self.largestIndexedSize),
                            modified: status.modified,
                            identity: status.identity
                        ))
                    }
                } else if name.hasPrefix(".tmp."), Self.isAbandonedTemporary(name, inDirectory: folder, selfID: selfID, staleAfter: staleAfter) {
                    POSIX.unlink(name, inDirectory: folder)
                }
            }
        }
        return found
    }

    /// A temporary file `.tmp.<pid>.<n>` is abandoned when its writer is no longer running, or
    /// when it is over an hour old (its process id may have been reused).
    private static func isAbandonedTemporary(_ name: String, inDirectory folder: Int32, selfID: Int32, staleAfter: Int64) -> Bool {
        let parts = name.split(separator: ".")
        guard parts.count >= 2, let pid = Int32(parts[1]) else { return true }
        if pid != selfID, !POSIX.processExists(pid) { return true }
        guard let status = POSIX.statusOf(name, inDirectory: folder) else { return false }
        return status.modified < staleAfter
    }
}
