// QuickStart: a two-layer cache in front of a slow source, printing where every value came from.
//
//   swift run QuickStart

import Foundation
import Formats
import HanekeProtocols
import MemoryStore

/// A value type added by conformance alone: the Codable bridge supplies both methods.
struct Greeting: Codable, Hashable, Sendable, DataConvertible, DataRepresentable {
    var text: String
    var language: String
}

// A small hot layer of values, a larger warm layer of bytes, and a source of originals.
let hot = MemoryStore<String, Greeting>(countLimit: 2, name: "hot")
let warm = MemoryStore<String, Data>(costLimit: 1 << 20, name: "warm")
let greetings = hot
    .chained(to: warm.coded(as: Greeting.self))
    .fetching { name in
        try await Task.sleep(for: .milliseconds(20))   // a slow source: the network, a database
        return Greeting(text: "Hello, \(name)!", language: "en")
    }

/// The name of the layer whose hits went up between two snapshots.
func source(before: [LayerStatistics], after: [LayerStatistics]) -> String {
    for (old, new) in zip(before, after) where new.statistics.hits > old.statistics.hits {
        return new.name
    }
    return "nowhere"
}

print("fetching greetings through hot (2 entries) → warm → fetcher\n")
for name in ["alice", "alice", "bob", "carol", "alice", "bob", "dave", "carol"] {
    let before = greetings.layerStatistics
    let start = ContinuousClock.now
    let greeting = try await greetings.fetch(name)
    let elapsed = ContinuousClock.now - start
    let from = source(before: before, after: greetings.layerStatistics)
    print("  \(name.padding(toLength: 6, withPad: " ", startingAt: 0)) → \(greeting.text.padding(toLength: 16, withPad: " ", startingAt: 0)) from \(from.padding(toLength: 8, withPad: " ", startingAt: 0)) in \(elapsed.formatted(.units(allowed: [.milliseconds, .microseconds], width: .narrow)))")
}

print("\nper layer:")
for layer in greetings.layerStatistics {
    print("  \(layer)")
}

// Ten concurrent requests for one new key share one call to the source (single flight).
let fetchesBefore = greetings.layerStatistics.last?.statistics.hits ?? 0
try await withThrowingTaskGroup(of: Greeting.self) { group in
    for _ in 0..<10 { group.addTask { try await greetings.fetch("erin") } }
    for try await _ in group {}
}
let fetchesAfter = greetings.layerStatistics.last?.statistics.hits ?? 0
print("\n10 concurrent fetches of \"erin\" called the source \(fetchesAfter - fetchesBefore) time(s)")
