public import Foundation
public import HanekeProtocols

/// A system clock that notes, while ``readings(during:)`` runs, whether each reading was made by a
/// job of `executor`: a store reads its clock where it does an operation's work, so the readings
/// tell where the work ran.
public final class WhereClock: StoreClock {
    /// The executor the readings are compared with.
    public let executor: IOExecutor
    private let readings = Locked<[Bool]?>(nil)

    /// Creates a clock that notes readings made on `executor`.
    public init(executor: IOExecutor) { self.executor = executor }

    /// The system's time, noted when recording.
    public func now() -> Date {
        let onExecutor = executor.isCurrent
        readings.withLock { $0?.append(onExecutor) }
        return Date()
    }

    /// Whether each reading made while `body` ran was on the executor, in order.
    public func readings(during body: () async throws -> Void) async throws -> [Bool] {
        readings.withLock { $0 = [] }
        try await body()
        return readings.withLock { readings in
            defer { readings = nil }
            return readings ?? []
        }
    }
}
