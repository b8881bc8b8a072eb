import Foundation
import HanekeProtocols

/// The threads that build stores' indexes: at most ``width`` at a time, started when there is
/// work and ended when there is none, so a store opening costs a job, not a thread.
///
/// Threads of their own, not Dispatch's nor the I/O executor's: a thread waiting for an index (a
/// synchronous `count`, say) may be one of those, and when every one of them waits, a walk queued
/// behind them would never start. (Dispatch on Linux adds threads to a blocked pool slowly: with
/// the walks on a Dispatch queue, tests waiting on Dispatch's threads for their stores' indexes
/// stood still for a minute.) Twice as wide as the active processors, at least 4: a walk mostly
/// waits for `fstatat`.
final class IndexingThreads: Sendable {
    /// The most walks that run at once.
    let width: Int
    private let state = Locked(State())

    private struct State {
        /// Taken jobs are `nil`, so that what they captured goes as soon as they have run.
        var jobs: [(@Sendable () -> Void)?] = []
        var head = 0
        var threads = 0

        var pending: Int { jobs.count - head }

        mutating func next() -> (@Sendable () -> Void)? {
            guard head < jobs.count, let job = jobs[head] else { return nil }
            jobs[head] = nil
            head += 1
            if head == jobs.count || head >= 64 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    init(width: Int) {
        self.width = max(1, width)
    }

    /// The jobs waiting for a thread (for tests).
    var pendingCount: Int {
        state.withLock { $0.pending }
    }

    /// Runs `job` on one of the threads: at once if fewer than ``width`` run, after the jobs
    /// before it otherwise.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let startThread = state.withLock { state -> Bool in
            state.jobs.append(job)
            guard state.threads < width else { return false }
            state.threads += 1
            return true
        }
        guard startThread else { return }
        let thread = Thread { [self] in
            while let job = state.withLock({ state -> (@Sendable () -> Void)? in
                guard let job = state.next() else {
                    state.threads -= 1
                    return nil
                }
                return job
            }) {
                job()
            }
        }
        thread.name = "haneke.index"
        thread.start()
    }
}
