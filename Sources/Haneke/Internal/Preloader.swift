import Foundation
import HanekeProtocols
import Logging
import MemoryStore
import StoreFolders

/// Fills a format's memory layer from its disk layers in the background (Haneke's preload policies).
enum Preloader {
    /// Reads the entries the policy selects from every disk engine of the format (the files and,
    /// when the format routes small values, the database), most recently used first over all of
    /// them, into `memory`, until it is full.
    static func run<Value: Sendable>(
        policy: PreloadPolicy,
        format: Format<Value>,
        engines: [any DiskEngine],
        memory: StampedMemory<Value>,
        decode: @Sendable (Data) throws -> Value,
        writes: WriteGate,
        logger: Logger
    ) async {
        // Each engine ready first (the files' store indexes its folder): suspended, as an executor
        // thread would otherwise wait for it.
        for engine in engines { await engine.waitUntilReady() }
        // The previous session as the engines that record sessions know it (the files' journal).
        let selection: PreloadSelection = policy == .lastSession
            ? .usedInLastSession(since: engines.compactMap(\.previousSessionStart).min())
            : .all
        // The lists are read on each engine's executor, not here.
        var lists: [[DiskInspection.Entry]] = []
        for engine in engines {
            lists.append((try? await engine.executor.run { try engine.entriesToPreload(selection) }) ?? [])
        }
        var loaded = 0
        for (index, entry) in mostRecentlyUsedFirst(lists) {
            if Task.isCancelled { break }
            if let limit = format.memoryCountLimit, memory.count >= limit { break }
            if let limit = format.memoryCostLimit, memory.totalCost >= limit { break }
            let mark = writes.mark(for: entry.key)
            // Before the read: a change another process makes after it makes the value stale.
            let tag = memory.counters.tag(forKey: entry.key)
            // The read runs on the engine's I/O queue, not on a cooperative thread, and gives way
            // to real requests between entries.
            guard !memory.containsValue(forKey: entry.key),
                  let stored = try? await engines[index].peekEntryOnExecutor(forKey: entry.key),
                  let value = try? decode(stored.value) else { continue }
            // A real request may have set, removed or filled the key meanwhile: never undo it.
            let inserted = await writes.ifUnchanged(entry.key, since: mark) { () -> Bool in
                guard !memory.containsValue(forKey: entry.key) else { return false }
                // With its expiry and time stored, so that it expires in memory when it does on disk.
                var attributes = stored.attributes
                attributes.expiresAt = attributes.expiresAt ?? entry.expires
                attributes.storedAt = attributes.storedAt ?? entry.created
                return (try? memory.setEntry(StoreEntry(value: value, attributes: attributes), forKey: entry.key, tag: tag)) != nil
            }
            if inserted == true { loaded += 1 }
            await Task.yield()
        }
        logger.debug("Preloaded values into memory", metadata: ["format": "\(format.name)", "count": "\(loaded)"])
    }

    /// The engines' lists merged into one, most recently used first: each list's own order kept,
    /// the next entry taken from the list whose next entry was used last (an unknown use counts as
    /// the oldest; a tie goes to the engine listed first).
    /// - Parameter lists: Each engine's entries, most recently used first.
    /// - Returns: Each entry with the index of its engine.
    static func mostRecentlyUsedFirst(_ lists: [[DiskInspection.Entry]]) -> [(engine: Int, entry: DiskInspection.Entry)] {
        var next = lists.map { _ in 0 }
        var merged: [(engine: Int, entry: DiskInspection.Entry)] = []
        merged.reserveCapacity(lists.reduce(0) { $0 + $1.count })
        while true {
            var chosen: (engine: Int, lastAccess: Date)?
            for engine in lists.indices where next[engine] < lists[engine].count {
                let lastAccess = lists[engine][next[engine]].lastAccess ?? .distantPast
                if chosen == nil || lastAccess > chosen!.lastAccess { chosen = (engine, lastAccess) }
            }
            guard let chosen else { return merged }
            merged.append((chosen.engine, lists[chosen.engine][next[chosen.engine]]))
            next[chosen.engine] += 1
        }
    }
}
