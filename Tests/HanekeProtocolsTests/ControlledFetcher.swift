import HanekeProtocols
import Testing

/// A fetcher whose calls wait until the test releases them, recording every call and every
/// cancellation. Waiting is done with continuations, never by sleeping. Tests use it for one flight
/// at a time: cancelling a call cancels every pending one.
final class ControlledFetcher<Value: Sendable>: Fetcher {
    typealias Key = String

    private struct State {
        var calls: [String] = []
        var cancellations = 0
        var pending: [CheckedContinuation<Value, any Error>] = []
        /// Once released, later calls get this result at once: a test that expects one call then
        /// fails on the count instead of hanging.
        var released: Result<Value, any Error>?
        var callWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var cancellationWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    var calls: [String] { state.withLock { $0.calls } }
    var cancellations: Int { state.withLock { $0.cancellations } }

    func fetch(_ key: String) async throws -> Value {
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let (watchers, released) = state.withLock { state in
                    state.calls.append(key)
                    if state.released == nil { state.pending.append(continuation) }
                    return (Self.take(&state.callWatchers, reached: state.calls.count), state.released)
                }
                watchers.forEach { $0.resume() }
                if let released { continuation.resume(with: released) }
            }
        } onCancel: {
            let (cancelled, watchers) = state.withLock { state -> ([CheckedContinuation<Value, any Error>], [CheckedContinuation<Void, Never>]) in
                let cancelled = state.pending
                state.pending.removeAll()
                state.cancellations += cancelled.count
                return (cancelled, Self.take(&state.cancellationWatchers, reached: state.cancellations))
            }
            cancelled.forEach { $0.resume(throwing: CancellationError()) }
            watchers.forEach { $0.resume() }
        }
    }

    /// Completes every call waiting now with `result`, and every later call too.
    func release(with result: Result<Value, any Error>) {
        let pending = state.withLock { state in
            state.released = result
            defer { state.pending.removeAll() }
            return state.pending
        }
        pending.forEach { $0.resume(with: result) }
    }

    /// Returns once at least `count` calls have been made.
    func waitForCalls(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if state.calls.count >= count { return true }
                state.callWatchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Returns once at least `count` calls have been cancelled.
    func waitForCancellations(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if state.cancellations >= count { return true }
                state.cancellationWatchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func take(
        _ watchers: inout [(count: Int, continuation: CheckedContinuation<Void, Never>)],
        reached count: Int
    ) -> [CheckedContinuation<Void, Never>] {
        let ready = watchers.filter { $0.count <= count }.map(\.continuation)
        watchers.removeAll { $0.count <= count }
        return ready
    }
}

/// A fetcher that answers after a few yields (so cancellations can overlap it) and counts its calls.
final class CountingFetcher: Fetcher {
    private let counter = Locked(0)
    private let make: @Sendable (String) throws -> String

    init(_ make: @escaping @Sendable (String) throws -> String = { "fetched:\($0)" }) {
        self.make = make
    }

    var calls: Int { counter.withLock { $0 } }

    func fetch(_ key: String) async throws -> String {
        counter.withLock { $0 += 1 }
        for _ in 0..<3 { await Task.yield() }
        return try make(key)
    }
}
