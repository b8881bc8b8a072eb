// Workload 10's child: one of several processes writing and reading one store folder at once.
//
//   SharedWriter ENGINE DIR CAPACITY OPERATIONS SEED
//
// Opens an SQLiteStore (ENGINE sqlite) or a FileStore (ENGINE files) in DIR with CAPACITY bytes,
// prints "ready", waits for a line on its standard input (so that every writer starts together),
// then runs OPERATIONS operations on 2,000 keys: 70 % sets of 2,000-byte values, 30 % gets, chosen
// from SEED. Prints one line of JSON: the seconds taken and each kind's median and 99th percentile
// in µs. `Peer/diskcache_writer.py` does the same with python-diskcache.

import FileStore
import Foundation
import SQLiteStore

let arguments = CommandLine.arguments
guard arguments.count == 6, ["sqlite", "files"].contains(arguments[1]), let capacity = Int(arguments[3]),
      let operations = Int(arguments[4]), let seed = UInt64(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: SharedWriter sqlite|files DIR CAPACITY OPERATIONS SEED\n".utf8))
    exit(2)
}
let sqlite = arguments[1] == "sqlite" ? try SQLiteStore(directory: arguments[2], configuration: .init(capacity: capacity)) : nil
let files = arguments[1] == "files" ? try FileStore(directory: arguments[2], configuration: .init(capacity: capacity)) : nil
var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
/// xorshift64: the same choices on every run.
func next(_ state: inout UInt64) -> UInt64 {
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    return state
}
let value = Data((0..<2_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
FileHandle.standardOutput.write(Data("ready\n".utf8))
_ = readLine()
var sets: [Double] = []
var gets: [Double] = []
sets.reserveCapacity(operations)
gets.reserveCapacity(operations)
let start = ContinuousClock.now
for _ in 0..<operations {
    let key = "key-\(next(&state) % 2_000)"
    let isSet = next(&state) % 10 < 7
    let began = ContinuousClock.now
    if isSet {
        if let sqlite { try sqlite.setValue(value, forKey: key) } else { try files!.setValue(value, forKey: key) }
    } else {
        if let sqlite { _ = try sqlite.value(forKey: key) } else { _ = try files!.value(forKey: key) }
    }
    let elapsed = ContinuousClock.now - began
    let micros = Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
    if isSet { sets.append(micros) } else { gets.append(micros) }
}
let total = ContinuousClock.now - start
func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
say("{\"seconds\": \(seconds), \"setP50\": \(percentile(sets, 0.5)), \"setP99\": \(percentile(sets, 0.99)), \"getP50\": \(percentile(gets, 0.5)), \"getP99\": \(percentile(gets, 0.99))}")

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
