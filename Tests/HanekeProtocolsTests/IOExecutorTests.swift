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
}
