/// The source of original values at the end of a chain: the network, a disk, a computation.
///
/// A fetcher is asked only on a full miss, and concurrent requests for one key share one call
/// (see ``Store/fetching(from:freshness:clock:logger:)``).
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
}

extension Fetcher {
    /// Calls ``fetch(_:)``; the entry has no attributes of its own.
    /// - Parameter key: The key whose value is wanted.
    /// - Returns: The value, with empty attributes.
    /// - Throws: What ``fetch(_:)`` throws.
    public func fetchEntry(_ key: Key) async throws -> StoreEntry<Value> {
        StoreEntry(value: try await fetch(key))
    }
}
