package import Foundation
import Synchronization

/// The bytes the proxy holds for requests and responses in flight, across every connection, and
/// the most it may hold: request bodies as they are read, upstream bodies as they are collected,
/// and response bodies while they are written. Past the limit new work is answered `503`.
///
/// A stored body that several responses write at once (a hit in the memory layer, which every
/// response shares without a copy) is counted once, however many connections write it.
///
/// Concurrency: one `Mutex`.
package final class MemoryBudget: Sendable {
    /// What a response's body holds of the budget until it is written or dropped.
    package struct Charge: Sendable {
        fileprivate var shared: SharedBody?
        fileprivate var bytes: Int
    }

    /// A stored body's storage: its first byte's address and its length.
    fileprivate struct SharedBody: Hashable {
        var address: UInt
        var count: Int
    }

    private struct State {
        var used = 0
        var peak = 0
        /// The stored bodies being written, with how many responses write each.
        var shared: [SharedBody: Int] = [:]
    }

    /// The most bytes in flight.
    package let limit: Int
    private let state = Mutex(State())

    /// Creates a budget of `limit` bytes.
    /// - Parameter limit: The most bytes in flight.
    package init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// The bytes in flight now.
    package var used: Int { state.withLock { $0.used } }

    /// The most bytes in flight at once so far.
    package var peak: Int { state.withLock { $0.peak } }

    /// Whether nothing more fits.
    package var isSpent: Bool { state.withLock { $0.used >= limit } }

    /// Takes `bytes` from the budget, if they fit.
    /// - Parameter bytes: The bytes to hold.
    /// - Returns: Whether they were taken; `false` (nothing taken) when they do not fit.
    package func reserve(_ bytes: Int) -> Bool {
        state.withLock { state in Self.take(bytes, from: &state, limit: limit) }
    }

    /// Gives back bytes ``reserve(_:)`` took.
    /// - Parameter bytes: The bytes.
    package func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        state.withLock { $0.used -= bytes }
    }

    /// Takes a response body's bytes from the budget until ``release(_:)-(Charge)``: a body whose
    /// storage another response holds already is charged nothing more.
    /// - Parameter body: The body, which the caller keeps unchanged until it gives the charge back.
    /// - Returns: The charge; `nil` (nothing taken) when the body does not fit.
    package func charge(_ body: Data) -> Charge? {
        // Only a body on the heap has storage of its own to share; a few bytes are counted alone.
        guard body.count > 64 else {
            return charge(bytes: body.count)
        }
        let shared = SharedBody(address: body.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }, count: body.count)
        return state.withLock { state -> Charge? in
            if let writers = state.shared[shared] {
                state.shared[shared] = writers + 1
                return Charge(shared: shared, bytes: 0)
            }
            guard Self.take(shared.count, from: &state, limit: limit) else { return nil }
            state.shared[shared] = 1
            return Charge(shared: shared, bytes: shared.count)
        }
    }

    /// Takes `bytes` of a response's own body from the budget until ``release(_:)-(Charge)``.
    /// - Parameter bytes: The body's length.
    /// - Returns: The charge; `nil` (nothing taken) when the body does not fit.
    package func charge(bytes: Int) -> Charge? {
        reserve(bytes) ? Charge(shared: nil, bytes: bytes) : nil
    }

    /// Gives back what ``charge(_:)`` took: a shared body's bytes once its last writer is done.
    /// - Parameter charge: The charge.
    package func release(_ charge: Charge) {
        guard let shared = charge.shared else { return release(charge.bytes) }
        state.withLock { state in
            guard let writers = state.shared[shared] else { return }
            if writers > 1 {
                state.shared[shared] = writers - 1
            } else {
                state.shared[shared] = nil
                state.used -= shared.count
            }
        }
    }

    private static func take(_ bytes: Int, from state: inout State, limit: Int) -> Bool {
        guard bytes <= limit - state.used else { return false }
        state.used += bytes
        state.peak = max(state.peak, state.used)
        return true
    }
}
