/// A condition that did not hold in the time a test allowed it.
public struct WaitTimeout: Error, CustomStringConvertible {
    /// What was awaited, and for how long.
    public var description: String
}

/// Waits until `condition` holds, checking every few milliseconds without blocking a thread;
/// throws ``WaitTimeout`` (failing the test) when it still does not hold after `timeout`, and
/// `CancellationError` when the task is cancelled (the test's time limit). For events that take
/// real time — a child process, a timer, a server — never as a delay.
///
/// The timeout is a safety net for an event that never comes, not a claim about how long it
/// takes: on a loaded machine an event of milliseconds took over 10 s. Bound a test by its
/// `.timeLimit`.
/// - Parameters:
///   - timeout: A safety net; 2 minutes by default (the time limit of a test usually ends it first).
///   - what: What is awaited, for the failure's message.
///   - condition: Whether the event has happened.
public func waitUntil(
    timeout: Duration = .seconds(120),
    _ what: @autoclosure () -> String = "the condition",
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            throw WaitTimeout(description: "\(what()) did not hold within \(timeout)")
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Runs `body` for each of `elements`, at most `width` at a time, and returns when all are done.
///
/// For a test of many operations: one after another, each operation's hops wait in line for
/// Swift's two cooperative threads behind every other suite's jobs (30 ms on average, up to a
/// second, beside a CPU hog), and a few hundred of them in a row can outlast a time limit.
public func forEach<Elements: Sequence & Sendable>(
    _ elements: Elements,
    atOnce width: Int,
    _ body: @escaping @Sendable (Elements.Element) async throws -> Void
) async throws where Elements.Element: Sendable {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (position, element) in elements.enumerated() {
            if position >= width { try await group.next() }
            group.addTask { try await body(element) }
        }
        try await group.waitForAll()
    }
}
