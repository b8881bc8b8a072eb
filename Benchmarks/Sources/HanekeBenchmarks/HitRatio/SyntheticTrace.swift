import Foundation

/// Size and seed of the synthetic traces.
struct SyntheticTraceOptions: Sendable {
    /// Number of requests in each trace.
    var requests = 2_000_000
    /// Size of the key universe (see each generator for how it is used).
    var keys = 200_000
    /// Seed of every generator; each trace mixes in its own name so traces are independent.
    var seed: UInt64 = 1
}

/// The synthetic workloads. Every generator is deterministic for given options; ids are renumbered
/// densely afterwards, so "distinct keys" always means keys that actually occur in the trace.
enum SyntheticTrace: String, CaseIterable, Sendable {
    /// Every request is an independent Zipf(0.6) draw over `keys` keys.
    case zipf06 = "zipf-0.6"
    /// Every request is an independent Zipf(0.8) draw over `keys` keys.
    case zipf08 = "zipf-0.8"
    /// Every request is an independent Zipf(1.0) draw over `keys` keys.
    case zipf10 = "zipf-1.0"
    /// Every request is an independent Zipf(1.2) draw over `keys` keys.
    case zipf12 = "zipf-1.2"
    /// Each request is, with probability 0.25, a fresh key requested only this once; otherwise a
    /// Zipf(1.0) draw over `keys` keys.
    case zipfOneHit = "zipf-1.0-one-hit"
    /// Zipf(0.9) draws over `keys` keys; after every 200,000 Zipf requests comes a sequential scan
    /// of a fixed range of `keys / 10` keys outside the Zipf set (the same range, in the same order,
    /// every time, like a periodic batch job reading one table).
    case zipfScan = "zipf-0.9-scan"
    /// A cyclic loop over `0.15 × keys` keys (1.5× a cache of 10% of the distinct keys), with the
    /// remaining `0.85 × keys` keys each requested exactly once, spread evenly through the trace so
    /// that the trace has `keys` distinct keys.
    case loop = "loop"
    /// Zipf(1.0) draws over `keys` keys; every 500,000 requests the popularity moves to an entirely
    /// new set of `keys` keys (the old ones are never requested again).
    case shiftingHot = "shifting-hot"
    /// Recency only: a key is first requested and then re-read 2–5 more times (uniform), each
    /// re-read 1–5,000 requests after the previous read (log-uniform gap), then never again. New
    /// keys fill every slot not taken by a due re-read. `keys` is not used: the number of distinct
    /// keys follows from the number of requests (about requests / 4.5).
    case recency = "recency"
    /// Phases of 250,000 requests alternating between the recency workload above (pending re-reads
    /// are dropped at the end of each recency phase) and a cyclic loop over a fixed key set whose
    /// size is 1.5× a 10% cache of the whole trace's distinct keys; the loop resumes where it
    /// stopped, like Caffeine's stress test alternating a recency trace with a loop.
    case recencyLoop = "recency-loop"

    /// Whether the trace belongs to the Zipf family of the goal (the four Zipf traces and the
    /// one-hit-wonder variant); the others are the "other" traces.
    var isZipfFamily: Bool {
        switch self {
        case .zipf06, .zipf08, .zipf10, .zipf12, .zipfOneHit: true
        default: false
        }
    }

    /// Generates the trace.
    /// - Parameter options: Request count, key universe and seed.
    func generate(_ options: SyntheticTraceOptions) -> SimulationTrace {
        var random = SimulationRandom(seed: options.seed ^ SimulationRandom.mix64(nameHash))
        let generator = SyntheticGenerators(requests: options.requests, keys: max(options.keys, 10))
        let rawKeys: [Int]
        switch self {
        case .zipf06: rawKeys = generator.zipf(exponent: 0.6, random: &random)
        case .zipf08: rawKeys = generator.zipf(exponent: 0.8, random: &random)
        case .zipf10: rawKeys = generator.zipf(exponent: 1.0, random: &random)
        case .zipf12: rawKeys = generator.zipf(exponent: 1.2, random: &random)
        case .zipfOneHit: rawKeys = generator.zipfWithOneHitWonders(random: &random)
        case .zipfScan: rawKeys = generator.zipfWithScans(random: &random)
        case .loop: rawKeys = generator.loopWithColdKeys()
        case .shiftingHot: rawKeys = generator.shiftingHotSet(random: &random)
        case .recency: rawKeys = generator.recency(random: &random)
        case .recencyLoop: rawKeys = generator.recencyAlternatingWithLoop(random: &random)
        }
        return SimulationTrace(name: rawValue, rawKeys: rawKeys)
    }

    /// A stable hash of the name (FNV-1a), so each trace gets its own random stream.
    private var nameHash: UInt64 {
        rawValue.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
    }
}

/// The generators behind `SyntheticTrace`, producing raw (not yet dense) keys.
struct SyntheticGenerators: Sendable {
    /// Number of requests to produce.
    let requests: Int
    /// Size of the key universe.
    let keys: Int

    /// Fraction of one-hit-wonder requests in `zipf-1.0-one-hit`.
    static let oneHitFraction = 0.25
    /// Zipf requests between two scans in `zipf-0.9-scan`.
    static let requestsBetweenScans = 200_000
    /// Requests between two shifts of the hot set in `shifting-hot`.
    static let requestsPerHotSet = 500_000
    /// Loop size as a fraction of the distinct keys: 1.5 × a 10% cache.
    static let loopFraction = 0.15
    /// Phase length of `recency-loop`.
    static let requestsPerPhase = 250_000

    /// Independent Zipf draws; rank r is raw key r - 1.
    func zipf(exponent: Double, random: inout SimulationRandom) -> [Int] {
        let sampler = ZipfSampler(count: keys, exponent: exponent)
        return (0..<requests).map { _ in sampler.sample(using: &random) - 1 }
    }

    /// Zipf(1.0) mixed with fresh keys (raw keys from `keys` up) that never recur.
    func zipfWithOneHitWonders(random: inout SimulationRandom) -> [Int] {
        let sampler = ZipfSampler(count: keys, exponent: 1.0)
        var nextFresh = keys
        var result = [Int]()
        result.reserveCapacity(requests)
        for _ in 0..<requests {
            if random.nextUnitDouble() < Self.oneHitFraction {
                result.append(nextFresh)
                nextFresh += 1
            } else {
                result.append(sampler.sample(using: &random) - 1)
            }
        }
        return result
    }

    /// Zipf(0.9) with a scan of the fixed range `keys ..< keys + keys / 10` after every
    /// `requestsBetweenScans` Zipf requests.
    func zipfWithScans(random: inout SimulationRandom) -> [Int] {
        let sampler = ZipfSampler(count: keys, exponent: 0.9)
        let scanLength = max(1, keys / 10)
        var result = [Int]()
        result.reserveCapacity(requests)
        var zipfSinceScan = 0
        while result.count < requests {
            if zipfSinceScan == Self.requestsBetweenScans {
                for offset in 0..<min(scanLength, requests - result.count) {
                    result.append(keys + offset)
                }
                zipfSinceScan = 0
            } else {
                result.append(sampler.sample(using: &random) - 1)
                zipfSinceScan += 1
            }
        }
        return result
    }

    /// A cyclic loop over `0.15 × keys` keys with the other keys requested once each, spread
    /// evenly (Bresenham-style) through the trace.
    func loopWithColdKeys() -> [Int] {
        let loopLength = max(1, Int((Double(keys) * Self.loopFraction).rounded()))
        let coldCount = min(max(0, keys - loopLength), requests)
        var result = [Int]()
        result.reserveCapacity(requests)
        var loopPosition = 0
        var coldEmitted = 0
        for index in 0..<requests {
            let coldDue = (index + 1) * coldCount / requests
            if coldEmitted < coldDue {
                result.append(loopLength + coldEmitted)
                coldEmitted += 1
            } else {
                result.append(loopPosition)
                loopPosition = (loopPosition + 1) % loopLength
            }
        }
        return result
    }

    /// Zipf(1.0) over `keys` keys whose identities move to a fresh block of keys every
    /// `requestsPerHotSet` requests.
    func shiftingHotSet(random: inout SimulationRandom) -> [Int] {
        let sampler = ZipfSampler(count: keys, exponent: 1.0)
        return (0..<requests).map { index in
            let phase = index / Self.requestsPerHotSet
            return phase * keys + sampler.sample(using: &random) - 1
        }
    }

    /// The recency-only workload (see `SyntheticTrace.recency`).
    func recency(random: inout SimulationRandom) -> [Int] {
        var stream = RecencyStream()
        return (0..<requests).map { _ in stream.next(random: &random) }
    }

    /// Recency phases alternating with loop phases (see `SyntheticTrace.recencyLoop`).
    func recencyAlternatingWithLoop(random: inout SimulationRandom) -> [Int] {
        let phaseCount = (requests + Self.requestsPerPhase - 1) / Self.requestsPerPhase
        let phaseLengths = (0..<phaseCount).map { min(Self.requestsPerPhase, requests - $0 * Self.requestsPerPhase) }
        // First the recency phases, so that the loop can be sized from their distinct keys.
        var stream = RecencyStream()
        var recencyPhases = [[Int]]()
        for phase in stride(from: 0, to: phaseCount, by: 2) {
            recencyPhases.append((0..<phaseLengths[phase]).map { _ in stream.next(random: &random) })
            stream.dropPending()
        }
        let recencyKeys = stream.keysStarted
        // L = 0.15 × (recencyKeys + L)  ⇒  L = 0.15 / 0.85 × recencyKeys.
        let loopLength = max(1, Int((Double(recencyKeys) * Self.loopFraction / (1 - Self.loopFraction)).rounded()))
        var result = [Int]()
        result.reserveCapacity(requests)
        var loopPosition = 0
        for phase in 0..<phaseCount {
            if phase % 2 == 0 {
                result.append(contentsOf: recencyPhases[phase / 2])
            } else {
                for _ in 0..<phaseLengths[phase] {
                    result.append(recencyKeys + loopPosition)
                    loopPosition = (loopPosition + 1) % loopLength
                }
            }
        }
        return result
    }
}

/// The state of the recency-only workload: a min-heap of scheduled re-reads; a new key is started
/// whenever no re-read is due.
struct RecencyStream: Sendable {
    /// Fewest re-reads after a key's first request.
    static let minimumRereads = 2
    /// Most re-reads after a key's first request.
    static let maximumRereads = 5
    /// Longest gap, in requests, between two reads of a key.
    static let maximumGap = 5_000.0

    private struct Pending: Sendable {
        var due: Int
        var key: Int
        var remaining: Int
    }

    private var heap: [Pending] = []
    private var time = 0
    /// Number of distinct keys started so far (raw keys are `0..<keysStarted`).
    private(set) var keysStarted = 0

    /// The next request: the earliest due re-read, or else a new key.
    mutating func next(random: inout SimulationRandom) -> Int {
        defer { time += 1 }
        if let top = heap.first, top.due <= time {
            var pending = popEarliest()
            if pending.remaining > 1 {
                pending.remaining -= 1
                pending.due = time + gap(random: &random)
                push(pending)
            }
            return pending.key
        }
        let key = keysStarted
        keysStarted += 1
        let rereads = random.nextInt(in: Self.minimumRereads...Self.maximumRereads)
        push(Pending(due: time + gap(random: &random), key: key, remaining: rereads))
        return key
    }

    /// Forgets every scheduled re-read (used at the end of a recency phase).
    mutating func dropPending() {
        heap.removeAll(keepingCapacity: true)
    }

    /// A log-uniform gap in `1...maximumGap`.
    private func gap(random: inout SimulationRandom) -> Int {
        max(1, Int(exp(random.nextUnitDouble() * log(Self.maximumGap)).rounded()))
    }

    private mutating func push(_ pending: Pending) {
        heap.append(pending)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popEarliest() -> Pending {
        let earliest = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(from: 0)
        }
        return earliest
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].due < heap[smallest].due { smallest = left }
            if right < heap.count && heap[right].due < heap[smallest].due { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
