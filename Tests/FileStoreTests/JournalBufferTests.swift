import Foundation
@testable import FileStore
import HanekeTesting
import Testing
import TestSupport

/// Every read appends a 25-byte record to the recency journal's buffer. The read whose record
/// fills the buffer hands a flush to the I/O executor and pays for it (the executor's wake-up, the
/// flush's turns of the index lock). With a 4 KiB buffer that was one read in 164, and it put
/// FileStore's 99th percentile up by about half
/// (Benchmarks/Notes/2026-11-27-warm-reads-without-a-hop.md, "Where the slowest reads fall").
@Suite(.timeLimit(.minutes(1)), .offThePool, .tags(.disk))
struct JournalBufferTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "journal-buffer")
    }

    @Test func aFlushIsAskedForOnceTheBufferHolds32KiB() throws {
        // No timed flush while the test appends: its buffer fills only from the records below.
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: nil, recencyFlushInterval: .seconds(Int64.max)))
        store.waitUntilIndexed()
        try store.flush()

        let record = RecencyJournal.Record.session(startingAt: 1)
        let advice = (0..<3_000).map { _ in store.journal.append(record) }
        let filling = (32 << 10 + RecencyJournal.recordSize - 1) / RecencyJournal.recordSize   // 1,311
        #expect(advice.firstIndex(of: .flushNow) == filling - 1, "no read before the one that fills the buffer pays for a flush")
        #expect(advice.count { $0 == .flushNow } == 1, "one flush is asked for until it takes the buffer")
    }
}
