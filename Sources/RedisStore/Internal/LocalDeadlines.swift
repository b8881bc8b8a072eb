/// The keys a ``CoherentStore`` keeps in its local layers, each with the time it must leave them:
/// the bound on local lifetimes, enforced by a sweep rather than by an expiry on each local entry,
/// so that a local hit reads no clock.
///
/// A deadline is the time a value was kept plus one constant, so deadlines come in the order they
/// are added and the queue is swept from its head. (A wall clock set back makes a later deadline
/// wait behind an earlier one: its key leaves late by as much as the clock went back.) A key kept
/// again supersedes its earlier deadline: `latest` names the one that counts, and superseded ones
/// are dropped as they come up, or all at once when they outnumber the live ones.
struct LocalDeadlines {
    private struct Item {
        var deadline: Double
        var key: String
        var serial: UInt64
    }

    /// The deadlines, oldest first, from `head` on.
    private var queue: [Item] = []
    private var head = 0
    /// The deadline that counts for each key kept, with the serial of its item in the queue.
    private var latest: [String: (serial: UInt64, deadline: Double)] = [:]
    private var serial: UInt64 = 0

    /// How many keys have a deadline.
    var count: Int { latest.count }

    /// Records that `key` was kept locally and must leave by `deadline` (seconds since the
    /// reference date), superseding any earlier deadline of the key.
    mutating func keep(_ key: String, until deadline: Double) {
        serial &+= 1
        latest[key] = (serial, deadline)
        queue.append(Item(deadline: deadline, key: key, serial: serial))
        if queue.count - head > 2 * latest.count + 1_024 {
            queue = queue[head...].filter { latest[$0.key]?.serial == $0.serial }
            head = 0
        }
    }

    /// The deadline of `key`, or `nil` if it has none (never kept, or already due).
    func deadline(of key: String) -> Double? {
        latest[key]?.deadline
    }

    /// Takes out the keys whose deadline is `now` or earlier, and returns them.
    mutating func takeDue(at now: Double) -> [String] {
        var due: [String] = []
        while head < queue.count, queue[head].deadline <= now {
            let item = queue[head]
            head += 1
            if latest[item.key]?.serial == item.serial {
                latest[item.key] = nil
                due.append(item.key)
            }
        }
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1_024, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return due
    }

    /// Forgets every deadline (the local layers were emptied).
    mutating func removeAll() {
        queue = []
        head = 0
        latest = [:]
    }
}
