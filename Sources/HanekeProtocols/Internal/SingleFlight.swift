/// One call per key, shared by every concurrent caller: the first caller's operation runs in a task
/// of its own, and every caller who asks for the same key meanwhile waits for its result.
///
/// - A failure reaches every waiter and is not kept: the next caller starts a new flight.
/// - Cancelling a waiter ends only that waiter's call, with `CancellationError`; when every waiter
///   has been cancelled the operation's task is cancelled too, and the next caller starts afresh.
/// - Every call returns or throws exactly once.
///
/// Internal: the flights of `FetchingStore`, the one read-through path (Haneke's `Cache` keeps a
/// `FetchingStore` per format).
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Flight {
        let id: UInt64
        var task: Task<Void, Never>?
        var waiters: [UInt64: CheckedContinuation<Value, any Error>]
    }

    private struct Table {
        var flights: [Key: Flight] = [:]
        var lastID: UInt64 = 0
    }

    private let table = Locked(Table())

    /// Creates an empty table of flights.
    init() {}

    /// The number of flights under way.
    var count: Int { table.withLock { $0.flights.count } }

    /// The number of callers waiting on the flight for `key`.
    /// - Parameter key: The key.
    /// - Returns: 0 when there is no flight.
    func waiterCount(for key: Key) -> Int {
        table.withLock { $0.flights[key]?.waiters.count ?? 0 }
    }

    /// Waits for the flight of `key`, starting it with `operation` if there is none.
    /// - Parameters:
    ///   - key: The key.
    ///   - operation: Runs in a new task if this caller starts the flight; ignored otherwise.
    /// - Returns: The flight's value.
    /// - Throws: The flight's error, or `CancellationError` when this caller is cancelled.
    func value(for key: Key, startingWith operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let waiterID = table.withLock { table in
            table.lastID += 1
            return table.lastID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                register(continuation, as: waiterID, for: key, operation: operation)
            }
        } onCancel: {
            leave(key, waiterID: waiterID)
        }
    }

    /// Adds a waiter to the key's flight, starting the flight when there is none. A waiter whose task
    /// is already cancelled is resumed at once: the cancellation handler may have run before it was
    /// registered, and would then have found nothing to cancel.
    private func register(
        _ continuation: CheckedContinuation<Value, any Error>,
        as waiterID: UInt64,
        for key: Key,
        operation: @escaping @Sendable () async throws -> Value
    ) {
        let outcome = table.withLock { table -> Registration in
            if Task.isCancelled { return .cancelled }
            if table.flights[key] != nil {
                table.flights[key]?.waiters[waiterID] = continuation
                return .joined
            }
            table.flights[key] = Flight(id: waiterID, task: nil, waiters: [waiterID: continuation])
            return .mustStart
        }
        switch outcome {
        case .cancelled:
            continuation.resume(throwing: CancellationError())
        case .joined:
            break
        case .mustStart:
            let task = Task { await self.run(key, id: waiterID, operation: operation) }
            let stillWanted = table.withLock { table in
                guard table.flights[key]?.id == waiterID else { return false }
                table.flights[key]?.task = task
                return true
            }
            if !stillWanted { task.cancel() }
        }
    }

    /// Removes a cancelled waiter and resumes it with `CancellationError`; cancels the flight when it
    /// was the last waiter.
    private func leave(_ key: Key, waiterID: UInt64) {
        let (continuation, abandonedTask) = table.withLock {
            table -> (CheckedContinuation<Value, any Error>?, Task<Void, Never>?) in
            guard var flight = table.flights[key],
                  let continuation = flight.waiters.removeValue(forKey: waiterID) else {
                return (nil, nil)
            }
            if flight.waiters.isEmpty {
                table.flights[key] = nil
                return (continuation, flight.task)
            }
            table.flights[key] = flight
            return (continuation, nil)
        }
        continuation?.resume(throwing: CancellationError())
        abandonedTask?.cancel()
    }

    private func run(_ key: Key, id: UInt64, operation: @Sendable () async throws -> Value) async {
        let result: Result<Value, any Error>
        do {
            result = .success(try await operation())
        } catch {
            result = .failure(error)
        }
        let waiters = table.withLock { table -> [CheckedContinuation<Value, any Error>] in
            guard table.flights[key]?.id == id, let flight = table.flights.removeValue(forKey: key) else {
                return []
            }
            return Array(flight.waiters.values)
        }
        for waiter in waiters {
            waiter.resume(with: result)
        }
    }
}

/// What happened when a waiter tried to join a flight.
private enum Registration {
    case cancelled, joined, mustStart
}
