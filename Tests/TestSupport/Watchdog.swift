import BlockingWatchdog
import Foundation
import Synchronization

/// The test process's blocking watchdog (Tests/BlockingWatchdog): it runs every job of Swift's
/// global executor on as many threads as the cooperative pool has, measures how long each job's
/// thread slept, and fails the run when one slept longer than its limit. This type lets a test see
/// it work.
public enum Watchdog {
    /// What the watchdog measured for one job.
    public struct Job: Sendable {
        /// How long the job's thread slept inside the job (not counting time on a CPU or waiting
        /// for one).
        public var slept: Duration
        /// How long the job took from start to end.
        public var wall: Duration
        /// How long the job's thread was on a CPU.
        public var cpu: Duration
        /// The stack the watchdog caught the job's thread asleep in, one frame per line, or nil.
        public var stack: String?
        /// Whether the job's waits were short ones — a mutex, one file-system call on names, a
        /// socket's set-up, a page fault — which have a longer limit: the holder may be waiting
        /// for a CPU.
        public var waitedForALock: Bool
    }

    /// Whether the watchdog runs this process's jobs (`HANEKE_WATCHDOG=off` turns it off).
    public static var isWatching: Bool { haneke_watchdog_is_watching() != 0 }

    /// The number of threads the jobs run on: the cooperative pool's width.
    public static var threadCount: Int { Int(haneke_watchdog_thread_count()) }

    /// The longest a job may sleep in a blocking wait before the run fails.
    public static var limit: Duration { .nanoseconds(Int64(haneke_watchdog_limit_nanoseconds())) }

    /// Runs `body` inside the current job, which the watchdog then keeps aside instead of counting
    /// it against the run, and returns what it measured for the job. `body` is meant to block: it
    /// is how a test shows that the watchdog sees a blocked thread.
    /// - Parameter body: Work for the current job.
    /// - Returns: The job's measurement, or nil when this task is not running on the watchdog's
    ///   threads.
    public static func measureCurrentJob(_ body: () -> Void) async -> Job? {
        let tag = nextTag.add(1, ordering: .relaxed).newValue
        let kept = haneke_watchdog_keep_current_job(tag) != 0
        body()
        guard kept else { return nil }
        // The job ends at this suspension; its thread records it after the job returns, which can
        // be after this task resumes on the other thread.
        await Task.yield()
        var job: Job?
        try? await waitUntil("the watchdog's record of the job") {
            // Naming the stack's frames runs llvm-symbolizer: not on a cooperative thread.
            job = try await offThePool { () -> Job? in
                var measured = HanekeWatchdogJob()
                var stack = [CChar](repeating: 0, count: 8192)
                guard haneke_watchdog_kept_job(tag, &measured, &stack, UInt64(stack.count)) != 0 else { return nil }
                return Job(
                    slept: .nanoseconds(Int64(measured.slept_nanoseconds)),
                    wall: .nanoseconds(Int64(measured.wall_nanoseconds)),
                    cpu: .nanoseconds(Int64(measured.cpu_nanoseconds)),
                    stack: measured.stack_taken != 0 ? String(decoding: stack.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil,
                    waitedForALock: measured.waited_for_a_lock != 0
                )
            }
            return job != nil
        }
        return job
    }

    private static let nextTag = Atomic<UInt64>(0)
}
