import Foundation

/// Runs blocking work — a child process, thousands of synchronous file operations, a loop that
/// must spin — on a thread of its own, so that the awaiting test does not park one of Swift's
/// cooperative threads (two on a 2-core machine) while every other test waits behind it.
/// - Parameter body: The blocking work.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.stackSize = 4 << 20
        thread.start()
    }
}
