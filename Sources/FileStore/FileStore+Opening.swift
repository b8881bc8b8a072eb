import Foundation
import HanekeProtocols
import Logging

extension FileStore {
    /// An entry file found by a walk of the folder.
    struct FoundFile {
        var digest: KeyDigest
        var size: Int
        var allocated: Int
        var modified: Int64
        var identity: FileIdentity
    }

    /// The most one file counts for in the index (256 TiB): a sparse or hostile file cannot overflow
    /// the total size, and a file this large is over any capacity anyway.
    static let largestIndexedSize = 1 << 48

    /// A temporary file is abandoned when its writer is no longer running, or when it is over an
    /// hour old (its process id may have been reused).
    static func isAbandoned(writer: Int32, status: FileStatus, now: Int64) -> Bool {
        (writer != POSIX.processID && !POSIX.processExists(writer)) || status.modified < now - 3_600_000
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
}
