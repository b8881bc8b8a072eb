import Foundation
import HanekeProtocols
import Logging
import StoreFolders

// Eviction without an index: rows sampled in windows from random ids, the victims the oldest
// quarter of the sample by the configuration's policy (LRU, or the adaptive small and main queues).
extension SQLiteStore {
    /// The rows one read of a sample takes, in id order from a random id.
    static let evictionWindow = 64
    /// How many times the rows it deletes eviction samples: it deletes the least recently used
    /// quarter of its sample.
    static let evictionOversampling = 4
    /// The most rows one round samples (a trim to a small size deletes in several rounds).
    static let evictionSampleLimit = 4_096
    /// A row's mark in the small queue, unread (the policy's columns: see `Database.policyColumns`).
    static let smallQueueMark = SmallQueueBalance.smallQueueBit

    /// The mark and queue time of a row written at `now` whose key, value and metadata take
    /// `size` bytes: under the adaptive policy, the main queue for a key the ghost says proved
    /// itself, the small queue otherwise; under LRU, always the small queue (so that a store opened
    /// later with the adaptive policy finds every row in a queue).
    func admission(_ state: inout State, id: Int64, size: Int, at now: Int64) -> (mark: UInt8, queued: Int64) {
        let toMain = state.balance?.admitsToMain(hash: Int(truncatingIfNeeded: id), cost: Self.pagesBytes(ofRow: size), count: 0, totalCost: 0) ?? false
        return (toMain ? 0 : Self.smallQueueMark, state.nextQueued(at: now))
    }

    /// Deletes rows in the order of the configuration's eviction policy, as far as a sample shows,
    /// until the pages in use and the log's room fit `size`, and returns free pages to the file
    /// system when the file alone is over it.
    ///
    /// There is no index of uses or queues (keeping one up to date cost about 3 µs of every
    /// write). Each round samples ``evictionOversampling`` times the rows it needs to delete —
    /// windows of ``evictionWindow`` rows in id order from pseudo-random ids, and ids are hashes,
    /// so the sample is random — and takes its victims from the oldest quarter of the sample:
    /// under LRU the least recently used rows, under the adaptive policy the oldest rows of each
    /// queue (see ``evictAdaptively(_:from:toFree:budget:size:used:)``). A store of no more rows than a
    /// window evicts in exact order.
    func evict(_ state: inout State, toFit size: Int) throws {
        var pages = try state.database.pages()
        var used = (pages.total - pages.free) * Self.pageSize + reserve
        guard used > size || pages.total * Self.pageSize + reserve > size else { return }
        if used > size {
            try state.writeUses()
            // Down to 95 % of the limit, so that the next writes do not each evict again.
            var excess = used - size + size / 20
            var evicted = 0
            // In transactions of a bounded number of rows (random rows: each may be on a page
            // of its own), each followed by a checkpoint when due, so that the log stays within
            // the room kept for it.
            let rowsPerTransaction = state.database.rowsPerTransaction
            while excess > 0 {
                let (deleted, changed) = try state.database.transaction { () -> (deleted: Int, changed: Int) in
                    var deleted = 0
                    var changed = 0
                    while excess > 0, changed < rowsPerTransaction {
                        let sample = try evictionSample(&state, forBytes: excess)
                        if sample.isEmpty { break }
                        let budget = rowsPerTransaction - changed
                        let round = state.balance == nil
                            ? try evictLeastRecentlyUsed(&state, from: sample, toFree: &excess, budget: budget)
                            : try evictAdaptively(&state, from: sample, toFree: &excess, budget: budget, size: size, used: used - reserve)
                        deleted += round.deleted
                        changed += round.deleted + round.moved
                        if round.deleted + round.moved == 0 { break }
                    }
                    return (deleted, changed)
                }
                evicted += deleted
                if changed == 0 { break }
            }
            counter.recordEvictions(evicted)
            pages = try state.database.pages()
            used = (pages.total - pages.free) * Self.pageSize + reserve
        }
        if pages.total * Self.pageSize + reserve > size {
            try state.database.releaseFreePages()
        }
    }

    /// What one round of eviction did: the rows it deleted, and the rows it moved between queues.
    private typealias EvictionRound = (deleted: Int, moved: Int)

    /// Deletes the least recently used quarter of `sample` (at most `budget` rows), until
    /// `excess` bytes are freed.
    private func evictLeastRecentlyUsed(
        _ state: inout State, from sample: [Database.SampledRow], toFree excess: inout Int, budget: Int
    ) throws -> EvictionRound {
        let count = min(max(1, sample.count / Self.evictionOversampling), budget)
        var deleted = 0
        for row in sample.sorted(by: { ($0.used, $0.id) < ($1.used, $1.id) }).prefix(count) where excess > 0 {
            try state.database.delete(id: row.id)
            excess -= Self.pagesBytes(ofRow: row.size)
            deleted += 1
        }
        return (deleted, 0)
    }

    /// The adaptive policy's round (S3-FIFO with a ghost-balanced small queue, as `MemoryStore`
    /// keeps it, over a sample): the oldest quarter of the sample's rows of each queue, oldest
    /// first. While the small queue holds at least its share of the capacity (estimated from the
    /// sample's share of bytes in it, of the `used` bytes of rows), its rows go first: one read while in it moves to the main
    /// queue, one unread is deleted and remembered in the ghost; otherwise the main queue's rows
    /// go round again with their counter decremented, or are deleted at zero. Moves are written
    /// to the row, so a restart finds the queues as they were.
    private func evictAdaptively(
        _ state: inout State, from sample: [Database.SampledRow], toFree excess: inout Int, budget: Int, size: Int, used: Int
    ) throws -> EvictionRound {
        guard var balance = state.balance else { return (0, 0) }
        defer { state.balance = balance }
        func oldestQuarter(_ rows: [Database.SampledRow]) -> ArraySlice<Database.SampledRow> {
            rows.sorted { ($0.queued, $0.id) < ($1.queued, $1.id) }.prefix(max(1, rows.count / Self.evictionOversampling))
        }
        let sampledBytes = sample.reduce(0) { $0 + Self.pagesBytes(ofRow: $1.size) }
        let small = oldestQuarter(sample.filter { $0.mark & Self.smallQueueMark != 0 })
        let main = oldestQuarter(sample.filter { $0.mark & Self.smallQueueMark == 0 })
        let sampledSmallBytes = sample.reduce(0) { $0 + ($1.mark & Self.smallQueueMark != 0 ? Self.pagesBytes(ofRow: $1.size) : 0) }
        var smallBytes = Int(Double(used) * Double(sampledSmallBytes) / Double(max(1, sampledBytes)))
        let rowsLeft = used / max(1, sampledBytes / sample.count)
        var (nextSmall, nextMain) = (small.startIndex, main.startIndex)
        var round: EvictionRound = (0, 0)
        while excess > 0, round.deleted + round.moved < budget, nextSmall < small.endIndex || nextMain < main.endIndex {
            let fromSmall = nextSmall < small.endIndex && (smallBytes >= balance.smallTarget(of: size) || nextMain == main.endIndex)
            let row: Database.SampledRow
            if fromSmall {
                row = small[nextSmall]
                nextSmall += 1
            } else {
                row = main[nextMain]
                nextMain += 1
            }
            let bytes = Self.pagesBytes(ofRow: row.size)
            let counter = row.mark & SmallQueueBalance.counterMask
            if fromSmall { smallBytes -= bytes }
            if counter > 0 {
                // Promoted with its counter, or once round the main queue with one less.
                try state.database.requeue(id: row.id, mark: fromSmall ? counter : counter - 1, queued: state.nextQueued(at: now()))
                round.moved += 1
            } else {
                try state.database.delete(id: row.id)
                balance.recordEviction(hash: Int(truncatingIfNeeded: row.id), cost: bytes, fromMain: !fromSmall, liveCount: rowsLeft)
                excess -= bytes
                round.deleted += 1
            }
        }
        return round
    }

    /// The bytes of pages a row of `size` key and value bytes takes: its bytes and about 1 % of
    /// them for the B-tree around them.
    static func pagesBytes(ofRow size: Int) -> Int { size + size / 100 + 16 }

    /// Rows sampled at random for eviction: enough windows to hold ``evictionOversampling`` times
    /// the rows that free `bytes` (at most ``evictionSampleLimit``), or the whole table when it
    /// is that small.
    private func evictionSample(_ state: inout State, forBytes bytes: Int) throws -> [Database.SampledRow] {
        var sample: [Int64: Database.SampledRow] = [:]
        var wanted = 1
        var sampledBytes = 0
        while sample.count < wanted {
            let before = sample.count
            for row in try state.database.window(from: Int64(bitPattern: state.evictionStarts.next()), limit: Self.evictionWindow)
            where sample.updateValue(row, forKey: row.id) == nil {
                sampledBytes += Self.pagesBytes(ofRow: row.size)
            }
            // A window that adds nothing has gone round a table no larger than the sample.
            guard sample.count > before else { break }
            wanted = min(Self.evictionSampleLimit, Self.evictionOversampling * (bytes / max(1, sampledBytes / sample.count) + 1))
        }
        return Array(sample.values)
    }
}
