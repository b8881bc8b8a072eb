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
        ]
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
