// Writes KEYS distinct keys of 1 KiB values through one server driver and prints the process's
// resident memory once the first key is written and at its peak, for the benchmark of bounded memory
// (`scripts/bench-server-memory`, BENCHMARKS.md) and its smoke test:
//
//   ServerMemoryProbe haneke-hummingbird|haneke-vapor|hummingbird-memory|vapor-memory KEYS FOLDER [MEMORY_LIMIT [PHASE]]
//
// The Haneke drivers keep MEMORY_LIMIT bytes of values in memory (64 MiB by default) and the rest
// on disk in FOLDER; Hummingbird's MemoryPersistDriver and Vapor's `.memory` keep everything in
// memory. PHASE `write` (the default) writes the keys, reads the last 1,000 back, shuts the driver
// down gracefully and prints one line: `baseline <bytes> peak <bytes> readable <count>`. PHASE
// `restart` is the process after it: it opens the same FOLDER, reads every key back and prints
// `readable <count>`.
#if Hummingbird && Vapor
import Foundation
import HanekeHummingbird
import HanekeServer
import HanekeVapor
import Hummingbird
import Vapor

let arguments = CommandLine.arguments
guard arguments.count >= 4, let keys = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: ServerMemoryProbe DRIVER KEYS FOLDER [MEMORY_LIMIT]\n".utf8))
    exit(2)
}
let folder = arguments[3]
let memoryLimit = arguments.count > 4 ? Int(arguments[4]) ?? 64 << 20 : 64 << 20
let restarting = arguments.count > 5 && arguments[5] == "restart"

/// The process's resident set now and at its peak, in bytes (`/proc/self/status`).
func residentMemory() -> (now: Int, peak: Int) {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first { Int($0) != nil } ?? "0") ?? 0) * 1_024
    }
    return (field("VmRSS"), field("VmHWM"))
}

/// A 1 KiB value, distinct for each key.
func value(_ index: Int) -> String {
    let prefix = "value \(index) "
    return prefix + String(repeating: "x", count: 1_024 - prefix.utf8.count)
}

// The disk keeps every key: a million values of 1 KiB pass the default 1 GiB.
let configuration = KeyValueCache.Configuration(memoryCostLimit: memoryLimit, diskCapacity: 4 << 30)
let set: (String, String) async throws -> Void
let get: (String) async throws -> String?
/// The driver's graceful shutdown.
let shutdown: () async throws -> Void
switch arguments[1] {
case "haneke-hummingbird":
    let driver = HanekePersistDriver(name: "probe", directory: folder, configuration: configuration)
    set = { try await driver.set(key: $0, value: $1, expires: nil) }
    get = { try await driver.get(key: $0, as: String.self) }
    shutdown = { try await driver.shutdown() }
case "hummingbird-memory":
    let driver = MemoryPersistDriver()
    set = { try await driver.set(key: $0, value: $1, expires: nil) }
    get = { try await driver.get(key: $0, as: String.self) }
    shutdown = {}
case "haneke-vapor", "vapor-memory":
    let app = try await Vapor.Application.make(.testing)
    if arguments[1] == "haneke-vapor" { app.caches.use(.haneke(name: "probe", directory: folder, configuration: configuration)) }
    let cache = app.cache
    // Vapor's `Cache` is not Sendable: its future-returning methods are called here, on the main
    // actor, and only the futures are awaited.
    set = { try await cache.set($0, to: $1).get() }
    get = { try await cache.get($0, as: String.self).get() }
    // The provider's lifecycle handler flushes the cache.
    shutdown = { try await app.asyncShutdown() }
default:
    FileHandle.standardError.write(Data("unknown driver \(arguments[1])\n".utf8))
    exit(2)
}
if restarting {
    var readable = 0
    for index in 0..<keys where try await get("key-\(index)") == value(index) {
        readable += 1
    }
    print("readable \(readable)")
    try await shutdown()
    exit(0)
}
// The baseline is taken once the driver has opened what it opens on first use (a Haneke cache's
// disk layers, its I/O threads): what follows is what the keys cost.
try await set("key-0", value(0))
let baseline = residentMemory().now
for index in 1..<keys {
    try await set("key-\(index)", value(index))
}
var readable = 0
for index in max(0, keys - 1_000)..<keys where try await get("key-\(index)") == value(index) {
    readable += 1
}
print("baseline \(baseline) peak \(residentMemory().peak) readable \(readable)")
try await shutdown()
#else
print("Build with the Hummingbird and Vapor traits (make test does)")
#endif
