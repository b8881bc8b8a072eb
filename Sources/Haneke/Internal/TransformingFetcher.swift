import Foundation
import HanekeProtocols

/// A fetcher whose new values pass through a format's transform, and which judges stored entries
/// as the fetcher it wraps does: a format with a transform keeps the HTTP rules of a
/// `NetworkFetcher` (a `304` keeps the transformed value stored, with the new attributes).
struct TransformingFetcher<Base: Fetcher>: Fetcher where Base.Key == String {
    let base: Base
    let transform: @Sendable (Base.Value) async throws -> Base.Value

    func fetch(_ key: String) async throws -> Base.Value {
        try await transform(try await base.fetch(key))
    }

    var judgesStoredEntries: Bool { base.judgesStoredEntries }

    func reuse(of attributes: EntryAttributes, forKey key: String, at now: Date) -> StoredEntryReuse {
        base.reuse(of: attributes, forKey: key, at: now)
    }

    func fetch(_ key: String, stored: StoreEntry<Base.Value>?) async throws -> FetchOutcome<Base.Value> {
        switch try await base.fetch(key, stored: stored) {
        case .store(let entry): .store(StoreEntry(value: try await transform(entry.value), attributes: entry.attributes))
        case .doNotStore(let value): .doNotStore(try await transform(value))
        case .notModified(let attributes): .notModified(attributes)
        case .servingStored: .servingStored
        }
    }
}

/// The fetcher of a format that derives from the original format: the original comes through that
/// format (its own flight, cache and rules), and is transformed. With a fetcher that judges its
/// entries, a derived entry carries the original's attributes, is judged as the original would be,
/// and is not kept when the original was not (`no-store`).
struct DerivingFetcher<Base: Fetcher>: Fetcher where Base.Key == String {
    let base: Base
    let transform: @Sendable (Base.Value) async throws -> Base.Value
    /// The original's value, and its attributes as its format keeps them (`nil` when it kept none).
    let original: @Sendable (String) async throws -> (Base.Value, EntryAttributes?)

    func fetch(_ key: String) async throws -> Base.Value {
        try await transform(try await original(key).0)
    }

    var judgesStoredEntries: Bool { base.judgesStoredEntries }

    func reuse(of attributes: EntryAttributes, forKey key: String, at now: Date) -> StoredEntryReuse {
        base.reuse(of: attributes, forKey: key, at: now)
    }

    func fetch(_ key: String, stored: StoreEntry<Base.Value>?) async throws -> FetchOutcome<Base.Value> {
        let (value, attributes) = try await original(key)
        let derived = try await transform(value)
        guard let attributes else { return base.judgesStoredEntries ? .doNotStore(derived) : .store(StoreEntry(value: derived)) }
        return .store(StoreEntry(value: derived, attributes: attributes))
    }
}
