import Synchronization

/// Lock-free counters behind ``StoreStatistics``, for stores that do not already hold a lock.
@usableFromInline
package final class StatisticsCounter: Sendable {
    private let hits = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    private let writes = Atomic<Int>(0)
    private let removals = Atomic<Int>(0)
    private let evictions = Atomic<Int>(0)
    private let errors = Atomic<Int>(0)

    /// Creates counters at zero.
    @usableFromInline
    package init() {}

    @usableFromInline
    package func recordHit() { hits.add(1, ordering: .relaxed) }
    @usableFromInline
    package func recordMiss() { misses.add(1, ordering: .relaxed) }
    @usableFromInline
    package func recordWrite() { writes.add(1, ordering: .relaxed) }
    @usableFromInline
    package func recordRemoval() { removals.add(1, ordering: .relaxed) }
    @usableFromInline
    package func recordEvictions(_ count: Int = 1) { evictions.add(count, ordering: .relaxed) }
    @usableFromInline
    package func recordError() { errors.add(1, ordering: .relaxed) }

    /// Records a read: a hit when `value` is not `nil`, a miss otherwise.
    @usableFromInline
    package func recordRead(_ found: Bool) {
        if found { recordHit() } else { recordMiss() }
    }

    /// The counters now.
    package var snapshot: StoreStatistics {
        StoreStatistics(
            hits: hits.load(ordering: .relaxed),
            misses: misses.load(ordering: .relaxed),
            writes: writes.load(ordering: .relaxed),
            removals: removals.load(ordering: .relaxed),
            evictions: evictions.load(ordering: .relaxed),
            errors: errors.load(ordering: .relaxed)
        )
    }
}
