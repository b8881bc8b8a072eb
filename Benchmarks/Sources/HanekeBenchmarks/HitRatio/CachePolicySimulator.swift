/// What a cache capacity counts.
enum CapacityUnit: String, Sendable {
    /// Every entry weighs 1; the capacity is a number of objects.
    case objects
    /// Every entry weighs its size; the capacity is a number of bytes.
    case bytes

    /// The weight of one entry of `size` bytes.
    @inline(__always)
    func weight(ofSize size: Int) -> Int {
        self == .objects ? 1 : size
    }
}

/// Everything a policy simulator needs to size its structures.
struct PolicyConfiguration: Sendable {
    /// Capacity in `unit`s.
    var capacity: Int
    /// Whether `capacity` counts objects or bytes.
    var unit: CapacityUnit
    /// Number of distinct keys in the trace (ids are below it), for dense per-key arrays.
    var keyCount: Int
    /// Roughly how many entries fit: `capacity` for objects, capacity / mean object size for bytes.
    /// Sizes frequency sketches and sample periods.
    var expectedEntries: Int
    /// Tunable parameters shared by all runs.
    var parameters: PolicyParameters
}

extension PolicyConfiguration {
    /// The ghost rule that sizes an adaptive policy's recency region, its ghosts reaching
    /// `ghostAdaptFraction` of the capacity.
    func ghostBalancer() -> GhostBalancer {
        GhostBalancer(keyCount: keyCount, reach: Int(Double(capacity) * parameters.ghostAdaptFraction))
    }

    /// The hill climber that sizes an adaptive policy's recency region, sampling every
    /// `climberSampleMultiplier` × `expectedEntries` requests.
    func hillClimber() -> HillClimber {
        HillClimber(samplePeriod: Int(Double(expectedEntries) * parameters.climberSampleMultiplier),
                    initialStep: parameters.climberStep, decay: parameters.climberDecay,
                    restartThreshold: parameters.climberRestartThreshold)
    }
}

/// The one set of tunable parameters used for every trace and size (no per-trace tuning).
struct PolicyParameters: Sendable {
    /// Initial (and, for static W-TinyLFU, fixed) share of the capacity given to the LRU window.
    var tinyLFUWindowFraction = 0.01
    /// Share of the main space given to the protected segment.
    var tinyLFUProtectedFraction = 0.8
    /// The frequency sketch halves its counters after this many × `expectedEntries` increments.
    var sketchResetMultiplier = 10.0
    /// Whether the sketch uses conservative update (1) or increments all four counters (0).
    var sketchConservativeUpdate = 0
    /// Hill climbers sample the hit rate over this many × `expectedEntries` requests.
    var climberSampleMultiplier = 10.0
    /// The hill climber's initial and restart step, as a share of the capacity.
    var climberStep = 0.0625
    /// The factor applied to the step after every sample that does not restart it.
    var climberDecay = 0.98
    /// A hit-rate change (absolute, in [0, 1]) at least this large restarts the step size.
    var climberRestartThreshold = 0.05
    /// Initial share of the capacity given to S3-FIFO's small queue.
    var s3SmallFraction = 0.10
    /// Smallest small-queue share the adaptive S3-FIFO may choose.
    var s3MinimumSmallFraction = 0.01
    /// Largest small-queue share the adaptive S3-FIFO may choose.
    var s3MaximumSmallFraction = 0.90
    /// Reach of the ghost rule's two ghosts, as a share of the capacity.
    var ghostAdaptFraction = 0.25
    /// Accesses (while in the small queue) needed to be promoted to main instead of sent to the ghost.
    var s3PromotionThreshold = 1
    /// 1: a hit in S3-FIFO's small queue also moves the entry to the small queue's front (the small
    /// queue in LRU order); 0 (the default, and the stores): the small queue is a FIFO.
    var s3SmallQueueLRU = 0

    /// Sets a parameter by name (the property name) from a decimal value, for experiments.
    /// - Returns: false when the name is unknown or the value is not a number.
    mutating func set(_ name: String, to text: String) -> Bool {
        guard let value = Double(text) else { return false }
        switch name {
        case "tinyLFUWindowFraction": tinyLFUWindowFraction = value
        case "tinyLFUProtectedFraction": tinyLFUProtectedFraction = value
        case "sketchResetMultiplier": sketchResetMultiplier = value
        case "climberSampleMultiplier": climberSampleMultiplier = value
        case "climberStep": climberStep = value
        case "climberDecay": climberDecay = value
        case "climberRestartThreshold": climberRestartThreshold = value
        case "s3SmallFraction": s3SmallFraction = value
        case "s3MinimumSmallFraction": s3MinimumSmallFraction = value
        case "s3MaximumSmallFraction": s3MaximumSmallFraction = value
        case "s3PromotionThreshold": s3PromotionThreshold = Int(value)
        case "s3SmallQueueLRU": s3SmallQueueLRU = Int(value)
        case "ghostAdaptFraction": ghostAdaptFraction = value
        case "sketchConservativeUpdate": sketchConservativeUpdate = Int(value)
        default: return false
        }
        return true
    }

    /// Every parameter as `name=value`, for reports.
    var summary: String {
        [
            "tinyLFUWindowFraction=\(tinyLFUWindowFraction)",
            "tinyLFUProtectedFraction=\(tinyLFUProtectedFraction)",
            "sketchResetMultiplier=\(sketchResetMultiplier)",
            "climberSampleMultiplier=\(climberSampleMultiplier)",
            "climberStep=\(climberStep)",
            "climberDecay=\(climberDecay)",
            "climberRestartThreshold=\(climberRestartThreshold)",
            "s3SmallFraction=\(s3SmallFraction)",
            "s3MinimumSmallFraction=\(s3MinimumSmallFraction)",
            "s3MaximumSmallFraction=\(s3MaximumSmallFraction)",
            "s3PromotionThreshold=\(s3PromotionThreshold)",
            "s3SmallQueueLRU=\(s3SmallQueueLRU)",
            "ghostAdaptFraction=\(ghostAdaptFraction)",
            "sketchConservativeUpdate=\(sketchConservativeUpdate)",
        ].joined(separator: " ")
    }
}

/// A cache replacement policy simulated over key ids: it only tracks which keys are resident.
/// An object heavier than the whole capacity is never admitted. A resident entry keeps the weight
/// it was admitted with (a later request's different size does not resize it).
protocol CachePolicySimulator {
    /// The policy's name in reports.
    var name: String { get }
    /// Capacity in the configuration's unit.
    var capacity: Int { get }
    /// Total weight of the resident entries, as the policy accounts it.
    var usedCapacity: Int { get }
    /// Records one request.
    /// - Parameters:
    ///   - key: The key id, below the configuration's `keyCount`.
    ///   - size: The request's size in bytes (ignored when the capacity counts objects).
    /// - Returns: Whether the key was resident (a hit).
    mutating func access(key: Int32, size: Int) -> Bool
    /// Total weight of the resident entries recomputed by walking the structures (O(n), for checks).
    func recomputedUsage() -> Int
}

/// The policies the driver knows.
enum PolicyKind: String, CaseIterable, Sendable {
    /// Least recently used.
    case lru = "lru"
    /// W-TinyLFU with a fixed 1% window.
    case tinyLFU = "w-tinylfu"
    /// W-TinyLFU whose window share is tuned by a hill climber (Caffeine).
    case adaptiveTinyLFU = "w-tinylfu-adaptive"
    /// W-TinyLFU whose window share is tuned by the ARC-style ghost rule.
    case ghostTinyLFU = "w-tinylfu-ghost"
    /// S3-FIFO with a fixed 10% small queue.
    case s3FIFO = "s3-fifo"
    /// S3-FIFO whose small-queue share is tuned by the ARC-style ghost rule.
    case adaptiveS3FIFO = "s3-fifo-adaptive"
    /// S3-FIFO whose small-queue share is tuned by a hill climber.
    case climberS3FIFO = "s3-fifo-climber"
    /// SIEVE, a reference.
    case sieve = "sieve"

    /// Simulates this policy over a whole trace.
    /// - Parameters:
    ///   - trace: The requests.
    ///   - configuration: Capacity and parameters.
    ///   - verify: Whether to check the capacity invariant after every request (slower).
    func simulate(_ trace: SimulationTrace, configuration: PolicyConfiguration, verify: Bool) -> SimulationCounts {
        switch self {
        case .lru:
            var policy = LRUSimulator(configuration)
            return SimulationLoop.run(&policy, trace: trace, unit: configuration.unit, verify: verify)
        case .tinyLFU, .adaptiveTinyLFU, .ghostTinyLFU:
            let adaptation: WTinyLFUSimulator.WindowAdaptation =
                self == .tinyLFU ? .fixed : self == .adaptiveTinyLFU ? .hillClimber : .ghosts
            var policy = WTinyLFUSimulator(configuration, adaptation: adaptation)
            return SimulationLoop.run(&policy, trace: trace, unit: configuration.unit, verify: verify)
        case .s3FIFO, .adaptiveS3FIFO, .climberS3FIFO:
            let adaptation: S3FIFOSimulator.SmallQueueAdaptation =
                self == .s3FIFO ? .fixed : self == .climberS3FIFO ? .hillClimber : .ghosts
            var policy = S3FIFOSimulator(configuration, adaptation: adaptation)
            return SimulationLoop.run(&policy, trace: trace, unit: configuration.unit, verify: verify)
        case .sieve:
            var policy = SieveSimulator(configuration)
            return SimulationLoop.run(&policy, trace: trace, unit: configuration.unit, verify: verify)
        }
    }
}

/// Hit and byte counts of one simulation.
struct SimulationCounts: Sendable {
    /// Requests simulated.
    var requests = 0
    /// Requests that hit.
    var hits = 0
    /// Bytes requested (0 without sizes).
    var requestedBytes = 0
    /// Bytes of the requests that hit (0 without sizes).
    var hitBytes = 0
    /// Requests after which the policy held more than its capacity (checked only when verifying).
    var capacityViolations = 0

    /// Hits / requests.
    var hitRatio: Double { requests == 0 ? 0 : Double(hits) / Double(requests) }

    /// Hit bytes / requested bytes, or nil without sizes.
    var byteHitRatio: Double? { requestedBytes == 0 ? nil : Double(hitBytes) / Double(requestedBytes) }

    /// Counts one request.
    @inline(__always)
    mutating func record(hit: Bool, size: Int) {
        requests += 1
        requestedBytes += size
        if hit {
            hits += 1
            hitBytes += size
        }
    }
}

/// The request loop shared by every policy, generic so that each policy's `access` is inlined.
enum SimulationLoop {
    /// How often (in requests) a verifying run recomputes the usage by walking the structures.
    static let recomputeInterval = 997

    /// Feeds every request of `trace` to `policy` and counts hits.
    /// - Parameters:
    ///   - policy: The simulator, mutated in place.
    ///   - trace: The requests; sizes of 0 are used when the trace has none.
    ///   - unit: The capacity unit (only decides whether sizes are needed).
    ///   - verify: Whether to check the capacity invariant after every request.
    static func run<Policy: CachePolicySimulator>(
        _ policy: inout Policy, trace: SimulationTrace, unit: CapacityUnit, verify: Bool
    ) -> SimulationCounts {
        var counts = SimulationCounts()
        let sizes = trace.sizes
        for index in 0..<trace.requestCount {
            let size = sizes?[index] ?? 0
            let hit = policy.access(key: trace.keys[index], size: size)
            counts.record(hit: hit, size: size)
            if verify && !holdsCapacity(policy, at: index) {
                counts.capacityViolations += 1
            }
        }
        return counts
    }

    /// Whether the policy is within its capacity (and, now and then, whether its accounting agrees
    /// with a walk of its structures).
    private static func holdsCapacity<Policy: CachePolicySimulator>(_ policy: Policy, at index: Int) -> Bool {
        guard policy.usedCapacity <= policy.capacity else { return false }
        guard index % recomputeInterval == 0 else { return true }
        return policy.recomputedUsage() == policy.usedCapacity
    }
}
