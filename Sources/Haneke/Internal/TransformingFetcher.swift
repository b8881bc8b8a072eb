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
