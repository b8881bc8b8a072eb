public import Foundation
import HanekeProtocols
import StoreFolders

extension FileStore {
    /// One entry of a store, as its file's header describes it.
    public struct Entry: Sendable, Hashable {
        /// The original key.
        public var key: String
        /// The file's path.
        public var path: String
        /// The size of the value, in bytes.
        public var payloadSize: Int
        /// The size of the file (its length), header included: the bytes "in files".
        public var storedSize: Int
        /// The bytes the file takes on disk (allocated blocks, what `du` counts): what the capacity
        /// counts.
        public var allocatedSize: Int
        /// When the value was written.
        public var created: Date
        /// When the value expires, or `nil` for never.
        public var expires: Date?
        /// When the entry was last read or written, as far as this store knows.
        public var lastAccess: Date?
        /// The bytes of metadata stored with the value (see `EntryAttributes`); 0 for none, and
        /// for every file written by 0.3.0.
        public var metadataSize: Int = 0
    }

    /// Every entry, most recently used first, read from the files' headers (files that are damaged
    /// or have vanished are left out).
    /// - Returns: The entries.
    /// - Performs disk I/O: one header read per entry. Waits for the index first (see
    ///   ``isIndexed``).
    public func entries() -> [Entry] {
        waitUntilIndexed()
        catchUp(evicting: false)
        return entries(where: { _ in true })
    }

    func entries(where include: (KeyDigest) -> Bool) -> [Entry] {
        let indexed = state.withLock { state in
            state.entries.keysByRecency.filter(include).compactMap { digest in
                state.entries.peekValue(forKey: digest).map { (digest, $0) }
            }
        }
        return indexed.compactMap { digest, record in
            let outcome = try? readEntry(digest, extent: .header, knownSize: nil) { header, reader in
                reader.key(header: header).map { key in
                    Entry(
                        key: key,
                        path: path(for: digest),
                        payloadSize: header.payloadLength,
                        storedSize: header.fileLength,
                        allocatedSize: record.allocated,
                        created: Self.date(header.created),
                        expires: header.expires.map(Self.date),
                        lastAccess: Self.date(record.lastAccess),
                        metadataSize: header.metadataLength
                    )
                }
            }
            guard case .entry(let entry?)? = outcome else { return nil }
            return entry
        }
    }

    /// The keys of every entry, most recently used first, read from the files' headers.
    /// - Returns: The keys.
    /// - Performs disk I/O: one header read per entry. Waits for the index first (see
    ///   ``isIndexed``).
    public func keys() -> [String] {
        entries().map(\.key)
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(millisecondsSince1970: milliseconds)
    }
}
