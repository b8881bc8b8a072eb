import Dispatch
@testable import HanekeProtocols
import Testing

/// The executor that blocking work runs on: what it holds, and for how long.
struct IOExecutorTests {
    /// Calls `released` when it goes.
    final class Probe: Sendable {
        let released: @Sendable () -> Void
        init(released: @escaping @Sendable () -> Void) { self.released = released }
        deinit { released() }
    }

    /// A job is let go of as soon as it has run, before the next job starts: what it captured (a
    /// store's database, a journal) goes then, not when the worker runs out of jobs. (The worker
    /// held the job that started it until it stopped.)
    @Test func aJobIsReleasedBeforeTheNextOneRuns() async {
        let executor = IOExecutor(width: 1, label: "release")
        let started = DispatchSemaphore(value: 0)
        let mayEnd = DispatchSemaphore(value: 0)
        let released = Locked(false)
        do {
            let probe = Probe { released.withLock { $0 = true } }
            // The first job starts the worker and holds it until the second job is queued.
            executor.submit {
                started.signal()
                mayEnd.wait()
                withExtendedLifetime(probe) {}
            }
        }
        let seenByNextJob = await withCheckedContinuation { (next: CheckedContinuation<Bool, Never>) in
            executor.submit { next.resume(returning: released.withLock { $0 }) }
            DispatchQueue.global().async {
                started.wait()
                mayEnd.signal()
            }
        }
        #expect(seenByNextJob)
    }

    /// A cancelled caller of `runUntilCancelled` stops waiting while its job still runs (a read the
    /// system holds); the job's result is dropped when it ends. The job waits on a Dispatch thread
    /// of the executor, never on a cooperative one.
    @Test func aCancelledCallerStopsWaitingForAJobThatHasStarted() async throws {
        let executor = IOExecutor(width: 1, label: "cancel")
        let started = DispatchSemaphore(value: 0)
        let mayEnd = DispatchSemaphore(value: 0)
        let ended = Locked(false)
        let caller = Task {
            try await executor.runUntilCancelled {
                started.signal()
                mayEnd.wait()
                ended.withLock { $0 = true }
                return 42
            }
        }
        await withCheckedContinuation { (running: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                started.wait()
                running.resume()
            }
        }
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(!ended.withLock { $0 })
        mayEnd.signal()
        // The job ran to its end; the executor is free for the next one.
        #expect(try await executor.runUntilCancelled { ended.withLock { $0 } })
    }

    /// A job whose caller was cancelled before it started never runs.
    @Test func aJobWhoseCallerWasCancelledBeforeItStartedNeverRuns() async throws {
        let executor = IOExecutor(width: 1, label: "cancel-early")
        let mayEnd = DispatchSemaphore(value: 0)
        let ran = Locked(false)
        executor.submit { mayEnd.wait() }   // holds the only worker
        let caller = Task { try await executor.runUntilCancelled { ran.withLock { $0 = true } } }
        // The caller's job is queued behind the first; cancel it, then let the worker go.
        while executor.pendingCount == 0 { await Task.yield() }
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        mayEnd.signal()
        try await executor.run {}
        #expect(!ran.withLock { $0 })
    }
}
