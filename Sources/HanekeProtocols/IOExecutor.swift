import Dispatch
import Foundation

/// Where blocking work runs — disk I/O, folder scans, journal flushes — off Swift's cooperative
/// threads, with at most ``width`` jobs at a time.
///
/// Swift's cooperative pool has one thread per core (two on a 2-core server): a task that blocks
/// one in a system call stalls every other task behind it. The stores hand such work to an
/// executor instead, and the awaiting task suspends until it is done. Unlike a Dispatch global
/// queue, which starts a new thread whenever its workers block (up to 64 and more under load), the
/// executor keeps a fixed number of jobs running and queues the rest in order.
///
/// ```swift
/// let executor = IOExecutor(width: 4)
/// let size = try await executor.run { try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int }
/// ```
///
/// The jobs run on Dispatch's threads. A hop there and back costs 0.3–0.5 µs more than one through
/// Dispatch's global queue (`make bench`, "I/O hop": about 1.4 µs against 0.9 µs with one task
/// hopping on 2 cores), and about 2.8 µs in all for a 4 KiB `FileStore` read ("FileStore async
/// get").
public final class IOExecutor: Sendable {
    /// The executor the stores and fetchers use unless given another: `4 × ` the number of active
    /// processors wide (8 on a 2-core machine) — disk jobs mostly wait, so a few per core keep the
    /// disk busy without letting a burst of requests start hundreds of threads.
    public static let shared = IOExecutor(width: 4 * ProcessInfo.processInfo.activeProcessorCount, label: "haneke.io")

    /// The executor of CPU work — formats' transforms, decoding fetched bodies, resizing images —
    /// as wide as the active processors: more would only take turns on the same cores. Apart from
    /// ``shared`` so that disk and network I/O never queue behind it: sixteen hostile images
    /// resizing at once held a 1-byte `FileStore` read for seconds when both shared one executor.
    public static let compute = IOExecutor(width: ProcessInfo.processInfo.activeProcessorCount, label: "haneke.compute")

    /// The most jobs that run at once.
    public let width: Int
    private let queue: DispatchQueue
    private let state = Locked(State())

    private struct State: Sendable {
        var running = 0
        var pending = JobQueue()
    }

    /// Creates an executor.
    /// - Parameters:
    ///   - width: The most jobs that run at once; at least 1.
    ///   - label: The name of its Dispatch queue, seen in debuggers; `"haneke.io"` by default.
    public init(width: Int, label: String = "haneke.io") {
        self.width = max(1, width)
        // The default quality of service, as Dispatch's global queue: with `.userInitiated` every
        // hop cost 15–18 µs more here (`make bench`, "I/O hop"), its threads slower to wake.
        self.queue = DispatchQueue(label: label, attributes: .concurrent)
        queue.setSpecific(key: Self.identity, value: ObjectIdentifier(self))
    }

    private static let identity = DispatchSpecificKey<ObjectIdentifier>()

    /// The jobs waiting for a worker (for tests).
    package var pendingCount: Int {
        state.withLock { $0.pending.count }
    }

    /// Whether the calling code runs as one of this executor's jobs (for tests and assertions).
    package var isCurrent: Bool {
        DispatchQueue.getSpecific(key: Self.identity) == ObjectIdentifier(self)
    }

    /// Runs `body` on the executor and returns its result; the calling task suspends meanwhile (no
    /// thread waits).
    /// - Parameter body: Blocking work.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; `CancellationError` when the task was cancelled before `body`
    ///   started (once started, it runs to the end).
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result(catching: body)) }
        }
    }

    /// Runs `body` on the executor and returns its result, like ``run(_:)``, except that a caller
    /// cancelled meanwhile stops waiting at once, with `CancellationError`: `body`, once started,
    /// runs to its end and its result is dropped; not yet started, it never runs. For blocking work
    /// whose end the caller cannot wait for (a read that the system may hold).
    /// - Parameter body: Blocking work.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `CancellationError`.
    public func runUntilCancelled<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        let waiter = Locked<(continuation: CheckedContinuation<T, any Error>?, cancelled: Bool)>((nil, false))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = waiter.withLock { waiter in
                    waiter.continuation = continuation
                    return waiter.cancelled
                }
                if cancelled {
                    waiter.withLock { $0.continuation = nil }
                    continuation.resume(throwing: CancellationError())
                    return
                }
                submit {
                    guard waiter.withLock({ $0.continuation != nil }) else { return }   // cancelled before it started
                    let result = Result(catching: body)
                    waiter.withLock { waiter in
                        defer { waiter.continuation = nil }
                        return waiter.continuation
                    }?.resume(with: result)
                }
            }
        } onCancel: {
            waiter.withLock { waiter in
                waiter.cancelled = true
                defer { waiter.continuation = nil }
                return waiter.continuation
            }?.resume(throwing: CancellationError())
        }
    }

    /// Runs `work` on the executor, without waiting for it.
    /// - Parameter work: Blocking work.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        // Every job goes through the queue, even one that starts a worker: the worker takes it
        // from there, so nothing holds a job (and what it captured) once it has run.
        let start = state.withLock { state in
            state.pending.append(work)
            guard state.running < width else { return false }
            state.running += 1
            return true
        }
        if start { queue.async { self.drain() } }
    }

    /// Runs `work` on the executor after `delay` (a timer, not a waiting thread).
    /// - Parameters:
    ///   - delay: How long to wait first.
    ///   - work: Blocking work.
    public func submit(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        // A day at most: a longer timer is as good as none, and DispatchTime's sum would overflow.
        let nanoseconds = min(max(0, delay.saturatingNanoseconds), 86_400 * 1_000_000_000)
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { self.submit(work) }
    }

    /// Runs jobs on this thread until none is waiting. Each job is released as soon as it has run,
    /// before the next is taken. (Another worker may have taken the job whose submission started
    /// this one; then this one finds the queue empty and stops.)
    private func drain() {
        while let work = state.withLock({ state -> (@Sendable () -> Void)? in
            guard let work = state.pending.popFirst() else {
                state.running -= 1
                return nil
            }
            return work
        }) {
            work()
        }
    }
}

/// A first-in, first-out queue of jobs: an array and a read position, compacted as it drains.
///
/// A job leaves its slot when it is taken (the slot is emptied while the job is still held by
/// the caller), so compacting never releases a job — and never runs a `deinit` it captured —
/// while the owner's lock is held: that `deinit` could submit to the same executor or pool and
/// wait for the lock it holds. `IOExecutor` and `ThreadPool` keep their jobs in one.
struct JobQueue: Sendable {
    private var jobs: [(@Sendable () -> Void)?] = []
    private var head = 0

    mutating func append(_ job: @escaping @Sendable () -> Void) {
        jobs.append(job)
    }

    /// The jobs waiting.
    var count: Int { jobs.count - head }

    mutating func popFirst() -> (@Sendable () -> Void)? {
        guard head < jobs.count, let job = jobs[head] else { return nil }
        jobs[head] = nil
        head += 1
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1_024, head * 2 >= jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
        return job
    }
}
