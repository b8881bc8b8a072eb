import Foundation
import FileStore
import HanekeProtocols
import Logging
import MemoryStore

/// Fills a format's memory layer from its disk layer in the background (Haneke's preload policies).
enum Preloader {
    static func run<Value: Sendable>(
        policy: PreloadPolicy,
        format: Format<Value>,
        disk: FileStore,
        memory: MemoryStore<String, Value>,
        decode: @Sendable (Data) throws -> Value,
        writes: WriteGate,
        logger: Logger
    ) async {
        // Most recently used first; the headers are read on the disk's executor, not here.
        await disk.waitUntilIndexed()   // suspends; an executor thread would otherwise wait for it
        let entries = (try? await disk.executor.run { policy == .lastSession ? disk.entriesUsedInLastSession() : disk.entries() }) ?? []
        var loaded = 0
        for entry in entries {
            if Task.isCancelled { break }
            if let limit = format.memoryCountLimit, memory.count >= limit { break }
            if let limit = format.memoryCostLimit, memory.totalCost >= limit { break }
            let mark = writes.mark(for: entry.key)
            // The read runs on the disk's I/O queue, not on a cooperative thread, and gives way to
            // real requests between entries.
            guard !memory.containsValue(forKey: entry.key),
                  let payload = try? await disk.peekValue(forKey: entry.key),
                  let value = try? decode(payload) else { continue }
            // A real request may have set, removed or filled the key meanwhile: never undo it.
            let inserted = await writes.ifUnchanged(entry.key, since: mark) { () -> Bool in
                guard !memory.containsValue(forKey: entry.key) else { return false }
                memory.setValue(value, forKey: entry.key)
                return true
            }
            if inserted == true { loaded += 1 }
            await Task.yield()
        }
        logger.debug("Preloaded values into memory", metadata: ["format": "\(format.name)", "count": "\(loaded)"])
    }
}
