public import Logging

/// Two stores read as one: the top layer first, then the bottom, promoting bottom hits into the top.
///
/// Made by ``Store/chained(to:logger:)``; see that method for the semantics. Chains nest, so
/// `a.chained(to: b).chained(to: c)` reads `a`, then `b`, then `c`.
public struct ChainedStore<Top: Store, Bottom: Store>: Store
where Top.Key == Bottom.Key, Top.Value == Bottom.Value {
    /// The type of the keys.
    public typealias Key = Top.Key
    /// The type of the values.
    public typealias Value = Top.Value

    /// The layer read first.
    public let top: Top
    /// The layer read on a miss in `top`.
    public let bottom: Bottom
    @usableFromInline let logger: Logger
    @usableFromInline let writes = WriteGate()

    /// Chains `top` to `bottom`. Prefer ``Store/chained(to:logger:)``.
    /// - Parameters:
    ///   - top: The layer read first.
    ///   - bottom: The layer read on a miss in `top`.
    ///   - logger: Where read and promotion failures are logged.
    public init(top: Top, bottom: Bottom, logger: Logger = Logger(label: "haneke")) {
        self.top = top
        self.bottom = bottom
        self.logger = logger
    }

    /// Reads `top`, then `bottom`; a `bottom` hit is written back into `top`. A layer that throws
    /// is logged and treated as a miss, and an entry that does not decode is removed from it.
    ///
    /// A promotion never overwrites a write or removal made through this chain while the read was
    /// under way: it is skipped when the key may have changed. A promoted value keeps its attributes:
    /// it expires when the original would (or sooner, if `top` has a shorter time to live of its
    /// own), with the same metadata and time stored.
    /// - Parameter key: The key to look up.
    /// - Returns: The first value found, or `nil` when no layer has one.
    /// - Throws: `CancellationError` only; layer failures are misses.
    @inlinable @inline(__always)
    public func value(forKey key: Key) async throws -> Value? {
        if let value = try await top.readAsLayer(key, logger: logger) {
            return value
        }
        return try await readBottomAndPromote(key)
    }

    /// The miss path of ``value(forKey:)``, kept out of line.
    @inlinable
    func readBottomAndPromote(_ key: Key) async throws -> Value? {
        try await readBottomEntryAndPromote(key)?.value
    }

    /// Reads `bottom`'s entry and promotes it into `top` with its attributes (the miss path of a
    /// chain's reads, for a store that reads `top` itself).
    @inlinable
    package func readBottomEntryAndPromote(_ key: Key) async throws -> StoreEntry<Value>? {
        let hash = key.hashValue
        let mark = writes.mark(forHash: hash)
        guard let entry = try await bottom.readEntryAsLayer(key, logger: logger) else {
            return nil
        }
        // Promote only if no write or removal of the key came through this chain meanwhile. The
        // common case (the key's turn is free) writes in this frame, so that `top`'s write stays
        // specialized and inlined; a key whose turn is taken waits for it.
        switch writes.takeTurnIfUnchanged(hash: hash, since: mark) {
        case false?:
            break
        case true?:
            defer { writes.releaseTurn(hash: hash) }
            await promote(entry, forKey: key)
        case nil:
            await writes.ifUnchanged(key, since: mark) { await promote(entry, forKey: key) }
        }
        return entry
    }

    /// Writes a value read from `bottom` into `top`, with its attributes; a failure is logged.
    @inlinable
    func promote(_ entry: StoreEntry<Value>, forKey key: Key) async {
        do {
            // A value without attributes is promoted as a plain write (a store of your own need not
            // keep attributes to be a top layer).
            if entry.attributes == EntryAttributes() {
                try await top.setValue(entry.value, forKey: key)
            } else {
                try await top.setEntry(entry, forKey: key)
            }
        } catch {
            logPromotionFailure(of: key, error)
        }
    }

    /// Logs a promotion that failed (out of line: not on the hot path).
    @usableFromInline
    func logPromotionFailure(of key: Key, _ error: any Error) {
        logger.warning(
            "Could not promote a value into the upper layer",
            metadata: ["layer": "\(top.layerName)", "key": "\(Logger.describe(key))", "error": "\(error)"]
        )
    }

    /// Reads the entry from `top`, then from `bottom`, promoting a `bottom` hit with its attributes;
    /// failures are misses, as in ``value(forKey:)``. `transform` runs on the caller's thread.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The first entry found, or `nil`.
    /// - Throws: `CancellationError`, or what `transform` throws.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        if let entry = try await top.readEntryAsLayer(key, logger: logger) {
            return try entry.map(transform)
        }
        return try await readBottomEntryAndPromote(key)?.map(transform)
    }

    /// Reads the entry from `top`, then from `bottom`, promoting a `bottom` hit with its attributes;
    /// failures are misses, as in ``value(forKey:)``.
    /// - Parameter key: The key to look up.
    /// - Returns: The first entry found, or `nil`.
    /// - Throws: `CancellationError` only.
    @inlinable
    public func entry(forKey key: Key) async throws -> StoreEntry<Value>? {
        if let entry = try await top.readEntryAsLayer(key, logger: logger) {
            return entry
        }
        return try await readBottomEntryAndPromote(key)
    }

    /// The attributes from `top`, then from `bottom` (nothing is promoted); a layer that fails is a
    /// miss.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` when no layer has the key.
    /// - Throws: `CancellationError` only.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        for read in [{ try await top.attributes(forKey: key) }, { try await bottom.attributes(forKey: key) }] {
            do {
                if let attributes = try await read() { return attributes }
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                logger.warning("A cache layer failed to read attributes; treating it as a miss", metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"])
            }
        }
        return nil
    }

    /// Writes the entry to `top`, then to `bottom`, like ``setValue(_:forKey:)``.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: The first layer's error, after every layer was attempted.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try await writes.change(key) {
            try await attemptBoth(
                { try await top.setEntry(entry, forKey: key) },
                { try await bottom.setEntry(entry, forKey: key) }
            )
        }
    }

    /// Replaces the attributes in both layers.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: Whether either layer had the key.
    /// - Throws: The first layer's error, after every layer was attempted.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await writes.change(key) {
            var found = false
            try await attemptBoth(
                { found = try await top.setAttributes(attributes, forKey: key) || found },
                { found = try await bottom.setAttributes(attributes, forKey: key) || found }
            )
            return found
        }
    }

    /// Adds the entry if no layer has the key: a `top` hit is the existing entry; otherwise
    /// `bottom` decides atomically (between processes and machines when it is shared), and what it
    /// decides is written to `top` — the new entry, or the existing one, promoted. Adds of one key
    /// through this chain take turns.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What `bottom` throws; a failure to write `top` is logged.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try await writes.change(key) {
            if let existing = try await top.readEntryAsLayer(key, logger: logger) {
                return .existing(existing)
            }
            let result = try await bottom.addEntry(entry, forKey: key)
            do {
                try await top.setEntry(result.existing ?? entry, forKey: key)
            } catch {
                logger.warning(
                    "Could not write an added value into the upper layer",
                    metadata: ["layer": "\(top.layerName)", "key": "\(Logger.describe(key))", "error": "\(error)"]
                )
            }
            return result
        }
    }

    /// Writes `value` to `top`, then to `bottom`, attempting both even when the first fails. Writes
    /// of one key through this chain take turns, so the layers never end up holding different
    /// values of it.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: The first layer's error, after every layer was attempted.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try await writes.change(key) {
            try await attemptBoth(
                { try await top.setValue(value, forKey: key) },
                { try await bottom.setValue(value, forKey: key) }
            )
        }
    }

    /// Removes `key` from both layers.
    /// - Parameter key: The key to remove.
    /// - Throws: The first layer's error, after every layer was attempted.
    public func removeValue(forKey key: Key) async throws {
        try await writes.change(key) {
            try await attemptBoth(
                { try await top.removeValue(forKey: key) },
                { try await bottom.removeValue(forKey: key) }
            )
        }
    }

    /// Empties both layers.
    /// - Throws: The first layer's error, after every layer was attempted.
    public func removeAll() async throws {
        try await writes.changeEveryKey {
            try await attemptBoth({ try await top.removeAll() }, { try await bottom.removeAll() })
        }
    }

    /// The layers of `top` followed by the layers of `bottom`.
    public var layerStatistics: [LayerStatistics] {
        top.layerStatistics + bottom.layerStatistics
    }

    private func attemptBoth(
        _ first: () async throws -> Void,
        _ second: () async throws -> Void
    ) async throws {
        var firstError: (any Error)?
        do { try await first() } catch { firstError = error }
        do { try await second() } catch { firstError = firstError ?? error }
        if let firstError { throw firstError }
    }
}

extension Store {
    /// Puts this store in front of `next`: reads try this store first, writes go to both.
    ///
    /// Semantics:
    /// 1. read this store; on a hit return it;
    /// 2. on a miss read `next`; on a hit write the value back into this store (promotion);
    /// 3. `setValue` writes to every layer, this one first; `removeValue` and `removeAll` reach
    ///    every layer; a write reports the first error after attempting every layer;
    /// 4. a layer that throws on read is logged and treated as a miss, so a broken disk never takes
    ///    the hot path down; an entry whose bytes do not decode is removed from its layer.
    ///
    /// - Parameters:
    ///   - next: The slower store behind this one.
    ///   - logger: Where read and promotion failures are logged.
    /// - Returns: A store that reads both layers in order.
    public func chained<Next: Store>(
        to next: Next,
        logger: Logger = Logger(label: "haneke")
    ) -> ChainedStore<Self, Next> where Next.Key == Key, Next.Value == Value {
        ChainedStore(top: self, bottom: next, logger: logger)
    }
}
