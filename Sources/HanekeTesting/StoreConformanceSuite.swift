public import Foundation
public import HanekeProtocols

/// The behaviour every `Store` promises, checked in one call: run it against your own store to
/// know it can take the place of a built-in one.
///
/// ```swift
/// @Test func conformsToStore() async throws {
///     try await StoreConformanceSuite { MemoryStore<String, Data>() }.run()
/// }
/// ```
///
/// Each check gets a new store from `makeStore`, so stores that persist (files, a server) must
/// start empty every time (a new directory, a new namespace). The store must hold at least
/// ``manyKeysCount`` entries without evicting. `run()` performs every check and throws one
/// ``ConformanceFailure`` listing all that failed, so it works under swift-testing and XCTest alike.
public struct StoreConformanceSuite<S: Store>: Sendable where S.Value: Equatable {
    /// Makes a new, empty store for one check.
    public var makeStore: @Sendable () async throws -> S
    /// The key for an index; different indexes must give different keys.
    public var makeKey: @Sendable (Int) -> S.Key
    /// The value for an index; different indexes must give different values.
    public var makeValue: @Sendable (Int) -> S.Value
    /// How many keys the "many keys" check writes and reads back; 500 by default.
    public var manyKeysCount = 500
    /// How many tasks the concurrency check runs at once; 8 by default.
    public var concurrentTasks = 8
    /// How many operations each of those tasks performs; 200 by default.
    public var operationsPerTask = 200
    /// How many tasks add one key at once in the add-if-absent check; 100 by default.
    public var concurrentAdds = 100
    /// The clock the stores use, when the suite may move it: then it also checks that an entry
    /// expires when its time comes and that an expired entry counts as absent. `nil` by default
    /// (the lifetime checks use instants far in the past and the future).
    public var clock: TestClock?

    /// Creates a suite.
    /// - Parameters:
    ///   - makeKey: The key for an index; different indexes must give different keys.
    ///   - makeValue: The value for an index; different indexes must give different values.
    ///   - makeStore: Makes a new, empty store for one check.
    public init(
        makeKey: @escaping @Sendable (Int) -> S.Key,
        makeValue: @escaping @Sendable (Int) -> S.Value,
        makeStore: @escaping @Sendable () async throws -> S
    ) {
        self.makeKey = makeKey
        self.makeValue = makeValue
        self.makeStore = makeStore
    }

    /// The names of the checks, in the order `run()` performs them.
    public static var checkNames: [String] { checks.map(\.name) }

    /// Performs every check, each on a new store.
    /// - Throws: ``ConformanceFailure`` naming every check that failed and why.
    public func run() async throws {
        var failures: [ConformanceFailure.Failure] = []
        for check in Self.checks {
            do {
                let store = try await makeStore()
                try await check.body(self, store)
            } catch {
                failures.append(.init(check: check.name, problem: "\(error)"))
            }
        }
        if !failures.isEmpty {
            throw ConformanceFailure(storeType: "\(S.self)", failures: failures)
        }
    }

    // MARK: - Checks

    private struct Check {
        let name: String
        let body: (StoreConformanceSuite, S) async throws -> Void
    }

    private static var checks: [Check] {
        [
            Check(name: "a missing key reads as nil") { suite, store in
                try await suite.expectValue(nil, in: store, for: 0)
            },
            Check(name: "a value set is read back") { suite, store in
                try await store.setValue(suite.makeValue(1), forKey: suite.makeKey(1))
                try await suite.expectValue(1, in: store, for: 1)
            },
            Check(name: "the first sample value (empty, for the built-in samples) is kept, not a miss") { suite, store in
                try await store.setValue(suite.makeValue(0), forKey: suite.makeKey(2))
                try await suite.expectValue(0, in: store, for: 2)
            },
            Check(name: "setting again overwrites") { suite, store in
                try await store.setValue(suite.makeValue(1), forKey: suite.makeKey(1))
                try await store.setValue(suite.makeValue(2), forKey: suite.makeKey(1))
                try await suite.expectValue(2, in: store, for: 1)
            },
            Check(name: "keys are independent") { suite, store in
                for i in 0..<12 { try await store.setValue(suite.makeValue(i + 100), forKey: suite.makeKey(i)) }
                for i in 0..<12 { try await suite.expectValue(i + 100, in: store, for: i) }
            },
            Check(name: "a removed key reads as nil and others stay") { suite, store in
                try await store.setValue(suite.makeValue(1), forKey: suite.makeKey(1))
                try await store.setValue(suite.makeValue(2), forKey: suite.makeKey(2))
                try await store.removeValue(forKey: suite.makeKey(1))
                try await suite.expectValue(nil, in: store, for: 1)
                try await suite.expectValue(2, in: store, for: 2)
            },
            Check(name: "removing a missing key is a no-op") { suite, store in
                try await store.setValue(suite.makeValue(2), forKey: suite.makeKey(2))
                try await store.removeValue(forKey: suite.makeKey(1))
                try await store.removeValue(forKey: suite.makeKey(1))
                try await suite.expectValue(2, in: store, for: 2)
            },
            Check(name: "a removed key can be set again") { suite, store in
                try await store.setValue(suite.makeValue(1), forKey: suite.makeKey(1))
                try await store.removeValue(forKey: suite.makeKey(1))
                try await store.setValue(suite.makeValue(3), forKey: suite.makeKey(1))
                try await suite.expectValue(3, in: store, for: 1)
            },
            Check(name: "removeAll on an empty store is a no-op") { suite, store in
                try await store.removeAll()
                try await suite.expectValue(nil, in: store, for: 1)
            },
            Check(name: "removeAll empties the store and leaves it usable") { suite, store in
                for i in 0..<10 { try await store.setValue(suite.makeValue(i), forKey: suite.makeKey(i)) }
                try await store.removeAll()
                for i in 0..<10 { try await suite.expectValue(nil, in: store, for: i) }
                try await store.setValue(suite.makeValue(7), forKey: suite.makeKey(3))
                try await suite.expectValue(7, in: store, for: 3)
                try await store.removeAll()
                try await suite.expectValue(nil, in: store, for: 3)
            },
            Check(name: "many keys are all kept") { suite, store in
                for i in 0..<suite.manyKeysCount {
                    try await store.setValue(suite.makeValue(i), forKey: suite.makeKey(i))
                }
                for i in 0..<suite.manyKeysCount { try await suite.expectValue(i, in: store, for: i) }
            },
            Check(name: "concurrent tasks each read their own last write") { suite, store in
                try await suite.checkConcurrentAccess(store)
            },
            Check(name: "an entry keeps its expiry, time stored and metadata") { suite, store in
                let attributes = EntryAttributes(expiresAt: farFuture, storedAt: Date(timeIntervalSince1970: 1_700_000_000), metadata: Data("etag: \"v1\"".utf8))
                try await store.setEntry(StoreEntry(value: suite.makeValue(1), attributes: attributes), forKey: suite.makeKey(1))
                try await suite.expectValue(1, in: store, for: 1)
                guard let entry = try await store.entry(forKey: suite.makeKey(1)) else {
                    throw ConformanceFailure.Mismatch("entry(forKey:) missed an entry that value(forKey:) reads")
                }
                guard entry.value == suite.makeValue(1) else { throw ConformanceFailure.Mismatch("entry(forKey:) read another value") }
                try expectSame(entry.attributes, attributes, "entry(forKey:)")
                try expectSame(try await store.attributes(forKey: suite.makeKey(1)), attributes, "attributes(forKey:)")
            },
            Check(name: "an entry whose expiry has passed is a miss") { suite, store in
                try await store.setEntry(StoreEntry(value: suite.makeValue(1), expiresAt: farPast), forKey: suite.makeKey(1))
                try await suite.expectValue(nil, in: store, for: 1)
                guard try await store.entry(forKey: suite.makeKey(1)) == nil, try await store.attributes(forKey: suite.makeKey(1)) == nil else {
                    throw ConformanceFailure.Mismatch("an expired entry was still read")
                }
                if let clock = suite.clock {
                    try await store.setEntry(StoreEntry(value: suite.makeValue(2), expiresAt: clock.now().addingTimeInterval(60)), forKey: suite.makeKey(2))
                    clock.advance(by: .seconds(59))
                    try await suite.expectValue(2, in: store, for: 2)
                    clock.advance(by: .seconds(2))
                    try await suite.expectValue(nil, in: store, for: 2)
                }
            },
            Check(name: "metadata up to the limit is kept; more is refused with valueTooLarge") { suite, store in
                let most = Data((0..<EntryAttributes.metadataLimit).map { UInt8(truncatingIfNeeded: $0 &* 7) })
                try await store.setValue(suite.makeValue(1), forKey: suite.makeKey(1), expiresAt: nil, metadata: most)
                guard try await store.attributes(forKey: suite.makeKey(1))?.metadata == most else {
                    throw ConformanceFailure.Mismatch("\(most.count) bytes of metadata did not read back")
                }
                do {
                    try await store.setValue(suite.makeValue(2), forKey: suite.makeKey(2), expiresAt: nil, metadata: most + Data([0]))
                    throw ConformanceFailure.Mismatch("metadata over the limit was accepted")
                } catch let error as StoreError where error.code == .valueTooLarge {}
            },
            Check(name: "setAttributes replaces the attributes and keeps the value") { suite, store in
                try await store.setValue(suite.makeValue(1), forKey: suite.makeKey(1), expiresAt: farFuture, metadata: Data([1]))
                let replaced = EntryAttributes(expiresAt: farFuture.addingTimeInterval(3600), storedAt: Date(timeIntervalSince1970: 1_750_000_000), metadata: Data([2, 3]))
                guard try await store.setAttributes(replaced, forKey: suite.makeKey(1)) else {
                    throw ConformanceFailure.Mismatch("setAttributes found no entry")
                }
                try await suite.expectValue(1, in: store, for: 1)
                try expectSame(try await store.attributes(forKey: suite.makeKey(1)), replaced, "attributes after setAttributes")
                guard try await !store.setAttributes(replaced, forKey: suite.makeKey(2)) else {
                    throw ConformanceFailure.Mismatch("setAttributes of a missing key reported an entry")
                }
                try await suite.expectValue(nil, in: store, for: 2)
            },
            Check(name: "add if absent inserts once and then reports the entry there") { suite, store in
                guard try await store.addValue(suite.makeValue(1), forKey: suite.makeKey(1), metadata: Data([9])).inserted else {
                    throw ConformanceFailure.Mismatch("adding an absent key did not insert")
                }
                let second = try await store.addValue(suite.makeValue(2), forKey: suite.makeKey(1))
                guard let existing = second.existing, existing.value == suite.makeValue(1), existing.metadata == Data([9]) else {
                    throw ConformanceFailure.Mismatch("adding a present key did not report the first entry")
                }
                try await suite.expectValue(1, in: store, for: 1)
                try await store.setEntry(StoreEntry(value: suite.makeValue(3), expiresAt: farPast), forKey: suite.makeKey(3))
                guard try await store.addValue(suite.makeValue(4), forKey: suite.makeKey(3)).inserted else {
                    throw ConformanceFailure.Mismatch("adding over an expired entry did not insert")
                }
                if let clock = suite.clock {
                    try await store.setEntry(StoreEntry(value: suite.makeValue(5), expiresAt: clock.now().addingTimeInterval(10)), forKey: suite.makeKey(5))
                    clock.advance(by: .seconds(11))
                    guard try await store.addValue(suite.makeValue(6), forKey: suite.makeKey(5)).inserted else {
                        throw ConformanceFailure.Mismatch("adding over an entry that expired with time did not insert")
                    }
                    try await suite.expectValue(6, in: store, for: 5)
                }
            },
            Check(name: "of many concurrent adds of one key, exactly one inserts") { suite, store in
                let key = suite.makeKey(7)
                let results = try await withThrowingTaskGroup(of: (Int, AddResult<S.Value>).self) { group in
                    for task in 0..<suite.concurrentAdds {
                        group.addTask { (task, try await store.addValue(suite.makeValue(3_000_000 + task), forKey: key)) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let winners = results.filter { $0.1.inserted }
                guard winners.count == 1, let winner = winners.first?.0 else {
                    throw ConformanceFailure.Mismatch("\(winners.count) of \(results.count) concurrent adds inserted")
                }
                for (_, result) in results where !result.inserted && result.existing?.value != suite.makeValue(3_000_000 + winner) {
                    throw ConformanceFailure.Mismatch("a losing add reported another value than the one inserted")
                }
                try await suite.expectValue(3_000_000 + winner, in: store, for: 7)
            },
        ]
    }

    /// An instant every clock has passed, and one none will reach.
    private static var farPast: Date { Date(timeIntervalSince1970: 946_684_800) }
    private static var farFuture: Date { Date(timeIntervalSince1970: 13_569_465_600) }

    /// Whether two attributes are the same, instants to the millisecond (what disk stores keep); the
    /// expiry may be earlier, bounded by a store's own time to live.
    private static func expectSame(_ found: EntryAttributes?, _ expected: EntryAttributes, _ what: String) throws {
        func close(_ a: Date?, _ b: Date?, orEarlier: Bool = false) -> Bool {
            switch (a, b) {
            case (nil, nil): return true
            case let (a?, b?): return abs(a.timeIntervalSince(b)) < 0.002 || (orEarlier && a < b)
            default: return false
            }
        }
        guard let found, close(found.expiresAt, expected.expiresAt, orEarlier: true), close(found.storedAt, expected.storedAt),
              found.metadata == expected.metadata else {
            throw ConformanceFailure.Mismatch("\(what) gave \(found.map { "\($0)" } ?? "nil"), expected \(expected)")
        }
    }

    private func expectValue(_ index: Int?, in store: S, for keyIndex: Int) async throws {
        let found = try await store.value(forKey: makeKey(keyIndex))
        let expected = index.map(makeValue)
        guard found == expected else {
            throw ConformanceFailure.Mismatch(
                "key #\(keyIndex) (\(describe(makeKey(keyIndex)))): expected \(describe(expected)), read \(describe(found))"
            )
        }
    }

    /// Each task owns a range of keys and checks that every read returns its own last write (or
    /// nothing after its own removal), choosing reads, writes and removals at random from a seed;
    /// all tasks also write one shared key, whose reads must return a value some task wrote.
    private func checkConcurrentAccess(_ store: S) async throws {
        let tasks = concurrentTasks
        let operations = operationsPerTask
        let keysPerTask = 8
        let sharedKey = makeKey(1_000_000)
        let sharedValues = (0..<tasks).map { makeValue(2_000_000 + $0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask { [self] in
                    var random = SeededRandomNumberGenerator(seed: UInt64(task))
                    var last: [Int: Int?] = [:]
                    for op in 0..<operations {
                        let keyIndex = 10_000 + task * keysPerTask + Int(random.next() % UInt64(keysPerTask))
                        switch random.next() % 8 {
                        case 0..<3:
                            let valueIndex = 100_000 + task * operations + op
                            try await store.setValue(makeValue(valueIndex), forKey: makeKey(keyIndex))
                            last[keyIndex] = valueIndex
                        case 3..<6:
                            try await expectValue(last[keyIndex] ?? nil, in: store, for: keyIndex)
                        case 6:
                            try await store.removeValue(forKey: makeKey(keyIndex))
                            last[keyIndex] = .some(nil)
                        default:
                            if random.next() % 2 == 0 {
                                try await store.setValue(sharedValues[task], forKey: sharedKey)
                            } else if let shared = try await store.value(forKey: sharedKey), !sharedValues.contains(shared) {
                                throw ConformanceFailure.Mismatch("the shared key read \(describe(shared)), which no task wrote")
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func describe(_ value: Any?) -> String {
        guard let value else { return "nil" }
        let text: String
        if let data = value as? Data {
            text = "\(data.count) bytes \(data.prefix(16).map { String($0, radix: 16) }.joined(separator: " "))"
        } else {
            text = String(reflecting: value)
        }
        return text.count > 80 ? String(text.prefix(80)) + "…" : text
    }
}

extension StoreConformanceSuite where S.Key == String, S.Value == Data {
    /// A suite for stores of bytes, with keys that hosts and file systems find awkward (empty,
    /// `".."`, `"/"`, NUL, emoji, 300 characters) and values from empty to 8 KiB.
    /// - Parameter makeStore: Makes a new, empty store for one check.
    public init(makeStore: @escaping @Sendable () async throws -> S) {
        self.init(makeKey: ConformanceSamples.key, makeValue: ConformanceSamples.data, makeStore: makeStore)
    }
}

extension StoreConformanceSuite where S.Key == String, S.Value == String {
    /// A suite for stores of strings, with awkward keys and values (empty, non-ASCII, long).
    /// - Parameter makeStore: Makes a new, empty store for one check.
    public init(makeStore: @escaping @Sendable () async throws -> S) {
        self.init(makeKey: ConformanceSamples.key, makeValue: ConformanceSamples.string, makeStore: makeStore)
    }
}

/// The sample keys and values of the built-in suites.
public enum ConformanceSamples {
    /// Keys that hosts and file systems find awkward come first, then `"key-<index>"`.
    public static let awkwardKeys: [String] = [
        "", ".", "..", "../../etc/passwd", "/", "a/b", "A", "a", "with space", "\u{0}nul",
        "ключ", "🙂🙃", String(repeating: "k", count: 300), "%2F..%2F", "\\windows\\path", "CON",
    ]

    /// The key for an index: an awkward key for small indexes, `"key-<index>"` after.
    /// - Parameter index: The key's index.
    /// - Returns: A key unique to `index`.
    @Sendable public static func key(_ index: Int) -> String {
        index < awkwardKeys.count ? awkwardKeys[index] : "key-\(index)"
    }

    /// The bytes for an index: empty for 0, one byte for 1, then up to 8 KiB of repeated text.
    /// - Parameter index: The value's index.
    /// - Returns: Bytes unique to `index`.
    @Sendable public static func data(_ index: Int) -> Data {
        switch index {
        case 0: return Data()
        case 1: return Data([0x01])
        default:
            let text = "value-\(index)|"
            let repeats = index % 7 == 0 ? 8192 / text.utf8.count : 1 + index % 5
            return Data(String(repeating: text, count: repeats).utf8)
        }
    }

    /// The string for an index: empty for 0, then text with non-ASCII characters.
    /// - Parameter index: The value's index.
    /// - Returns: A string unique to `index`.
    @Sendable public static func string(_ index: Int) -> String {
        index == 0 ? "" : "välue-\(index) ✓" + String(repeating: "·", count: index % 13)
    }
}
