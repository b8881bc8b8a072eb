import Foundation
import Haneke

/// Examines the SQLite database a store folder may hold beside its entry files (`SQLiteStore`,
/// which a format with a small-value threshold sends its small values to), read-only.
/// - Parameters:
///   - folder: A store's folder.
///   - progress: The status line.
/// - Returns: What was found, or `nil` when the folder has no database.
func inspectDatabase(_ folder: String, progress: ProgressLine) throws -> SQLiteStore.Inspection? {
    guard FileManager.default.fileExists(atPath: folder + "/" + SQLiteStore.databaseFileName) else {
        return try SQLiteStore.inspect(directory: folder)   // nil, unless one appeared since
    }
    defer { progress.end() }
    progress.show("checking the database of \(shown(folder))…", now: true)
    return try SQLiteStore.inspect(directory: folder)
}

extension SQLiteStore.DamagedRow {
    /// The row as `verify` prints it: its id in hex and its key, escaped and cut.
    var shownRow: String {
        "row \(String(UInt64(bitPattern: id), radix: 16, uppercase: true)) (key \(shown(key, quoted: true)))"
    }
}
