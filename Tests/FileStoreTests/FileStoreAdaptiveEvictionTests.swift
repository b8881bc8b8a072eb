import Foundation
import FileStore
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

/// `EvictionPolicy.adaptive` in `FileStore`: what it keeps that LRU gives up, and that its queues
/// and read counters survive restarts through the journal.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct FileStoreAdaptiveEvictionTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "filestore-adaptive")
    }

    func open(countLimit: Int? = 20, policy: EvictionPolicy = .adaptive) throws -> FileStore {
        let store = try FileStore(
            directory: directory.path,
            configuration: .init(countLimit: countLimit, evictionPolicy: policy)
        )
        store.waitUntilIndexed()
        return store
    }

    static let hot = (0..<10).map { "hot-\($0)" }

    /// Writes the hot keys and reads each twice, then writes `cold` keys read never.
    func writeHotThenCold(_ store: FileStore, cold: Int) throws {
        for key in Self.hot { try store.setValue(Data(key.utf8), forKey: key) }
        for _ in 0..<2 {
            for key in Self.hot { #expect(try store.value(forKey: key) == Data(key.utf8)) }
        }
        for index in 0..<cold { try store.setValue(Data([1]), forKey: "cold-\(index)") }
    }

    /// Writes `count` keys never read again.
    func scan(_ store: FileStore, count: Int, prefix: String = "scan") throws {
        for index in 0..<count { try store.setValue(Data([2]), forKey: "\(prefix)-\(index)") }
    }

    @Test func conformsToStore() async throws {
        try await StoreConformanceSuite {
            try FileStore(directory: directory.path + "/\(UUID().uuidString)", configuration: .init(evictionPolicy: .adaptive))
        }.run()
    }

    @Test(arguments: [EvictionPolicy.adaptive, .leastRecentlyUsed])
    func aScanDoesNotFlushWhatIsReadOften(policy: EvictionPolicy) throws {
        let store = try open(policy: policy)
        try writeHotThenCold(store, cold: 5)
        try scan(store, count: 100)
        let kept = Set(store.keys()).intersection(Self.hot).count
        #expect(store.count == 20)
        #expect(kept == (policy == .adaptive ? Self.hot.count : 0))
    }

    /// The read counters reach the journal as reads and the queues as a compaction's queue
    /// records; two restarts (the first rewrites the journal with queue records, the second reads
    /// them) keep the hot keys through a scan. Without them every entry would come back in the
    /// small queue unread, the hot keys oldest, and the scan would evict them first.
    @Test func theQueuesAndCountersSurviveRestarts() throws {
        do {
            let store = try open()
            try writeHotThenCold(store, cold: 10)          // full: 10 hot (read twice), 10 cold
        }
        do {
            let reopened = try open()                       // rewrites the journal from its index
            #expect(reopened.count == 20)
        }
        let store = try open()
        try scan(store, count: 40)
        #expect(Set(store.keys()).isSuperset(of: Self.hot))
        #expect(store.count == 20)
    }

    /// Once promoted, the hot keys are in the main queue, listed first; a restart keeps them there.
    @Test func thePromotedKeysStayInTheMainQueueAcrossARestart() throws {
        do {
            let store = try open()
            try writeHotThenCold(store, cold: 10)
            try scan(store, count: 5)                       // the evictions promote the hot keys
            #expect(Set(store.keys().prefix(10)) == Set(Self.hot))
        }
        do { _ = try open() }
        let reopened = try open()
        #expect(Set(reopened.keys().prefix(10)) == Set(Self.hot))
        try scan(reopened, count: 40, prefix: "later")
        #expect(Set(reopened.keys()).isSuperset(of: Self.hot))
    }

    /// A folder an adaptive store journaled opens with LRU (which skips the queue records), and
    /// back: every entry is there each time.
    @Test func thePoliciesShareAFolder() throws {
        do {
            let store = try open()
            try writeHotThenCold(store, cold: 10)
        }
        do { _ = try open() }
        do {
            let lru = try open(policy: .leastRecentlyUsed)
            #expect(lru.count == 20)
            for key in Self.hot { #expect(try lru.value(forKey: key) == Data(key.utf8)) }
        }
        let adaptive = try open()
        #expect(adaptive.count == 20)
        #expect(Set(adaptive.keys()).isSuperset(of: Self.hot))
    }
}
