/// Several intrusive, circular, doubly linked lists over key ids, stored in two arrays: node `k`
/// (for `k < keyCount`) is key `k`, and node `keyCount + l` is the sentinel of list `l`. A key is
/// in at most one list at a time. The front is the most recently pushed end, the back the oldest.
/// No allocation per node and no dictionary: every operation is O(1) array arithmetic.
struct DenseLinkedLists: Sendable {
    /// Towards the back: `next[sentinel]` is the front of the list.
    private var next: [Int32]
    /// Towards the front: `previous[sentinel]` is the back of the list.
    private var previous: [Int32]
    private let keyCount: Int

    /// Creates `listCount` empty lists able to hold keys `0..<keyCount`.
    init(keyCount: Int, listCount: Int) {
        self.keyCount = keyCount
        let nodes = keyCount + listCount
        next = [Int32](repeating: -1, count: nodes)
        previous = [Int32](repeating: -1, count: nodes)
        for list in 0..<listCount {
            let sentinel = Int32(keyCount + list)
            next[Int(sentinel)] = sentinel
            previous[Int(sentinel)] = sentinel
        }
    }

    @inline(__always)
    private func sentinel(_ list: Int) -> Int {
        keyCount + list
    }

    /// Inserts `key` (which must be in no list) at the front of `list`.
    @inline(__always)
    mutating func pushFront(_ key: Int32, list: Int) {
        let head = sentinel(list)
        let oldFront = next[head]
        next[Int(key)] = oldFront
        previous[Int(key)] = Int32(head)
        previous[Int(oldFront)] = key
        next[head] = key
    }

    /// Unlinks `key` from whatever list holds it.
    @inline(__always)
    mutating func remove(_ key: Int32) {
        let before = previous[Int(key)]
        let after = next[Int(key)]
        next[Int(before)] = after
        previous[Int(after)] = before
    }

    /// Moves `key` (already in some list) to the front of `list`.
    @inline(__always)
    mutating func moveToFront(_ key: Int32, list: Int) {
        remove(key)
        pushFront(key, list: list)
    }

    /// The oldest key of `list`, or nil when it is empty.
    @inline(__always)
    func back(_ list: Int) -> Int32? {
        let last = previous[sentinel(list)]
        return Int(last) == sentinel(list) ? nil : last
    }

    /// The key just in front of `key` (towards the newest end), or nil when `key` is the front.
    @inline(__always)
    func towardsFront(of key: Int32) -> Int32? {
        let before = previous[Int(key)]
        return Int(before) >= keyCount ? nil : before
    }

    /// Every key of `list` from front to back (O(n), for checks).
    func keys(in list: Int) -> [Int32] {
        var result = [Int32]()
        var node = next[sentinel(list)]
        while Int(node) != sentinel(list) {
            result.append(node)
            node = next[Int(node)]
        }
        return result
    }
}
