import Dispatch

/// Runs blocking file I/O off Swift's cooperative threads.
///
/// The work goes to a Dispatch global queue: its threads are not the cooperative pool's, so a slow
/// disk never stalls other tasks, and libdispatch adds threads while its workers are blocked.
/// Measured here (`make bench`, "FileStore async get"): the hop costs about 1 µs, where
/// `NIOThreadPool` costs 17–27 µs when idle (its workers sleep on a condition variable).
enum BlockingIO {
    static func run<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result(catching: body))
            }
        }
    }
}
