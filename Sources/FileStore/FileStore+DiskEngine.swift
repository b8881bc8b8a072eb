package import Foundation
import HanekeProtocols
package import Logging

extension FileStore: DiskEngine {
    /// The store's files are the folder itself: the tool names them by the folder.
    package static var partName: String? { nil }

    package static func storedValue(forKey key: String, inFolder folder: String) throws -> Data? {
        try payload(forKey: key, inDirectory: folder)
    }

    /// A store without limits, which the tool trims; never `nil` (the folder is the store's).
    package static func openForTrimming(inFolder folder: String, size: Int, logger: Logger) throws -> FileStore? {
        try FileStore(directory: folder, configuration: .init(capacity: nil, countLimit: nil), logger: logger)
    }

    /// The entry files, the marker and the journal: what ``trim(toSize:)`` fits within its size.
    package var trimmedSize: Int { totalSize + metadataSize }

    /// The entry files, the marker and the journal.
    package var allocatedSize: Int { totalSize + metadataSize }
}
