import HanekeProtocols
import MemoryStore

/// A store whose first read is held, after it has read its value, until the test opens the gate:
/// a way to make another operation land in the middle of a read, without sleeping.
final class GatedStore<Value: Sendable>: Store {
    let memory = MemoryStore<String, Value>(name: "gated")

    private struct Gate {
        var armed = true
        var waiting: CheckedContinuation<Void, Never>?
    }

    private let gate = Locked(Gate())

    /// Whether the first read has read its value and is waiting for the gate.
    var isHoldingARead: Bool { gate.withLock { $0.waiting != nil } }

    /// Lets the held read return.
    func open() {
        gate.withLock { gate in
            defer { gate.waiting = nil }
            return gate.waiting
        }?.resume()
    }

    func value(forKey key: String) async throws -> Value? {
        let value = memory.value(forKey: key)
        let mustWait = gate.withLock { gate in
            defer { gate.armed = false }
            return gate.armed
        }
        if mustWait {
            await withCheckedContinuation { continuation in
                gate.withLock { $0.waiting = continuation }
            }
        }
        return value
    }

    func setValue(_ value: Value, forKey key: String) async throws { memory.setValue(value, forKey: key) }
    func removeValue(forKey key: String) async throws { memory.removeValue(forKey: key) }
    func removeAll() async throws { memory.removeAll() }
    var layerStatistics: [LayerStatistics] { memory.layerStatistics }
}
