import HanekeProtocols
import Testing

/// A fetcher whose calls wait until the test releases them, recording every call and every
/// cancellation. Waiting is done with continuations, never by sleeping.
final class ControlledFetcher<Value: Sendable>: Fetcher {
    typealias Key = String

    private struct State {
        var calls: [String] = []
        var cancellations = 0
        var pending: [CheckedContinuation<Value, any Error>] = []
        var callWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var cancellationWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    var calls: [String] { state.withLock { $0.calls } }
    var cancellations: Int { state.withLock { $0.cancellations } }

    func fetch(_ key: String) async throws -> Value {
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let watchers = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.calls.append(key)
                    state.pending.append(continuation)
                    return Self.take(&state.callWatchers, reached: state.calls.count)
                }
                watchers.forEach { $0.resume() }
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

    /// Completes every call waiting now with `result`.
    func release(with result: Result<Value, any Error>) {
        let pending = state.withLock { state in
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

/// A fetcher that answers at once and counts its calls.
final class CountingFetcher: Fetcher {
    private let counter = Locked(0)
    private let make: @Sendable (String) throws -> String

    init(_ make: @escaping @Sendable (String) throws -> String = { "fetched:\($0)" }) {
        self.make = make
    }

    var calls: Int { counter.withLock { $0 } }

    func fetch(_ key: String) async throws -> String {
        counter.withLock { $0 += 1 }
        return try make(key)
    }
}
