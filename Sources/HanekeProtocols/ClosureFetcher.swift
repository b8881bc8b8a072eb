/// A fetcher made from a closure, for one-off sources.
///
/// ```swift
/// let fetcher = ClosureFetcher<String, String> { key in try await loadGreeting(for: key) }
/// ```
public struct ClosureFetcher<Key: Hashable & Sendable, Value: Sendable>: Fetcher {
    private let body: @Sendable (Key) async throws -> Value

    /// Creates a fetcher that calls `body` for each key.
    /// - Parameter body: Produces the value for a key.
    public init(_ body: @escaping @Sendable (Key) async throws -> Value) {
        self.body = body
    }

    /// Calls the closure.
    /// - Parameter key: The key whose value is wanted.
    /// - Returns: What the closure returns.
    /// - Throws: What the closure throws.
    public func fetch(_ key: Key) async throws -> Value {
        try await body(key)
    }
}
