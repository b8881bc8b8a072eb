import Synchronization

/// Counts the changes a combinator makes to its layers, so that it can tell whether a key may have
/// changed while it was reading or fetching: a chain must not promote a value that a concurrent
/// write or removal has replaced, and a fetch must not write back over a value set meanwhile.
///
/// Keys map to 64 stripes, so an unrelated write only rarely looks like a change of the key in
/// question (which costs a skipped promotion or write-back, never a wrong value).
package final class ChangeTracker<Key: Hashable>: Sendable {
    private static var stripeCount: Int { 64 }
    private let stripes = Locked([UInt64](repeating: 0, count: ChangeTracker.stripeCount))
    private let total = Atomic<UInt64>(0)

    /// Creates a tracker with no changes.
    package init() {}

    /// A mark of `key`'s stripe; compare it with a later mark to see whether the key may have changed.
    package func mark(for key: Key) -> UInt64 {
        let stripe = Self.stripe(of: key)
        return stripes.withLock { $0[stripe] }
    }

    /// A mark of every change; cheaper than a key's mark (no lock), but moved by any key.
    package var totalMark: UInt64 { total.load(ordering: .acquiring) }

    /// Records a change to `key`.
    package func recordChange(to key: Key) {
        let stripe = Self.stripe(of: key)
        stripes.withLock { $0[stripe] &+= 1 }
        total.add(1, ordering: .releasing)
    }

    /// Records a change to every key.
    package func recordChangeToEveryKey() {
        stripes.withLock { counts in
            for i in counts.indices { counts[i] &+= 1 }
        }
        total.add(1, ordering: .releasing)
    }

    /// Records that the layers may hold new values without a change to any stripe (a completed fetch).
    package func recordFill() {
        total.add(1, ordering: .releasing)
    }

    private static func stripe(of key: Key) -> Int {
        Int(UInt(bitPattern: key.hashValue) % UInt(stripeCount))
    }
}
