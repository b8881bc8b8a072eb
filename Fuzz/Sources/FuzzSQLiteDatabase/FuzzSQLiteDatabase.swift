// Fuzzes SQLiteStore's read of its database file: each input is a whole database (the seeds are
// ones the store wrote, with the values of FuzzValues), opened by a new store and read key by key
// and row by row. Whatever the damage, opening and reading throw a StoreError or answer, and a
// value answered is the one written for its key — the row's key and checksum stop anything else.
import FileStore
import Foundation
import HanekeProtocols
import SQLiteStore

let folder = NSTemporaryDirectory() + "haneke-fuzz-sqlite-\(getpid())"
let database = folder + "/" + SQLiteStore.databaseFileName
let prepared: Void = {
    try! FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    _ = try! FileStore(directory: folder)   // the folder's marker
}()

/// The value the seeds hold for key `k<index>`.
func expectedValue(_ index: Int) -> Data {
    Data(String(repeating: "value \(index) ", count: 1 + index * 37).utf8)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSQLiteDatabase(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    _ = prepared
    for suffix in ["-wal", "-shm"] { unlink(database + suffix) }
    guard FileManager.default.createFile(atPath: database, contents: Data(bytes: start, count: count), attributes: [.posixPermissions: 0o600]) else {
        fatalError("could not write \(database)")
    }
    guard let store = try? SQLiteStore(directory: folder, configuration: .init(capacity: nil)) else { return 0 }
    for index in 0..<8 {
        guard let value = try? store.value(forKey: "k\(index)") else { continue }
        precondition(value == expectedValue(index), "key k\(index) answered \(value.count) bytes that are not its value")
    }
    _ = try? store.entries()
    _ = store.count
    return 0
}
