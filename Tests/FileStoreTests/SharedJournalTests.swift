import Foundation
@testable import FileStore
import HanekeTesting
import Testing
import TestSupport

/// Stores sharing a folder share its journal: each appends its own records and reads the others'.
/// These tests use two stores in one process, which share a folder exactly as two processes do
/// (each has its own descriptor of the journal and its own `flock`s).
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct SharedJournalTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "shared-journal")
    }

    func open() throws -> FileStore {
        let store = try FileStore(directory: directory.path, configuration: .init(capacity: nil))
        store.waitUntilIndexed()
        return store
    }

    /// The kinds of the journal's records, read from the file as it is.
    func recordKinds() throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.appending(".haneke-journal"))))
        #expect(bytes.count >= 8 && (bytes.count - 8) % 25 == 0, "whole records only: \(bytes.count) bytes")
        return stride(from: 8, to: bytes.count - 24, by: 25).map { bytes[$0] }
    }

    @Test func eachStoresRecordsReachTheJournalOnceInterleaved() throws {
        let first = try open()
        let second = try open()
        for round in 0..<50 {
            try first.setValue(Data(count: 10), forKey: "first-\(round)")
            try second.setValue(Data(count: 10), forKey: "second-\(round)")
        }
        try first.flush()
        try second.flush()
        // Every write once: none lost, none doubled by the two stores' appends.
        #expect(try recordKinds().filter { $0 == RecencyJournal.Kind.write.rawValue }.count == 100)
        #expect(first.count == 100)
        #expect(second.count == 100)
    }

    /// A compaction by one store replaces the journal under the other: the other finds its file
    /// replaced, reads the new one whole, and its own next records go to the new file.
    @Test func aCompactionByOneStoreLosesNoneOfTheOthersRecords() throws {
        let first = try open()
        let second = try open()
        for index in 0..<5 { try first.setValue(Data(count: 10), forKey: "a-\(index)") }
        // Enough reads for a compaction (the journal is rewritten past 4 records per entry and 16,384).
        for _ in 0..<17_000 { _ = try first.value(forKey: "a-0") }
        first.flushJournal()
        #expect(first.journal.recordsInFile < 1_000, "the journal was compacted: \(first.journal.recordsInFile) records")
        for index in 0..<5 { try second.setValue(Data(count: 10), forKey: "b-\(index)") }
        try second.flush()
        #expect(Set(first.keys()) == Set(second.keys()))
        #expect(first.count == 10)
        // Both stores' writes are in the file that replaced the old one.
        let writes = try recordKinds().filter { $0 == RecencyJournal.Kind.write.rawValue }.count
        #expect(writes == 5, "the second store's five writes after the compaction (the first store's are in it as accesses)")
    }
}
