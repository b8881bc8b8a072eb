import HanekeProtocols

#if canImport(Glibc)
import Glibc
#endif

/// Descriptors of files read on a caller's thread, closed a moment later by a thread of their own.
///
/// Why: the `close` of a file just read costs 0.6–0.7 µs at the median on this project's 2-core
/// VMs (a C loop of `openat2`, `preadv2` and `close` over 10,000 files of 4 KiB: 2.2, 1.8 and
/// 0.65 µs), a tenth of a warm `FileStore` read. A read served on the caller's cooperative thread
/// (``POSIX/openEntryWithoutWaiting(in:_:)``) hands its descriptor here instead, which costs an
/// append under a lock; the descriptors are closed in batches, off the reader's path.
///
/// Bounds:
/// - At most ``limit`` descriptors wait: 256, or a sixteenth of the process's soft
///   `RLIMIT_NOFILE` when that is lower (read once, when the closer is made). Past it a caller
///   closes its own descriptor, so a burst never takes descriptors the process needs elsewhere.
/// - The thread closes what waits every ``interval`` (250 µs) while descriptors come; each look
///   that finds none doubles the wait, up to 16 ms, and after 12 such looks in a row (about 0.13 s
///   without a descriptor) the thread ends. So a descriptor stays open at most about 16 ms after
///   its read, and an idle process keeps no thread.
/// - With no thread running, a descriptor is closed by its caller, unless another was closed that
///   way less than ``burstWindow`` (1 ms) before: then reads are coming fast, and that second one
///   starts the thread. Starting a thread costs its caller 11–15 µs here, more than a thousand
///   closes save, so reads far apart (a lone read, a read every 0.2 s) never pay for one.
///
/// What a late close could change, and why it does not here: the descriptors are read-only and
/// `O_CLOEXEC` (no child inherits one), their files take no `fcntl` lock (which any close of the
/// file would release), and a file evicted meanwhile keeps its blocks until the close, a few
/// milliseconds at most.
///
/// Concurrency: one lock guards the waiting descriptors and whether the thread runs; the thread
/// closes with the lock released.
package final class DescriptorCloser: Sendable {
    /// The closer every store of the process shares.
    package static let shared = DescriptorCloser()

    /// The most descriptors that wait at once.
    package let limit: Int
    /// How long the thread waits between two batches while descriptors come.
    package let interval: Duration
    /// With no thread running: a descriptor closed by its caller less than this after the last one
    /// so closed starts the thread.
    package let burstWindow: Duration
    /// Whether a thread closes the waiting descriptors (off in a test that calls ``closeWaiting()``
    /// itself).
    private let startsThread: Bool
    private let state = Locked(State())
    /// Runs the closing loop: one job, which ends (and its thread with it) once nothing comes.
    private let thread = ThreadPool(width: 1, name: "haneke.close")

    /// The longest wait between two looks of the thread.
    private static let longestInterval = Duration.milliseconds(16)
    /// Looks in a row that find nothing before the thread ends.
    private static let idleLooksBeforeExit = 12

    private struct State {
        var waiting: [Int32] = []
        var threadRuns = false
        /// When a caller last closed its own descriptor because no thread ran.
        var lastClosedByCaller: ContinuousClock.Instant?
        /// Run after the thread's next batch (for tests).
        var afterBatch: [@Sendable () -> Void] = []
    }

    /// Creates a closer (the process shares ``shared``; tests make their own).
    /// - Parameters:
    ///   - limit: The most descriptors that wait: by default 256, or a sixteenth of the soft
    ///     `RLIMIT_NOFILE` when that is lower.
    ///   - interval: The wait between batches while descriptors come: 250 µs by default.
    ///   - burstWindow: With no thread running, how soon after a descriptor its caller closed the
    ///     next one starts the thread: 1 ms by default.
    ///   - startsThread: Whether a thread closes them: `true` by default. Without one, every
    ///     descriptor under the limit waits for ``closeWaiting()``.
    package init(limit: Int? = nil, interval: Duration = .microseconds(250), burstWindow: Duration = .milliseconds(1), startsThread: Bool = true) {
        self.limit = max(0, limit ?? Self.defaultLimit())
        self.interval = interval
        self.burstWindow = burstWindow
        self.startsThread = startsThread
    }

    /// 256, or a sixteenth of the soft descriptor limit when that is lower.
    private static func defaultLimit() -> Int {
        var limits = rlimit()
        // No limit (`RLIM_INFINITY`) is all bits set.
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0, limits.rlim_cur != rlim_t.max else { return 256 }
        return min(256, Int(clamping: limits.rlim_cur / 16))
    }

    /// The descriptors waiting to be closed (for tests).
    package var waitingCount: Int {
        state.withLock { $0.waiting.count }
    }

    /// Whether the closer's thread runs (for tests).
    package var threadRuns: Bool {
        state.withLock { $0.threadRuns }
    }

    /// Closes `descriptor` soon, on the closer's thread, or now: when ``limit`` descriptors wait
    /// already, or when no thread runs and descriptors do not come fast (see ``burstWindow``). The
    /// caller gives it up: it must not use or close it again.
    /// - Parameter descriptor: An open descriptor of a regular file, read-only and `O_CLOEXEC`.
    package func close(_ descriptor: Int32) {
        enum Outcome { case queued, startThread, closeHere }
        let outcome = state.withLock { state -> Outcome in
            guard state.waiting.count < limit else { return .closeHere }
            if startsThread, !state.threadRuns {
                let now = ContinuousClock.now
                guard let last = state.lastClosedByCaller, now - last < burstWindow else {
                    state.lastClosedByCaller = now
                    return .closeHere
                }
                state.threadRuns = true
                state.waiting.append(descriptor)
                return .startThread
            }
            state.waiting.append(descriptor)
            return .queued
        }
        switch outcome {
        case .queued: break
        case .closeHere: POSIX.close(descriptor)
        case .startThread: thread.submit { [self] in closeBatchesUntilIdle() }
        }
    }

    /// Closes every waiting descriptor on the calling thread.
    package func closeWaiting() {
        for descriptor in state.withLock(Self._takeWaiting) { POSIX.close(descriptor) }
    }

    /// The waiting descriptors, which the caller closes; none wait after.
    private static func _takeWaiting(_ state: inout State) -> [Int32] {
        defer { state.waiting.removeAll(keepingCapacity: true) }
        return state.waiting
    }

    /// Runs `body` on the closer's thread after its next batch is closed, or at once on the calling
    /// thread when no thread runs (for tests, which await it rather than sleep).
    package func afterNextBatch(_ body: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard state.threadRuns else { return true }
            state.afterBatch.append(body)
            return false
        }
        if runNow { body() }
    }

    /// The thread's loop: a batch every ``interval`` while descriptors come, longer waits while
    /// none do, and the end after ``idleLooksBeforeExit`` looks in a row find none.
    private func closeBatchesUntilIdle() {
        var wait = interval
        var idleLooks = 0
        while true {
            Self.sleep(for: wait)
            let (batch, done, callbacks) = state.withLock { state -> ([Int32], Bool, [@Sendable () -> Void]) in
                let callbacks = state.afterBatch
                state.afterBatch.removeAll()
                guard state.waiting.isEmpty else { return (Self._takeWaiting(&state), false, callbacks) }
                let done = idleLooks + 1 >= Self.idleLooksBeforeExit
                if done { state.threadRuns = false }
                return ([], done, callbacks)
            }
            for descriptor in batch { POSIX.close(descriptor) }
            for callback in callbacks { callback() }
            if done { return }
            if batch.isEmpty {
                idleLooks += 1
                wait = min(wait * 2, Self.longestInterval)
            } else {
                idleLooks = 0
                wait = interval
            }
        }
    }

    /// Sleeps the closer's own thread (never a cooperative one) for `duration`.
    private static func sleep(for duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
