import HanekeProtocols
import Logging
import NIOCore

/// The nodes of a Redis Cluster, a pool of connections to each, and which master serves each
/// slot: what a ``RedisStore`` sends through when configured for a cluster.
///
/// - The map of slots comes from `CLUSTER SLOTS`, asked of the known masters, then of the
///   configured nodes, before the first command and again after any sign that it changed.
/// - `MOVED slot host:port` (the slot now lives there for good) updates the slot at once, sends the
///   command again there, and refreshes the whole map in the background (a resharding moves many
///   slots). `ASK slot host:port` (the key is being moved there) sends `ASKING` and the command to
///   that node once, without changing the map.
/// - A node that cannot be reached makes the command wait for a new map (one under way, or one
///   asked for now): if it names another master for the slot (a replica took over), the command
///   is sent there; otherwise it fails (`unavailable`, as a single server down does). A cluster
///   that answers `CLUSTERDOWN` refreshes the map in the background, at most every
///   ``refreshInterval``.
/// - What may hold keys — the masters of the map, and nodes a redirect named since — is told to
///   an observer (``observeNodes(_:)``) when it changes, before a command is sent to a node a
///   redirect named: a ``ClusterTracking`` follows each such node's notices.
/// - Only nodes of the configured cluster are ever sent to (Lettuce's
///   `validateClusterNodeMembership`): the seeds, the nodes the last map names (masters and
///   replicas), and a node the cluster itself lists (`CLUSTER NODES`, asked of a seed first, when
///   a redirect names a node the map does not: a node joining for a resharding holds no slot yet).
///   A redirect to any other address fails the command (`unavailable`), and no connection — so
///   no `AUTH` with the store's credentials — is made there. A map that names more than
///   ``maximumNodes`` nodes is refused.
/// - Pools are made for each member as it is first sent to, and closed once no map names it (a
///   cluster has few nodes; a failed one's pool fails fast while it backs off).
final class RedisCluster: Sendable {
    /// A node's address.
    struct Address: Hashable, Sendable, CustomStringConvertible {
        var host: String
        var port: Int

        /// `host:port`, with brackets around an IPv6 address.
        var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// The shortest time between two refreshes of the map that failures asked for.
    static let refreshInterval: Duration = .milliseconds(100)
    /// The most redirects one command follows.
    static let maximumRedirects = 5
    /// The most nodes a map may name, and members kept (Redis Cluster's own bound is 1,000 nodes).
    static let maximumNodes = 1_000

    /// The settings every node's connections share (credentials, timeouts, TLS); host and port
    /// are each node's.
    private let template: RedisEndpoint
    /// The configured nodes, asked for the map when no known master answers.
    private let seeds: [Address]
    private let connectionCount: Int
    private let backoff: ReconnectBackoff
    private let logger: Logger
    private let state = Locked(State())

    private struct State {
        /// Each slot's master, as an index into `addresses`; `unknown` before the first map.
        var owners = [UInt16](repeating: unknown, count: ClusterSlot.count)
        var addresses: [Address] = []
        var pools: [Address: RedisConnectionPool] = [:]
        /// The masters of the last map, each once.
        var masters: [Address] = []
        /// The refresh under way, which callers needing a map wait for (a future, so that a
        /// cancelled caller stops waiting at once).
        var refresh: EventLoopFuture<Void>?
        /// When the last refresh started.
        var lastRefresh: ContinuousClock.Instant?
        /// Nodes a redirect named that are no master of the last map (a node a slot is being
        /// moved to); forgotten when a map is loaded.
        var redirected: [Address] = []
        /// The nodes commands may be sent to: the seeds, those the last map names, and `listed`.
        var members: Set<Address> = []
        /// Nodes no map named that the cluster listed (`CLUSTER NODES`) when a redirect named
        /// them: members until a map names more than ``RedisCluster/maximumNodes`` with them.
        var listed: Set<Address> = []
        /// Told when the nodes that may hold keys change (``nodesHoldingKeys``).
        var observer: (@Sendable () -> Void)?
        var isShutDown = false
        /// Redirects followed so far, and maps loaded.
        var moved = 0
        var asked = 0
        var maps = 0

        static let unknown = UInt16.max

        /// Notes that a redirect named `address`: the observer to tell if the nodes holding keys
        /// changed.
        mutating func noteRedirect(to address: Address) -> (@Sendable () -> Void)? {
            guard !masters.contains(address), !redirected.contains(address) else { return nil }
            redirected.append(address)
            return observer
        }

        /// The index of `address`, added if new: only a member's, so never more than the members
        /// (at most ``RedisCluster/maximumNodes`` and the seeds), far below `unknown`.
        mutating func index(of address: Address) -> UInt16 {
            if let index = addresses.firstIndex(of: address) { return UInt16(index) }
            addresses.append(address)
            return UInt16(addresses.count - 1)
        }
    }

    init(template: RedisEndpoint, seeds: [Address], connectionCount: Int, backoff: ReconnectBackoff, logger: Logger) {
        self.template = template
        self.seeds = seeds
        self.connectionCount = connectionCount
        self.backoff = backoff
        self.logger = logger
        state.withLock { $0.members = Set(seeds) }
    }

    /// The pool of `address`, made on first use.
    func pool(at address: Address) -> RedisConnectionPool {
        state.withLock { state in
            if let pool = state.pools[address] { return pool }
            var endpoint = template
            endpoint.host = address.host
            endpoint.port = address.port
            let pool = RedisConnectionPool(endpoint: endpoint, size: connectionCount, backoff: backoff, logger: logger)
            if state.isShutDown { pool.shutDown() }
            state.pools[address] = pool
            return pool
        }
    }

    /// Sends `command` to the master of `slot` (any master for `nil`: a command without a key),
    /// following redirects, and returns the reply (an error reply other than a redirect is a
    /// reply).
    /// - Parameter writer: The connection to send through at a node instead of its pool (a
    ///   tracking connection), if any; not used for a command sent after `ASK`.
    /// - Throws: `RedisClientError`, or `CancellationError`.
    func send(
        _ command: RESPValue, slot: Int?, retrying: Bool, writer: (@Sendable (Address) -> RedisConnection?)? = nil
    ) async throws -> RESPValue {
        var asking: Address?
        var redirects = 0
        while true {
            let target: Address
            if let asking {
                target = asking
            } else {
                target = try await master(of: slot)
            }
            let reply: RESPValue
            do {
                reply = if asking != nil {
                    try await pool(at: target).sendAsking(command)
                } else {
                    try await pool(at: target).send(command, retrying: retrying, via: writer?(target))
                }
            } catch let error as RedisClientError where asking == nil && !(error.code == .authentication || error.code == .invalidConfiguration) {
                // The node may have failed and a replica taken over: with a new map that names
                // another master for the slot, the command is sent again there.
                // A command that may have reached the failed node is sent again only if it may be.
                let neverSent = switch error {
                case .connectFailed, .backingOff, .shutDown: true
                default: false
                }
                let refreshed = (try? await refresh(force: true)) != nil
                try Task.checkCancellation()
                guard retrying || neverSent, redirects < Self.maximumRedirects, refreshed,
                    let now = try? await master(of: slot), now != target
                else { throw error }
                redirects += 1
                continue
            }
            guard case .error(let message) = reply, redirects < Self.maximumRedirects else { return reply }
            let moved = Self.redirect(message, kind: "MOVED")
            guard let (slot, address) = moved ?? Self.redirect(message, kind: "ASK") else {
                if message.hasPrefix("CLUSTERDOWN") { refreshSoon() }
                return reply
            }
            guard try await isMember(address) else {
                throw RedisClientError.foreignNode(
                    "the node \(target) redirected to \(address), which is not a node of the configured cluster: not followed"
                )
            }
            if moved != nil {
                let observer = state.withLock { state in
                    state.owners[slot] = state.index(of: address)
                    state.moved += 1
                    return state.noteRedirect(to: address)
                }
                observer?()
                refreshSoon()
                asking = nil
            } else {
                asking = address
                let observer = state.withLock { state in
                    state.asked += 1
                    return state.noteRedirect(to: address)
                }
                observer?()
            }
            redirects += 1
        }
    }

    /// The masters of the current map, each once (the map is made first if there is none).
    /// - Throws: What asking for the map throws.
    func masters() async throws -> [Address] {
        if let masters = state.withLock({ $0.masters.isEmpty ? nil : $0.masters }) { return masters }
        try await refresh(force: true)
        return state.withLock { $0.masters }
    }

    /// The nodes that may hold keys: the masters of the last map, and the nodes a redirect named
    /// since (a slot moving to a node the map does not name yet).
    var nodesHoldingKeys: [Address] {
        state.withLock { $0.masters + $0.redirected }
    }

    /// Sets what is told, on the thread that learns it and before any command is sent there, when
    /// ``nodesHoldingKeys`` changes; `nil` stops telling. The observer must not block.
    func observeNodes(_ observer: (@Sendable () -> Void)?) {
        state.withLock { $0.observer = observer }
    }

    /// The `MOVED` and `ASK` redirects followed so far, and the maps loaded.
    var counts: (moved: Int, asked: Int, maps: Int) {
        state.withLock { ($0.moved, $0.asked, $0.maps) }
    }

    /// Closes every node's connections; later commands fail with `shutDown`.
    func shutDown() {
        let pools = state.withLock { state in
            state.isShutDown = true
            return Array(state.pools.values)
        }
        for pool in pools { pool.shutDown() }
    }

    /// The members known now, for tests.
    var memberCount: Int { state.withLock { $0.members.count } }

    // MARK: - Membership

    /// Whether commands may be sent to `address`: a member already, or, after a new map (from
    /// the seeds first) does not name it, a node the cluster lists in `CLUSTER NODES`.
    /// - Throws: `CancellationError`.
    private func isMember(_ address: Address) async throws -> Bool {
        if state.withLock({ $0.members.contains(address) }) { return true }
        try? await refresh(force: true, seedsFirst: true)
        try Task.checkCancellation()
        if state.withLock({ $0.members.contains(address) }) { return true }
        for node in seeds + state.withLock({ $0.masters }) {
            guard let reply = try? await pool(at: node).send(.command("CLUSTER", "NODES"), retrying: true),
                  let listed = Self.listedNodes(reply, askedOf: node) else { continue }
            guard listed.contains(address) else { return false }
            return state.withLock { state in
                guard state.members.count < Self.maximumNodes + seeds.count else { return false }
                state.listed.insert(address)
                state.members.insert(address)
                return true
            }
        }
        return false
    }

    /// The addresses of a `CLUSTER NODES` reply: a line a node, `<id> <host:port@cport[,name]> …`
    /// (a node without an address, `:0@0`, is the one that answered). `nil` for another reply.
    static func listedNodes(_ reply: RESPValue, askedOf node: Address) -> Set<Address>? {
        guard let text = reply.text else { return nil }
        var listed = Set<Address>()
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 2 else { continue }
            let endpoint = fields[1].split(separator: "@", maxSplits: 1)[0]
            guard let colon = endpoint.lastIndex(of: ":"), let port = Int(endpoint[endpoint.index(after: colon)...]) else { continue }
            var host = endpoint[..<colon]
            if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
            listed.insert(host.isEmpty ? node : Address(host: String(host), port: port))
            if listed.count > maximumNodes { return nil }
        }
        return listed
    }

    // MARK: - The map

    /// The master of `slot`, or of any slot for `nil`; the map is made first if it has none.
    private func master(of slot: Int?) async throws -> Address {
        for attempt in 0..<2 {
            let known = state.withLock { state -> Address? in
                if let slot {
                    let owner = state.owners[slot]
                    return owner == State.unknown ? nil : state.addresses[Int(owner)]
                }
                return state.masters.first
            }
            if let known { return known }
            try await refresh(force: attempt == 0)
        }
        throw RedisClientError.errorReply("CLUSTERDOWN Hash slot not served: no master serves slot \(slot ?? -1) in the cluster's map")
    }

    /// Starts a refresh of the map in the background, unless one is under way or started less
    /// than ``refreshInterval`` ago.
    func refreshSoon() {
        Task { try? await startRefresh(force: false) }
    }

    /// Refreshes the map and waits for it (joining one under way).
    /// - Throws: What loading the map threw, or `CancellationError` as soon as the caller is
    ///   cancelled (the refresh goes on for the others).
    private func refresh(force: Bool, seedsFirst: Bool = false) async throws {
        if let refresh = try await startRefresh(force: force, seedsFirst: seedsFirst) { try await RedisConnectionPool.value(of: refresh) }
    }

    /// The refresh to wait for: one under way, or one started now (always when `force`, otherwise
    /// only once ``refreshInterval`` has passed since the last); `nil` when none is due.
    private func startRefresh(force: Bool, seedsFirst: Bool = false) async throws -> EventLoopFuture<Void>? {
        let group = try await RedisConnectionPool.eventLoopGroup()
        let now = ContinuousClock.now
        let started = state.withLock { current -> (EventLoopFuture<Void>, EventLoopPromise<Void>?)? in
            if let refresh = current.refresh { return (refresh, nil) }
            guard !current.isShutDown else { return nil }
            if !force, let last = current.lastRefresh, now - last < Self.refreshInterval { return nil }
            current.lastRefresh = now
            let promise = group.next().makePromise(of: Void.self)
            current.refresh = promise.futureResult
            return (promise.futureResult, promise)
        }
        guard let (future, promise) = started else { return nil }
        if let promise {
            Task { [self] in
                do {
                    try await loadMap(seedsFirst: seedsFirst)
                    state.withLock { $0.refresh = nil }
                    promise.succeed(())
                } catch {
                    state.withLock { $0.refresh = nil }
                    promise.fail(error)
                }
            }
        }
        return future
    }

    /// Asks the known masters, then the configured nodes (the other way round with
    /// `seedsFirst`), for the map until one answers, and installs it: only the nodes it names (and
    /// the seeds) stay members, and the pools of the others are closed.
    private func loadMap(seedsFirst: Bool = false) async throws {
        let masters = state.withLock { $0.masters }
        let candidates = seedsFirst ? seeds + masters : masters + seeds
        var tried = Set<Address>()
        var lastError: any Error = RedisClientError.errorReply("no node of the cluster was configured")
        for address in candidates where tried.insert(address).inserted {
            do {
                let reply = try await pool(at: address).send(.command("CLUSTER", "SLOTS"), retrying: true)
                let ranges = try Self.slotRanges(reply, askedOf: address)
                let named = Set(ranges.flatMap { [$0.master] + $0.replicas })
                guard named.count <= Self.maximumNodes else {
                    throw RedisClientError.foreignNode(
                        "CLUSTER SLOTS from \(address) named \(named.count) nodes, more than the \(Self.maximumNodes) a cluster may have: the map was not used"
                    )
                }
                let (observer, closed) = state.withLock { state -> ((@Sendable () -> Void)?, [RedisConnectionPool]) in
                    var owners = [UInt16](repeating: State.unknown, count: ClusterSlot.count)
                    var masters: [Address] = []
                    state.addresses = []
                    for range in ranges {
                        let index = state.index(of: range.master)
                        for slot in range.slots { owners[slot] = index }
                        if !masters.contains(range.master) { masters.append(range.master) }
                    }
                    let changed = masters != state.masters || !state.redirected.isEmpty
                    state.owners = owners
                    state.masters = masters
                    state.redirected = []
                    if named.count + state.listed.count > Self.maximumNodes { state.listed = [] }
                    state.members = named.union(seeds).union(state.listed)
                    state.maps += 1
                    var closed: [RedisConnectionPool] = []
                    for address in state.pools.keys where !state.members.contains(address) {
                        if let pool = state.pools.removeValue(forKey: address) { closed.append(pool) }
                    }
                    return (changed ? state.observer : nil, closed)
                }
                observer?()
                for pool in closed { pool.shutDown() }
                return
            } catch let error as CancellationError {
                throw error
            } catch {
                lastError = error
            }
        }
        logger.debug("Could not read the Redis Cluster's map from any node", metadata: ["error": "\(lastError)"])
        throw lastError
    }

    /// The slot ranges, their masters and replicas in a `CLUSTER SLOTS` reply: an array of
    /// `[first, last, [host, port, id, …], replicas…]`. A node without a host (an empty one, or
    /// `?`) is the node that answered; a replica that is not `[host, port, …]` is left out.
    /// - Throws: `RedisClientError.errorReply` for an error reply, or a reply of another shape.
    static func slotRanges(_ reply: RESPValue, askedOf node: Address) throws -> [(slots: ClosedRange<Int>, master: Address, replicas: [Address])] {
        if case .error(let message) = reply { throw RedisClientError.errorReply(message) }
        guard case .array(let entries?) = reply else {
            throw RedisClientError.errorReply("CLUSTER SLOTS answered \(reply.summary), not an array")
        }
        func address(_ value: RESPValue) -> Address? {
            guard case .array(let parts?) = value, parts.count >= 2, case .integer(let port) = parts[1], (1...65_535).contains(port) else { return nil }
            let host = parts[0].text ?? ""
            return Address(host: host.isEmpty || host == "?" ? node.host : host, port: Int(port))
        }
        return try entries.map { entry in
            guard case .array(let parts?) = entry, parts.count >= 3,
                case .integer(let first) = parts[0], case .integer(let last) = parts[1],
                (0..<Int64(ClusterSlot.count)).contains(first), (first..<Int64(ClusterSlot.count)).contains(last),
                let master = address(parts[2])
            else {
                throw RedisClientError.errorReply("CLUSTER SLOTS answered a range that is not [first, last, [host, port, …]]: \(entry.summary)")
            }
            return (Int(first)...Int(last), master, parts.dropFirst(3).compactMap(address))
        }
    }

    /// The slot and address of a `MOVED` or `ASK` error reply (`MOVED 3999 127.0.0.1:6381`); an
    /// address without a host (`:6381`) is on the host of the node that answered — not known
    /// here, so such a reply is not followed.
    static func redirect(_ message: String, kind: String) -> (slot: Int, address: Address)? {
        let parts = message.split(separator: " ")
        guard parts.count == 3, parts[0] == kind, let slot = Int(parts[1]), (0..<ClusterSlot.count).contains(slot),
            let colon = parts[2].lastIndex(of: ":"), let port = Int(parts[2][parts[2].index(after: colon)...]),
            (1...65_535).contains(port)
        else { return nil }
        var host = parts[2][..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else { return nil }
        return (slot, Address(host: String(host), port: port))
    }
}
