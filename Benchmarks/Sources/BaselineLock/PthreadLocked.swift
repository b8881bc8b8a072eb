#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a pthread mutex: the lock of the benchmarks' baselines (a `Dictionary` behind a
/// lock, the one-slot base store) and of their counters.
///
/// The same code as the library's own lock box, `Locked`, which is no part of the library's API:
/// a baseline behind this one takes the lock exactly as `MemoryStore` does. `@inlinable` so that
/// the callers in other modules of this package get it inlined, as `MemoryStore`'s callers do.
public final class PthreadLocked<Value> {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The value, in memory the box allocates (as `Locked` keeps it: a stored `var` passed `inout`
    /// would be checked for exclusive access at run time on every call).
    @usableFromInline let storage: UnsafeMutablePointer<Value>

    /// Creates a box holding `value`.
    /// - Parameter value: The initial value.
    public init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with the lock held and returns its result.
    /// - Parameter body: Reads or changes the value.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }
}

/// `@unchecked Sendable`: `withLock` is the only way to the value, and it holds the mutex.
extension PthreadLocked: @unchecked Sendable where Value: Sendable {}
