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
        logger: Logger
    ) async {
        var entries = disk.entries()   // most recently used first
        if policy == .lastSession {
            guard let start = disk.lastSessionStart else { return }
            entries = entries.filter { ($0.lastAccess ?? .distantPast) >= start }
        }
        var loaded = 0
        for entry in entries {
            if Task.isCancelled { break }
            if let limit = format.memoryCountLimit, memory.count >= limit { break }
            if let limit = format.memoryCostLimit, memory.totalCost >= limit { break }
            // Give way to real requests between entries.
            await Task.yield()
            guard !memory.containsValue(forKey: entry.key),
                  let payload = try? FileStore.payload(forKey: entry.key, inDirectory: disk.directory),
                  let value = try? decode(payload) else { continue }
            // A real request may have filled or changed the key meanwhile: never replace it.
            guard !memory.containsValue(forKey: entry.key) else { continue }
            memory.setValue(value, forKey: entry.key)
            loaded += 1
        }
        logger.debug("Preloaded values into memory", metadata: ["format": "\(format.name)", "count": "\(loaded)"])
    }
}
