import Dispatch
public import Testing

/// A trait for suites whose bodies call blocking code on purpose — the synchronous `FileStore`
/// API, files prepared with `FileManager` (every Foundation write calls `fsync`), the tool run in
/// process — so that they run on threads of their own, as a server calls a blocking API from
/// threads of its own, instead of keeping one of Swift's cooperative threads (two on a 2-core
/// machine) from every other test.
///
/// The body's task prefers ``BlockingBodyExecutor``: its jobs, and those of the async functions it
/// awaits, run there. Tasks the product starts itself (`Task {}`) still run on the cooperative
/// pool, under the blocking watchdog.
public struct OffThePoolTrait: SuiteTrait, TestTrait, TestScoping {
    /// Each test of a suite gets the scope.
    public var isRecursive: Bool { true }

    /// Runs a test case's body with ``BlockingBodyExecutor`` as its task's executor.
    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(BlockingBodyExecutor.shared) {
            try await function()
        }
    }
}

extension Trait where Self == OffThePoolTrait {
    /// Runs the bodies of a suite's tests on threads of their own: see ``OffThePoolTrait``.
    public static var offThePool: Self { OffThePoolTrait() }
}

/// The task executor of test bodies that block: a concurrent Dispatch queue, which adds threads
/// while its jobs block (the cooperative pool never does).
public final class BlockingBodyExecutor: TaskExecutor {
    /// The one executor for every such test.
    public static let shared = BlockingBodyExecutor()

    private let queue = DispatchQueue(label: "haneke.test.blocking-bodies", attributes: .concurrent)

    /// Runs `job` on one of the queue's threads.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
