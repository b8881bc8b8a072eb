// A fixed piece of work on FileStore for `valgrind --tool=callgrind`, which counts instructions the
// same way on every run however busy the machine (file timings swing widely here):
//
//   FileProbe DIR get|set KEYS OPERATIONS       4 KiB values; DIR must not exist yet
//
// Run it with OPERATIONS = 0 and with OPERATIONS = N: the difference, divided by N, is the cost of
// one operation in user space and in the system-call entry (the kernel's own work is not counted).
import FileStore
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 5, let keyCount = Int(arguments[3]), let operations = Int(arguments[4]), ["get", "set"].contains(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: FileProbe DIR get|set KEYS OPERATIONS\n".utf8))
    exit(2)
}
let keys = (0..<keyCount).map { "https://example.com/item/\($0)" }
let value = Data(repeating: 0x2A, count: 4096)
let store = try FileStore(directory: arguments[1], configuration: .init(capacity: nil))
for key in keys { try store.setValue(value, forKey: key) }
var found = 0
let start = ContinuousClock.now
for i in 0..<operations {
    let key = keys[(i &* 7919) % keyCount]
    if arguments[2] == "get" {
        if try store.value(forKey: key) != nil { found += 1 }
    } else {
        try store.setValue(value, forKey: key)
    }
}
let elapsed = ContinuousClock.now - start
// The count, then the time per operation (for timing runs; callgrind ignores it).
print(found, Double(elapsed.components.attoseconds) / 1e12 / Double(max(1, operations)) + Double(elapsed.components.seconds) * 1e6 / Double(max(1, operations)), "µs")
