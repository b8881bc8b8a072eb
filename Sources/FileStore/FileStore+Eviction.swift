import Foundation
import HanekeProtocols
import Logging
import StoreFolders

/// Eviction: which entries leave the index when it is over its limits, and the deletion of their
/// files outside the index's lock.
extension FileStore {
    /// An empty index that evicts by the configuration's policy; the adaptive queues split the
    /// capacity in bytes (an entry weighs what it takes on disk), or else the count limit.
    /// It remembers what its adaptive queues move, for the journal (see ``removeEvicted(_:journaling:)``).
    static func makeIndex(_ configuration: Configuration) -> LRUList<KeyDigest, EntryRecord> {
        var index = LRUList<KeyDigest, EntryRecord>(
            policy: configuration.evictionPolicy, countLimit: configuration.countLimit, costLimit: configuration.capacity
        )
        index.tracksAdaptiveMoves()
        return index
    }

    /// Removes least recently used entries from the index until it is within the limits; returns
    /// them so their files can be deleted outside the lock.
    static func evict(_ entries: inout LRUList<KeyDigest, EntryRecord>, countLimit: Int?, capacity: Int?) -> [Victim] {
        var victims: [Victim] = []
        entries.evict(toCount: countLimit, toCost: capacity) { digest, record in
            victims.append(Victim(digest: digest, identity: record.identity))
        }
        return victims
    }

    /// `evict` to the configured count limit and to the capacity left after the metadata.
    func evictToLimits(_ state: inout IndexState) -> [Victim] {
        // While the index is incomplete, its order and its sizes are not the folder's: eviction
        // waits, and runs once when the index is complete.
        guard state.settledWhileIndexing == nil else { return [] }
        let metadataSize = state.metadataSize
        return Self.evict(&state.entries, countLimit: configuration.countLimit, capacity: configuration.capacity.map { entryCapacity($0, metadataSize: metadataSize) })
    }

    /// Deletes the files of evicted entries — unless the key was written or read again since it was
    /// evicted (it is then back in the index, and its file must stay), or the file at the path is no
    /// longer the one this store knew (another process has written it since). Must not be called
    /// with a stripe lock held.
    /// - Parameter journaling: Whether to journal the removals; opening does not, since it rewrites
    ///   the journal from the index afterwards.
    /// - Returns: The failures of the deletions that failed (each also logged and counted).
    @discardableResult
    func removeEvicted(_ victims: [Victim], journaling: Bool = true) -> [any Error] {
        guard !victims.isEmpty else { return [] }
        let time = now()
        // What the adaptive queues moved on the way (promotions, turns of the main queue) goes to
        // the journal first, so that a restart puts those entries back where they were.
        let moves = configuration.evictionPolicy == .adaptive ? state.withLock { $0.entries.takeAdaptiveMoves() } : []
        if journaling {
            for move in moves { journalRecord(.init(kind: .queue, digest: move.key, time: Int64(move.mark))) }
        }
        var failures: [any Error] = []
        for victim in victims {
            let outcome = stripe(for: victim.digest).withLock { _ -> Result<Bool, any Error> in
                guard !state.withLock({ $0.entries.contains(victim.digest, now: -.infinity) }) else { return .success(false) }
                return Result { try removeFile(of: victim.digest, ifStill: victim.identity) }
            }
            switch outcome {
            case .success(true):
                if journaling { journalRecord(.init(kind: .removal, digest: victim.digest, time: time)) }
            case .success(false):
                break
            case .failure(let error):
                failures.append(error)
                counter.recordError()
            }
        }
        if let first = failures.first {
            logger.warning("Could not delete evicted files", metadata: ["count": "\(failures.count)", "first": "\(first)"])
        }
        counter.recordEvictions(victims.count)
        return failures
    }

    /// Removes the entry file of `digest` if it is still the file `identity` names (any file when
    /// `nil`); `false` when there was nothing to remove or it was another file. Call with the
    /// key's stripe held.
    func removeFile(of digest: KeyDigest, ifStill identity: FileIdentity?) throws -> Bool {
        let name = digest.hex
        return try folder.withShard(digest.shard, create: false) { shard -> Bool in
            if let identity {
                guard let current = POSIX.status(of: name, in: shard), current.identity == identity else { return false }
            }
            return try POSIX.unlink(name, in: shard, path: path(for: digest))
        } ?? false
    }
}
