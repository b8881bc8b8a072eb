package import Foundation
import HanekeProtocols
package import Logging

extension SQLiteStore: DiskEngine {
    package static var partName: String? { "the database" }

    package static func storedValue(forKey key: String, inFolder folder: String) throws -> Data? {
        try value(forKey: key, inDirectory: folder)
    }

    /// The folder's database as a store with capacity `size` (it evicts only when trimmed), or
    /// `nil` when the folder has none.
    package static func openForTrimming(inFolder folder: String, size: Int, logger: Logger) throws -> SQLiteStore? {
        guard FileManager.default.fileExists(atPath: folder + "/" + databaseFileName) else { return nil }
        return try SQLiteStore(directory: folder, configuration: .init(capacity: max(size, 1)), logger: logger)
    }

    /// The database's pages in use plus the room kept for its log: ``usedSize``.
    package var trimmedSize: Int { usedSize }

    /// The database, its log and the log's index: ``totalSize``.
    package var allocatedSize: Int { totalSize }
}
