public import Foundation
public import HanekeProtocols
import Synchronization

/// Keeps HTTP responses in a store by the rules of an ``HTTPCachePolicy``: the policy decides, the
/// store only stores. Each response's body is an entry's value and its ``StoredHTTPResponse`` (status,
/// fields, times, secondary key) the entry's metadata, so any store of the package, a memory → disk
/// chain included, can hold an HTTP cache.
///
/// Responses are keyed by their request's URI. A response with `Vary` is kept under a key of its own
/// variant, one per combination of the varied request fields, and the URI's entry then holds the
/// list of varied fields. Invalidating a URI removes that list with a new generation, so no older
/// variant is ever found again.
///
/// An entry expires in the store once it can no longer be used: when its freshness has run out,
/// plus its `stale-while-revalidate` and `stale-if-error` windows, plus ``validationRetention`` if
/// it has a validator to revalidate with or may be served stale while the origin cannot be reached.
///
/// ```swift
/// let cache = HTTPCache(storage: MemoryStore<String, Data>(), policy: HTTPCachePolicy(kind: .shared))
/// ```
public struct HTTPCache<Storage: Store>: Sendable where Storage.Key == String, Storage.Value == Data {
    /// A stored response found for a request, and what it may do for it.
    public struct Hit: Sendable {
        /// The request's URI: the key of the entry that holds it, or of its variants' index.
        public var uri: String
        /// The key of the entry that holds it.
        public var key: String
        /// The stored response.
        public var stored: StoredHTTPResponse
        /// Its body.
        public var body: Data
        /// What it may do for the request it was found for.
        public var reuse: HTTPCachePolicy.Reuse
    }

    /// The store that keeps the responses.
    public let storage: Storage
    /// The rules.
    public let policy: HTTPCachePolicy
    /// The clock that decides ages.
    public let clock: any StoreClock
    /// Records decoded lately, by key: a hit whose metadata is the same bytes is not decoded again.
    private let decoded = DecodedRecords(limit: 4_096)

    /// `[]` by default: request fields, beside those a response's `Vary` names, whose values select
    /// a stored response (lower-case names): a front end that passes such a field to the origin
    /// (`X-Forwarded-Host`, say) keys its responses by it, so that one client's value never
    /// answers another's.
    public var keyedFields: [String] = []

    /// `1 day` by default: how long a stale response is kept past its freshness and stale windows
    /// when it has a validator (`ETag` or `Last-Modified`) to be revalidated with, or may be served
    /// while the origin cannot be reached (``HTTPCachePolicy/mayServeStaleWhenDisconnected(_:)``).
    public var validationRetention: Duration

    /// Creates an HTTP cache over a store.
    /// - Parameters:
    ///   - storage: The store that keeps the responses (body as value, record as metadata).
    ///   - policy: The rules; a private cache's by default.
    ///   - clock: The clock that decides ages; the system's by default.
    ///   - validationRetention: How long a stale response is kept to be revalidated or served
    ///     while the origin cannot be reached; `1 day` by default.
    public init(storage: Storage, policy: HTTPCachePolicy = HTTPCachePolicy(), clock: any StoreClock = SystemClock(), validationRetention: Duration = .seconds(86_400)) {
        self.storage = storage
        self.policy = policy
        self.clock = clock
        self.validationRetention = validationRetention
    }

    // MARK: - Reading

    /// The stored response that may answer `request`, and what it may do: serve fresh, serve stale,
    /// or be validated first. `nil` when nothing is stored for the request's URI and variant.
    /// Only `GET` and `HEAD` requests are answered from the cache (a `HEAD` by the stored `GET`).
    /// - Parameter request: The request.
    /// - Returns: The hit, or `nil`.
    /// - Throws: The store's errors. A record that does not decode is a miss (and is removed).
    public func lookup(_ request: HTTPCacheRequest) async throws -> Hit? {
        guard request.method == "GET" || request.method == "HEAD" else { return nil }
        guard let entry = try await storage.entry(forKey: request.uri) else { return nil }
        var key = request.uri
        var found = entry
        if let index = VariantIndex(decoding: entry.metadata) {
            key = index.key(for: request)
            guard let variant = try await storage.entry(forKey: key) else { return nil }
            found = variant
        }
        guard let hit = hit(for: request, key: key, entry: found) else {
            try await storage.removeValue(forKey: key)
            return nil
        }
        return hit
    }

    /// The stored response that may answer `request`, read synchronously through `read` (a memory
    /// layer in front of ``storage``, read without a suspension); as ``lookup(_:)``, except that a
    /// record that does not decode is left for the asynchronous lookup to remove.
    /// - Parameters:
    ///   - request: The request.
    ///   - read: The entry for a key, or `nil`.
    /// - Returns: The hit, or `nil`.
    public func lookup(_ request: HTTPCacheRequest, reading read: (String) -> StoreEntry<Data>?) -> Hit? {
        guard request.method == "GET" || request.method == "HEAD", let entry = read(request.uri) else { return nil }
        guard let index = VariantIndex(decoding: entry.metadata) else { return hit(for: request, key: request.uri, entry: entry) }
        let key = index.key(for: request)
        return read(key).flatMap { hit(for: request, key: key, entry: $0) }
    }

    /// The hit an entry makes for a request; `nil` when its record does not decode.
    private func hit(for request: HTTPCacheRequest, key: String, entry: StoreEntry<Data>) -> Hit? {
        guard let stored = decoded.record(forKey: key, metadata: entry.metadata) else { return nil }
        return Hit(uri: request.uri, key: key, stored: stored, body: entry.value, reuse: policy.reuse(of: stored, for: request, at: clock.now()))
    }

    // MARK: - Writing

    /// Stores `response` for `request` if the policy allows, replacing what was stored for its URI
    /// and variant.
    /// - Parameters:
    ///   - response: The response, with its whole body.
    ///   - request: The request it answers.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response arrived.
    /// - Returns: The record stored, or `nil` when the policy refused the response or it could
    ///   never be used (no freshness, no stale window, no validator).
    /// - Throws: The store's errors.
    @discardableResult
    public func store(_ response: HTTPResponse, for request: HTTPCacheRequest, requestTime: Date, responseTime: Date) async throws -> StoredHTTPResponse? {
        guard case .store = policy.storability(of: response, for: request) else { return nil }
        let stored = policy.storedResponse(response, for: request, requestTime: requestTime, responseTime: responseTime)
        guard let expiry = policy.usefulUntil(stored, retention: validationRetention) else {
            try await remove(request.uri)
            return nil
        }
        let metadata: Data
        do {
            metadata = try stored.encoded()
        } catch {
            return nil   // fields too large to keep: served, not stored
        }
        var names = stored.headers.listMembers(for: "Vary").map { $0.lowercased() }
        for name in keyedFields.map({ $0.lowercased() }) where !names.contains(name) { names.append(name) }
        guard !names.isEmpty else {
            try await storage.setEntry(StoreEntry(value: response.body, expiresAt: expiry, metadata: metadata), forKey: request.uri)
            return stored
        }
        // One entry per variant, found through the URI's index of varied fields.
        var index = VariantIndex(names: names, generation: UInt64.random(in: 0...UInt64.max), expiresAt: expiry)
        if let existing = try await storage.entry(forKey: request.uri), let current = VariantIndex(decoding: existing.metadata),
           current.names == names {
            index.generation = current.generation
            index.expiresAt = max(current.expiresAt, expiry)
        }
        try await storage.setEntry(StoreEntry(value: response.body, expiresAt: expiry, metadata: metadata), forKey: index.key(for: request))
        try await storage.setEntry(StoreEntry(value: Data(), expiresAt: index.expiresAt, metadata: index.encoded()), forKey: request.uri)
        return stored
    }

    /// Applies a `304 Not Modified` to a hit that was validated: its fields update the stored
    /// response (RFC 9111 §3.2), whose age starts again, and the record is written back without
    /// its body. When the updated response may no longer be stored (the 304 said `private` or
    /// `no-store`, say), the entry is removed and the updated record only returned.
    /// - Parameters:
    ///   - hit: The hit that was validated.
    ///   - notModified: The 304's fields.
    ///   - requestTime: When the validation request was sent.
    ///   - responseTime: When the 304 arrived.
    /// - Returns: The updated record, or `nil` when the 304 does not match the stored response
    ///   (another validator): the caller should then fetch the response again, unconditionally.
    /// - Throws: The store's errors.
    public func update(_ hit: Hit, with notModified: HTTPHeaderFields, requestTime: Date, responseTime: Date) async throws -> StoredHTTPResponse? {
        guard policy.notModified(notModified, matches: hit.stored) else { return nil }
        let updated = policy.updating(hit.stored, with: notModified, requestTime: requestTime, responseTime: responseTime)
        // Checked again as a new response to a request without credentials (a revalidation sends none).
        guard case .store = policy.storability(of: HTTPResponse(status: updated.status, headers: updated.headers), for: HTTPCacheRequest(uri: hit.uri)) else {
            try await storage.removeValue(forKey: hit.key)
            return updated
        }
        guard let expiry = policy.usefulUntil(updated, retention: validationRetention), let metadata = try? updated.encoded() else {
            try await storage.removeValue(forKey: hit.key)
            return updated
        }
        let attributes = EntryAttributes(expiresAt: expiry, storedAt: responseTime, metadata: metadata)
        if try await !storage.setAttributes(attributes, forKey: hit.key) {
            // Evicted meanwhile: keep it again, whole.
            try await storage.setEntry(StoreEntry(value: hit.body, attributes: attributes), forKey: hit.key)
        }
        // A variant's index must last as long as the variant does.
        if hit.key != hit.uri, let entry = try await storage.entry(forKey: hit.uri), var index = VariantIndex(decoding: entry.metadata),
           index.expiresAt < expiry {
            index.expiresAt = expiry
            _ = try await storage.setAttributes(EntryAttributes(expiresAt: expiry, storedAt: responseTime, metadata: index.encoded()), forKey: hit.uri)
        }
        return updated
    }

    /// Removes what an unsafe request's successful response invalidates (RFC 9111 §4.4): its URI
    /// and the same-origin `Location` and `Content-Location`, every variant included.
    /// - Parameters:
    ///   - request: The request.
    ///   - status: The response's status.
    ///   - headers: The response's fields.
    /// - Throws: The store's errors.
    public func invalidate(after request: HTTPCacheRequest, status: Int, headers: HTTPHeaderFields) async throws {
        for uri in policy.invalidatedURIs(request: request, status: status, headers: headers) {
            try await remove(uri)
        }
    }

    /// Removes every response stored for `uri` (its variants become unreachable, and expire).
    /// - Parameter uri: An absolute URI.
    /// - Throws: The store's errors.
    public func remove(_ uri: String) async throws {
        try await storage.removeValue(forKey: uri)
    }
}

/// The entry kept under a URI whose responses vary: the lower-cased names of the fields they vary
/// on, and a generation that the keys of its variants include.
struct VariantIndex: Hashable {
    var names: [String]
    var generation: UInt64
    var expiresAt: Date

    init(names: [String], generation: UInt64, expiresAt: Date) {
        self.names = names
        self.generation = generation
        self.expiresAt = expiresAt
    }

    init?(decoding data: Data) {
        var reader = ByteReader(data)
        guard let magic = reader.bytes(4), magic.elementsEqual(Self.magic), reader.byte() == 1,
              let high = reader.int64(), let expires = reader.int64(), let count = reader.uint16() else { return nil }
        var names: [String] = []
        for _ in 0..<count {
            guard let name = reader.string() else { return nil }
            names.append(name)
        }
        guard reader.isAtEnd else { return nil }
        self.init(names: names, generation: UInt64(bitPattern: high), expiresAt: Date(millisecondsSince1970: expires))
    }

    func encoded() -> Data {
        var writer = ByteWriter()
        writer.append(Self.magic)
        writer.append(byte: 1)
        writer.append(int64: Int64(bitPattern: generation))
        writer.append(int64: expiresAt.millisecondsSince1970)
        writer.append(uint16: UInt16(clamping: names.count))
        for name in names { _ = writer.append(string: name) }
        return writer.data
    }

    /// The key of the variant `request` selects: the URI, the generation, and each varied field's
    /// values as list members (so `a,b` and `a, b` select one variant).
    func key(for request: HTTPCacheRequest) -> String {
        var key = request.uri + "\u{0}vary\u{0}" + String(generation, radix: 16)
        for name in names {
            let values = request.headers.contains(name) ? request.headers.listMembers(for: name).joined(separator: "\u{2}") : "\u{3}"
            key += "\u{0}" + name + "\u{1}" + values
        }
        return key
    }

    private static let magic = Data("hnkV".utf8)
}

/// The records of the entries read lately, decoded, by key with their metadata bytes: a record is
/// decoded again only when its bytes changed. At most `limit` are kept; past it, all are dropped.
final class DecodedRecords: Sendable {
    private let limit: Int
    private let records = Mutex<[String: (metadata: Data, record: StoredHTTPResponse)]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// The record `metadata` holds, from the memo when the bytes are those decoded last for `key`;
    /// `nil` when they are not a record.
    func record(forKey key: String, metadata: Data) -> StoredHTTPResponse? {
        if let known = records.withLock({ $0[key] }), known.metadata == metadata { return known.record }
        guard let record = try? StoredHTTPResponse(decoding: metadata) else { return nil }
        records.withLock { records in
            if records.count >= limit { records.removeAll(keepingCapacity: true) }
            records[key] = (metadata, record)
        }
        return record
    }
}
