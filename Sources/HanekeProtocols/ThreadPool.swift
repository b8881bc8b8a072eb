import Foundation

/// Threads of the library's own, for work that blocks: at most ``width`` at a time, started when
/// there is work and ended when there is none, so a job costs a thread only while it runs and the
/// process keeps none for idle work.
///
/// Not Dispatch's threads nor an `IOExecutor`'s: a thread waiting for such a job (a synchronous
/// `count` waiting for a store's index, say) may be one of those, and when every one of them
/// waits, a job queued behind them would never start. (Dispatch on Linux adds threads to a
/// blocked pool slowly: with the index walks on a Dispatch queue, tests waiting on Dispatch's
/// threads for their stores' indexes stood still for a minute.) Used for the index walks of
/// `FileStore` and for `NetworkFetcher`'s transfers.
package final class ThreadPool: Sendable {
    /// The most jobs that run at once.
    package let width: Int
    /// The name of the pool's threads, seen in debuggers.
    private let name: String
    private let state = Locked(State())

    private struct State {
        var jobs = JobQueue()
        var threads = 0
    }

    /// Creates a pool.
    /// - Parameters:
    ///   - width: The most jobs that run at once; at least 1.
    ///   - name: The name of its threads.
    package init(width: Int, name: String) {
        self.width = max(1, width)
        self.name = name
    }

    /// The jobs waiting for a thread (for tests).
    package var pendingCount: Int {
        state.withLock { $0.jobs.count }
    }

    /// Runs `job` on one of the threads: at once if fewer than ``width`` run, after the jobs
    /// before it otherwise.
    package func submit(_ job: @escaping @Sendable () -> Void) {
        let startThread = state.withLock { state -> Bool in
            state.jobs.append(job)
            guard state.threads < width else { return false }
            state.threads += 1
            return true
        }
        guard startThread else { return }
        let thread = Thread { [self] in
            while let job = state.withLock({ state -> (@Sendable () -> Void)? in
                guard let job = state.jobs.popFirst() else {
                    state.threads -= 1
                    return nil
                }
                return job
            }) {
                job()
            }
        }
        thread.name = name
        thread.start()
    }
}
