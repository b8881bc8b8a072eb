// CustomStack: memory → LZ4-compressed files → a fetcher of your own, assembled by hand.
//
//   swift run CustomStack

import Foundation
import Haneke

/// A source of original values: here a slow computation (a report on the divisors of a number),
/// standing in for a database, an API or a renderer.
struct DivisorReportFetcher: Fetcher {
    func fetch(_ key: String) async throws -> Data {
        guard let number = Int(key), number > 0 else {
            throw StoreError(.notFound, "\"\(key)\" is not a positive number")
        }
        try await Task.sleep(for: .milliseconds(30))   // the source is slow
        let divisors = (1...number).filter { number % $0 == 0 }
        let report = "\(number) has \(divisors.count) divisors: " + divisors.map(String.init).joined(separator: ", ") + "\n"
        return Data(String(repeating: report, count: 20).utf8)   // repetitive: LZ4 will shrink it
    }
}

// A folder of this run's own (a fixed name in the shared temporary folder could be someone else's).
let folder = NSTemporaryDirectory() + "haneke-custom-stack-\(UUID().uuidString.prefix(8))"
defer { try? FileManager.default.removeItem(atPath: folder) }
let memory = MemoryStore<String, Data>(countLimit: 100, name: "memory")
let disk = try FileStore(directory: folder, configuration: .init(capacity: 10 << 20), name: "disk").compressed()
let reports = memory
    .chained(to: disk)
    .fetching(from: DivisorReportFetcher())

func show(_ key: String) async throws {
    let start = ContinuousClock.now
    let report = try await reports.fetch(key)
    let firstLine = String(decoding: report, as: UTF8.self).split(separator: "\n").first ?? ""
    let elapsed = (ContinuousClock.now - start).formatted(.units(allowed: [.milliseconds, .microseconds], width: .narrow))
    print("  \(key.padding(toLength: 6, withPad: " ", startingAt: 0)) \(elapsed.padding(toLength: 12, withPad: " ", startingAt: 0)) \(firstLine.prefix(60))")
}

print("first fetches come from the fetcher, then from memory:")
for key in ["360", "1024", "360"] { try await show(key) }

print("\nwith memory cleared, from the compressed files in \(folder):")
memory.removeAll()
for key in ["360", "1024"] { try await show(key) }

print("\na bad key is the fetcher's error, and is not cached:")
do { _ = try await reports.fetch("minus one") } catch { print("  \(error)") }

print("\nper layer:")
for layer in reports.layerStatistics { print("  \(layer)") }
print("  compression: \(disk.compressionStatistics)")
try await reports.removeAll()
