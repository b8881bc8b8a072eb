// A fixed piece of work on MemoryStore or on a Dictionary behind the same lock, for
// `valgrind --tool=cachegrind`, which counts instructions and simulated cache misses the same way on
// every run, however busy the machine (workload 1's timings swing by a third from run to run):
//
//   MemoryProbe store|dictionary get|set KEYS OPERATIONS
//   MemoryProbe store evict KEYS OPERATIONS     (a store full at KEYS entries; each write of a new key
//                                               evicts the least recently used)
//
// Run it with OPERATIONS = 0 and with OPERATIONS = N: the difference, divided by N, is the cost of
// one operation (scripts in BENCHMARKS.md).
import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore

let arguments = CommandLine.arguments
guard arguments.count == 5, let keyCount = Int(arguments[3]), let operations = Int(arguments[4]),
      ["store", "dictionary"].contains(arguments[1]), ["get", "set", "evict"].contains(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: MemoryProbe store|dictionary get|set|evict KEYS OPERATIONS\n".utf8))
    exit(2)
}
let keys = (0..<keyCount).map { "https://example.com/item/\($0)" }
let value = Data(repeating: 0x2A, count: 4096)
var random = SeededRandomNumberGenerator(seed: 7)
let order = (0..<operations).map { _ in Int.random(in: 0..<keyCount, using: &random) }
let store = MemoryStore<String, Data>(countLimit: arguments[2] == "evict" ? keyCount : keyCount * 2)
let dictionary = Locked<[String: Data]>([:])
let useStore = arguments[1] == "store"
for key in keys {
    if useStore { store.setValue(value, forKey: key) } else { dictionary.withLock { $0[key] = value } }
}
var found = 0
switch (useStore, arguments[2]) {
case (true, "get"): for i in order where store.value(forKey: keys[i]) != nil { found += 1 }
case (false, "get"): for i in order where dictionary.withLock({ $0[keys[i]] }) != nil { found += 1 }
case (true, "evict"): for i in 0..<operations { store.setValue(value, forKey: "https://example.com/new/\(i)") }
case (true, _): for i in order { store.setValue(value, forKey: keys[i]) }
default: for i in order { dictionary.withLock { $0[keys[i]] = value } }
}
print(found)
