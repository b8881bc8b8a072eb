// A fixed piece of work on MemoryStore, on a Dictionary behind the same kind of lock, or on a chain
// read hot, for `valgrind --tool=cachegrind`, which counts instructions and simulated cache misses
// the same way on every run, however busy the machine (workload 1's timings swing by a third from
// run to run):
//
//   MemoryProbe store|dictionary get|set KEYS OPERATIONS
//   MemoryProbe store evict KEYS OPERATIONS     (a store full at KEYS entries; each write of a new key
//                                               evicts the least recently used)
//   MemoryProbe chain get KEYS OPERATIONS       (workload 4's hot read: `fetch` through memory →
//                                               memory → fetcher, every key in the top layer, from
//                                               one task)
//   MemoryProbe http hit KEYS OPERATIONS        (`haneke proxy`'s hit decision: a stored response
//                                               read from memory, judged by the shared policy
//                                               and made into the answer, as the proxy does on
//                                               the connection's event loop)
//
// Run it with OPERATIONS = 0 and with OPERATIONS = N: the difference, divided by N, is the cost of
// one operation (scripts in BENCHMARKS.md, "Reproduce").
import BaselineLock
import Foundation
import HanekeProtocols
import HanekeTesting
import HTTPCaching
import MemoryStore

let arguments = CommandLine.arguments
guard arguments.count == 5, let keyCount = Int(arguments[3]), let operations = Int(arguments[4]),
      ["store", "dictionary", "chain", "http"].contains(arguments[1]), ["get", "set", "evict", "hit"].contains(arguments[2]),
      arguments[1] == "store" || arguments[2] != "evict", arguments[1] != "chain" || arguments[2] == "get",
      (arguments[1] == "http") == (arguments[2] == "hit") else {
    FileHandle.standardError.write(Data("usage: MemoryProbe store|dictionary get|set|evict KEYS OPERATIONS; MemoryProbe chain get KEYS OPERATIONS; MemoryProbe http hit KEYS OPERATIONS\n".utf8))
    exit(2)
}
let keys = (0..<keyCount).map { "https://example.com/item/\($0)" }
let value = Data(repeating: 0x2A, count: 4096)
var random = SeededRandomNumberGenerator(seed: 7)
let order = (0..<operations).map { _ in Int.random(in: 0..<keyCount, using: &random) }
let store = MemoryStore<String, Data>(countLimit: arguments[2] == "evict" ? keyCount : keyCount * 2)
let dictionary = PthreadLocked<[String: Data]>([:])
let useStore = arguments[1] != "dictionary"
for key in keys {
    if useStore { store.setValue(value, forKey: key) } else { dictionary.withLock { $0[key] = value } }
}
var found = 0
switch (arguments[1], arguments[2]) {
case ("store", "get"): for i in order where store.value(forKey: keys[i]) != nil { found += 1 }
case ("dictionary", "get"): for i in order where dictionary.withLock({ $0[keys[i]] }) != nil { found += 1 }
case ("chain", _):
    // Built as workload 4 builds it, but with a memory store for the file layer, which a hot read
    // never reaches. The loop runs in one task, so no read hops between executors; the main thread
    // waits on a semaphore rather than with a top-level `await` (valgrind 3.19 crashes when the main
    // thread parks in Swift's main executor).
    let chain = store.chained(to: MemoryStore<String, Data>(name: "bottom")).fetching { [value] _ in value }
    let result = PthreadLocked(0)
    let done = DispatchSemaphore(value: 0)
    Task.detached { [keys, order, value] in
        var found = 0
        for i in order where try await chain.fetch(keys[i]).count == value.count { found += 1 }
        result.withLock { [found] in $0 = found }
        done.signal()
    }
    done.wait()
    found = result.withLock { $0 }
case ("http", _):
    // The responses stored as the proxy stores them (a shared cache, a memory layer), from a task
    // the main thread waits for on a semaphore (see the chain above).
    let memory = MemoryStore<String, Data>(countLimit: keyCount * 2)
    let frontEnd = HTTPCacheFrontEnd(cache: HTTPCache(storage: memory, policy: HTTPCachePolicy(kind: .shared)))
    let fields: HTTPHeaderFields = ["Cache-Control": "max-age=3600", "ETag": "\"v1\"", "Content-Type": "application/json"]
    let done = DispatchSemaphore(value: 0)
    Task.detached { [keys, value] in
        for key in keys {
            _ = try? await frontEnd.cache.store(
                HTTPResponse(status: 200, headers: fields, body: value), for: HTTPCacheRequest(uri: key), requestTime: Date(), responseTime: Date()
            )
        }
        done.signal()
    }
    done.wait()
    let lookup: HTTPHeaderFields = ["Accept": "*/*", "User-Agent": "wrk"]
    for i in order where frontEnd.respondAtOnce(to: HTTPCacheRequest(uri: keys[i], headers: lookup), reading: { memory.entry(forKey: $0) }) != nil {
        found += 1
    }
case ("store", "evict"): for i in 0..<operations { store.setValue(value, forKey: "https://example.com/new/\(i)") }
case ("store", _): for i in order { store.setValue(value, forKey: keys[i]) }
default: for i in order { dictionary.withLock { $0[keys[i]] = value } }
}
print(found)
