public import Foundation

/// The source of original values at the end of a chain: the network, a disk, a computation.
///
/// A fetcher is asked only on a full miss, and concurrent requests for one key share one call
/// (see ``Store/fetching(from:freshness:clock:logger:)``).
///
/// A fetcher may also judge the entries it stored, as an HTTP fetcher judges a stored response by
/// its `Cache-Control`: it sets ``judgesStoredEntries``, answers ``reuse(of:forKey:at:)`` on every
/// read that finds an entry, and receives that entry in ``fetch(_:stored:)`` to revalidate it.
public protocol Fetcher<Key, Value>: Sendable {
    /// The type of the keys.
    associatedtype Key: Hashable & Sendable
    /// The type of the values.
    associatedtype Value: Sendable

    /// Produces the value for `key`.
    /// - Parameter key: The key whose value is wanted.
    /// - Returns: The original value.
    /// - Throws: `StoreError` (for example `notFound`) or `CancellationError`.
    func fetch(_ key: Key) async throws -> Value

    /// Produces the value for `key` with its own expiry and metadata (an HTTP response's lifetime
    /// and validators). The default calls ``fetch(_:)`` and gives no attributes: the fetching store's
    /// ``Freshness/timeToLive`` applies.
    /// - Parameter key: The key whose value is wanted.
    /// - Returns: The original value and its attributes.
    /// - Throws: What ``fetch(_:)`` throws.
    func fetchEntry(_ key: Key) async throws -> StoreEntry<Value>

    /// Whether a read that finds an entry asks ``reuse(of:forKey:at:)`` what it may do with it.
    /// `false` by default: an entry found is served while it lives.
    var judgesStoredEntries: Bool { get }

    /// What a read may do with the entry it found for `key` (asked only when
    /// ``judgesStoredEntries``); called on every such read, so it should be cheap. The default
    /// serves it.
    /// - Parameters:
    ///   - attributes: The entry's attributes (its metadata holds what the fetcher stored).
    ///   - key: The key.
    ///   - now: The fetching store's current time.
    /// - Returns: The decision.
    func reuse(of attributes: EntryAttributes, forKey key: Key, at now: Date) -> StoredEntryReuse

    /// Produces what `key` needs now: a new entry, a value not to keep, or — given the entry
    /// stored — new attributes for it or permission to serve it as it is. A fetching store calls
    /// only this; the default keeps what ``fetchEntry(_:)`` produces.
    /// - Parameters:
    ///   - key: The key whose value is wanted.
    ///   - stored: The entry to revalidate (when ``reuse(of:forKey:at:)`` said
    ///     ``StoredEntryReuse/revalidate`` or ``StoredEntryReuse/staleWhileRevalidate``), else `nil`.
    /// - Returns: What to do.
    /// - Throws: What ``fetch(_:)`` throws.
    func fetch(_ key: Key, stored: StoreEntry<Value>?) async throws -> FetchOutcome<Value>
}

extension Fetcher {
    /// Calls ``fetch(_:)``; the entry has no attributes of its own.
    /// - Parameter key: The key whose value is wanted.
    /// - Returns: The value, with empty attributes.
    /// - Throws: What ``fetch(_:)`` throws.
    public func fetchEntry(_ key: Key) async throws -> StoreEntry<Value> {
        StoreEntry(value: try await fetch(key))
    }

    /// `false`: entries are served while they live.
    public var judgesStoredEntries: Bool { false }

    /// ``StoredEntryReuse/fresh``.
    /// - Parameters:
    ///   - attributes: The entry's attributes.
    ///   - key: The key.
    ///   - now: The current time.
    /// - Returns: `.fresh`.
    public func reuse(of attributes: EntryAttributes, forKey key: Key, at now: Date) -> StoredEntryReuse { .fresh }

    /// Keeps what ``fetchEntry(_:)`` produces.
    /// - Parameters:
    ///   - key: The key whose value is wanted.
    ///   - stored: Ignored.
    /// - Returns: `.store` with the entry.
    /// - Throws: What ``fetchEntry(_:)`` throws.
    public func fetch(_ key: Key, stored: StoreEntry<Value>?) async throws -> FetchOutcome<Value> {
        .store(try await fetchEntry(key))
    }
}

/// What a read may do with an entry that a judging fetcher stored
/// (``Fetcher/reuse(of:forKey:at:)``).
public enum StoredEntryReuse: Sendable, Hashable {
    /// Serve it.
    case fresh
    /// Serve it, and revalidate it in the background (one revalidation per key at a time).
    case staleWhileRevalidate
    /// Hand it to ``Fetcher/fetch(_:stored:)`` first, and serve what that decides.
    case revalidate
    /// It does not answer this read: fetch as on a miss (it is replaced, or removed).
    case refetch
}

/// What a fetcher produced for a key (``Fetcher/fetch(_:stored:)``).
public enum FetchOutcome<Value: Sendable>: Sendable {
    /// A value to keep in the layers, with its attributes.
    case store(StoreEntry<Value>)
    /// A value to return without keeping it (`no-store`); the entry stored for the key, if any, is
    /// removed, since this value supersedes it.
    case doNotStore(Value)
    /// The stored entry is still good (`304 Not Modified`): serve its value, with these attributes
    /// written over its own (the value is not sent to the layers again).
    case notModified(EntryAttributes)
    /// The source failed but the stored entry may stand in for it (`stale-if-error`): serve its
    /// value, unchanged.
    case servingStored
}
