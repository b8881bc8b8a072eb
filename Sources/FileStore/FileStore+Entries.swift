public import Foundation
@_spi(HanekeInternals) import HanekeProtocols

extension FileStore {
    /// One entry of a store, as its file's header describes it.
    public struct Entry: Sendable, Hashable {
        /// The original key.
        public var key: String
        /// The file's path.
        public var path: String
        /// The size of the value, in bytes.
        public var payloadSize: Int
        /// The size of the file, header included.
        public var storedSize: Int
        /// When the value was written.
        public var created: Date
        /// When the value expires, or `nil` for never.
        public var expires: Date?
        /// When the entry was last read or written, as far as this store knows.
        public var lastAccess: Date?
    }

    /// Every entry, most recently used first, read from the files' headers (files that are damaged
    /// or have vanished are left out).
    /// - Returns: The entries.
    /// - Performs disk I/O: one header read per entry.
    public func entries() -> [Entry] {
        entries(where: { _ in true })
    }

    func entries(where include: (KeyDigest) -> Bool) -> [Entry] {
        let indexed = state.withLock { state in
            state.entries.keysByRecency.filter(include).map { ($0, state.entries.peekValue(forKey: $0)?.lastAccess) }
        }
        return indexed.compactMap { digest, lastAccess in
            let path = path(for: digest)
            guard let (header, key) = try? readHeader(atPath: path) else { return nil }
            return Entry(
                key: key,
                path: path,
                payloadSize: header.payloadLength,
                storedSize: header.fileLength,
                created: Self.date(header.created),
                expires: header.expires.map(Self.date),
                lastAccess: lastAccess.map(Self.date)
            )
        }
    }

    /// The keys of every entry, most recently used first, read from the files' headers.
    /// - Returns: The keys.
    /// - Performs disk I/O: one header read per entry.
    public func keys() -> [String] {
        entries().map(\.key)
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }
}
