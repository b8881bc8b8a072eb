import Dispatch
import Foundation
import HanekeProtocols
import HanekeTesting
@testable import SQLiteStore
import Testing
import TestSupport

/// Where SQLite's log is copied into the database: on the store's executor, not on the set that
/// takes the log past its threshold, and within the room the store keeps for it whatever the
/// executor does.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct SQLiteCheckpointTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "sqlite-checkpoints")
    }

    var folder: String { directory.appending("store") }

    /// A capacity whose log holds 32 pages: checkpoints asked for from 16 frames, the log started
    /// over by the checkpointer from 24, and truncated by a commit from 32.
    static let capacity = 2 << 20

    /// The bytes of the file `name` in the store's folder (0 when there is none).
    func size(_ name: String) -> Int {
        var info = stat()
        return lstat(folder + "/" + name, &info) == 0 ? Int(info.st_size) : 0
    }

    /// The bytes of the log and of its index.
    var logBytes: Int { size(SQLiteStore.databaseFileName + "-wal") + size(SQLiteStore.databaseFileName + "-shm") }

    static func value(_ index: Int) -> Data { Data(repeating: UInt8(truncatingIfNeeded: index), count: 4_096) }

    /// A set whose commit takes the log past its threshold asks the checkpointer and runs no
    /// checkpoint itself. The executor is one job wide, so that each set's job waits for the
    /// checkpoint its predecessor asked for: the log never nears its hard bound, and a set that
    /// ran a checkpoint (passive or blocking) would be the writer paying for it. Before the
    /// checkpointer, one set in about eight here ran a passive checkpoint.
    @Test func aSetAsksForTheCheckpointAndRunsNone() async throws {
        let executor = IOExecutor(width: 1, label: "checkpoint-test")
        let store = try SQLiteStore(directory: folder, configuration: .init(capacity: Self.capacity), executor: executor)
        #expect(store.logPages == 32)
        for index in 0..<300 {
            try await store.setValue(Self.value(index), forKey: "key-\(index)")
            #expect(logBytes <= store.reserve, "the log and its index within the room kept for them")
        }
        let checkpoints = store.state.withLock { $0.database.commitCheckpoints }
        #expect(checkpoints.passive == 0 && checkpoints.blocking == 0, "no set ran a checkpoint: \(checkpoints)")
        #expect((store.checkpointer?.runs ?? 0) > 10, "the checkpointer copied the log")
        #expect(try await store.value(forKey: "key-299") == Self.value(299))
    }

    /// With the checkpointer held up (its executor busy), the commits bound the log themselves:
    /// a blocking checkpoint only on a commit that takes the log to its hard bound (all of its
    /// pages), never a passive one, and the log within its room throughout.
    @Test func aCommitTruncatesTheLogOnlyAtItsHardBound() throws {
        let executor = IOExecutor(width: 1, label: "checkpoint-test-held")
        let held = DispatchSemaphore(value: 0)
        executor.submit { held.wait() }
        defer { held.signal() }
        let store = try SQLiteStore(directory: folder, configuration: .init(capacity: Self.capacity), executor: executor)
        let frameBytes = SQLiteStore.pageSize + 24
        var blocking = 0
        for index in 0..<300 {
            let before = size(SQLiteStore.databaseFileName + "-wal")
            try store.setValue(Self.value(index), forKey: "key-\(index)")
            let checkpoints = store.state.withLock { $0.database.commitCheckpoints }
            #expect(checkpoints.passive == 0)
            if checkpoints.blocking > blocking {
                // A 4 KiB set adds a few frames (its leaf, overflow pages, a split's pages), at
                // most 8: the log held at least 24 of its 32 before it (checkpoints are asked for
                // from 16).
                #expect(before >= (store.logPages - 8) * frameBytes, "a blocking checkpoint with the log at \(before) bytes, under its hard bound")
                blocking = checkpoints.blocking
            }
            #expect(logBytes <= store.reserve, "the log and its index within the room kept for them")
        }
        #expect(blocking > 0, "the commits truncated the log themselves")
        #expect(store.checkpointer?.runs == 0)
    }
}
