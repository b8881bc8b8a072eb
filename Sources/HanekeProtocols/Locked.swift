#if canImport(Glibc)
// Public although `Locked` is not: an `@inlinable` body may use only what its module imports publicly.
public import Glibc
#endif

/// A value guarded by a pthread mutex: the package's one lock abstraction.
///
/// ```swift
/// let hits = Locked(0)
/// hits.withLock { $0 += 1 }
/// ```
///
/// `package`, not public: it is no part of the API (issue 14); a store written outside this package
/// brings its own lock. `@usableFromInline` with an `@inlinable` `withLock`, because this lock is on
/// every store's hot path and `MemoryStore`'s public `@inlinable` methods inline it into your code:
/// this compiler inlines the `@inlinable` body of a `package` declaration into a module of another
/// package as it does a public one's (the same instructions per `MemoryStore` get and set under
/// cachegrind; Benchmarks/Notes/2026-11-24-internals-out-of-the-api.md).
///
/// `Synchronization.Mutex` would be the natural choice, but ThreadSanitizer on Linux does not see its
/// futex and reports false races, which would make `make tsan` useless. A pthread
/// mutex is understood by TSan and costs the same here.
///
/// The value lives in memory the box allocates, not in a stored `var`: passing a class's stored
/// property `inout` makes Swift check exclusive access at run time on every call (`swift_beginAccess`
/// and `swift_endAccess`, about 200 instructions with their thread-local lookups), which the mutex
/// already guarantees. `callgrind` counted two such checks in every `FileStore` read.
@usableFromInline
package final class Locked<Value> {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The value; only `withLock` touches it, with `mutex` held.
    @usableFromInline let storage: UnsafeMutablePointer<Value>

    /// Creates a box holding `value`.
    /// - Parameter value: The initial value.
    package init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        let rc = pthread_mutex_destroy(mutex)
        precondition(rc == 0, "pthread_mutex_destroy failed: \(rc)")
        mutex.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with the lock held and returns its result. Never `await` inside. No I/O inside
    /// either, except where the owner says so and every caller is off Swift's cooperative pool
    /// (`SQLiteStore` runs each SQLite statement under its lock, on its executor).
    /// - Parameter body: Reads or changes the value.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        // A failure (EINVAL, EDEADLK) would be this package's bug: stop rather than run unguarded.
        let locked = pthread_mutex_lock(mutex)
        precondition(locked == 0, "pthread_mutex_lock failed: \(locked)")
        defer {
            let unlocked = pthread_mutex_unlock(mutex)
            precondition(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
        }
        return try body(&storage.pointee)
    }
}

/// `@unchecked Sendable` because the compiler cannot see that every access to the value happens with
/// `mutex` held; `withLock` is the only way in, so the claim holds by construction. The box is only
/// as sendable as the value it guards.
extension Locked: @unchecked Sendable where Value: Sendable {}
