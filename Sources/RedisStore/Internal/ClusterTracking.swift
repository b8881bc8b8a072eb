import HanekeProtocols
import Logging

/// Server-assisted client-side caching for a ``RedisStore`` on a Redis Cluster. A node notices
/// only the keys it holds, so every node that may hold the store's keys — each master of the
/// cluster's map, and a node that a redirect named (a slot moving to a node the map does not name
/// yet) — has a ``Tracking`` of its own: a listener there, and a writer there, which the store's
/// modifications of that node's keys go through (so that, as with one server, this machine's own
/// writes are not noticed back to it).
///
/// Subscribers are told every node's notices of keys as they come, and
/// ``Tracking/Notice/reset(coherent:)`` whenever a node's tracking is lost or back, or a node stops
/// being followed — coherent only while every followed node's tracking is up. A node starts being
/// followed before any command is sent to it (the cluster tells of a redirect to a new node
/// before following it), and its tracking starts down: nothing read from it is kept locally until
/// its notices arrive, and the local layers are emptied then.
///
/// While not coherent, the cluster's map is asked for every `pingInterval`: a master that failed
/// leaves the map once a replica has taken its place, and the replica is followed instead.
final class ClusterTracking: KeyTracking {
    private typealias Address = RedisCluster.Address

    private struct Node {
        let tracking: Tracking
        var subscription: Int?
        var coherent = false
    }

    private struct State {
        var nodes: [Address: Node] = [:]
        var subscribers: [Int: @Sendable (Tracking.Notice) -> Void] = [:]
        var nextSubscriber = 0
        var stopped = false

        /// Whether notices arrive from every node followed (and one is).
        var coherent: Bool { !stopped && !nodes.isEmpty && nodes.values.allSatisfy(\.coherent) }

        /// Tells every subscriber `notice`. Called under the lock, so that resets decided one
        /// after another reach subscribers in that order (a subscriber must not block, nor call
        /// back into the tracking).
        func publish(_ notice: Tracking.Notice) {
            for subscriber in subscribers.values { subscriber(notice) }
        }
    }

    private let cluster: RedisCluster
    private let prefix: String
    private let pingInterval: Duration
    private let logger: Logger
    private let state = Locked(State())
    private let watcher = Locked<Task<Void, Never>?>(nil)

    /// Starts following the nodes of `cluster` that may hold keys of `prefix` (once the map is
    /// known: it is asked for now if it is not).
    init(cluster: RedisCluster, prefix: String, pingInterval: Duration, logger: Logger) {
        self.cluster = cluster
        self.prefix = prefix
        self.pingInterval = pingInterval
        self.logger = logger
        cluster.observeNodes { [weak self] in self?.follow() }
        let task = Task { [weak self, cluster] in
            // The first map; while no node answers, asked for again every `pingInterval`.
            while !Task.isCancelled, (try? await cluster.masters()) == nil {
                try? await Task.sleep(for: pingInterval)
            }
            self?.follow()
            while !Task.isCancelled {
                try? await Task.sleep(for: pingInterval)
                guard let self, !Task.isCancelled else { return }
                if !state.withLock({ $0.coherent }) { cluster.refreshSoon() }
            }
        }
        watcher.withLock { $0 = task }
    }

    deinit {
        stop()
    }

    func writer(at address: RedisCluster.Address?) -> RedisConnection? {
        guard let address else { return nil }
        return state.withLock { $0.nodes[address]?.tracking }?.writer
    }

    func subscribe(_ handler: @escaping @Sendable (Tracking.Notice) -> Void) -> Int {
        state.withLock { state in
            defer { state.nextSubscriber += 1 }
            state.subscribers[state.nextSubscriber] = handler
            handler(.reset(coherent: state.coherent))
            return state.nextSubscriber
        }
    }

    func unsubscribe(_ number: Int) {
        state.withLock { _ = $0.subscribers.removeValue(forKey: number) }
    }

    func stop() {
        cluster.observeNodes(nil)
        watcher.withLock { $0?.cancel() }
        let nodes = state.withLock { state -> [Node] in
            guard !state.stopped else { return [] }
            state.stopped = true
            defer { state.nodes = [:] }
            state.publish(.reset(coherent: false))
            return Array(state.nodes.values)
        }
        for node in nodes { end(node) }
    }

    /// Follows the nodes that may hold keys now: a tracking for each new one (subscribed before
    /// this returns), none for those gone.
    private func follow() {
        let (added, removed) = state.withLock { state -> ([(Address, Tracking)], [Node]) in
            guard !state.stopped else { return ([], []) }
            let current = cluster.nodesHoldingKeys
            var added: [(Address, Tracking)] = []
            for address in current where state.nodes[address] == nil {
                let tracking = Tracking(pool: cluster.pool(at: address), prefix: prefix, pingInterval: pingInterval, logger: logger)
                state.nodes[address] = Node(tracking: tracking)
                added.append((address, tracking))
            }
            var removed: [Node] = []
            for address in state.nodes.keys where !current.contains(address) {
                if let node = state.nodes.removeValue(forKey: address) { removed.append(node) }
            }
            // A node no longer followed: notices it sent may not have been applied (and the
            // coherent state may change); an added one tells its own reset when subscribed.
            if !removed.isEmpty { state.publish(.reset(coherent: state.coherent)) }
            return (added, removed)
        }
        for (address, tracking) in added {
            let identity = ObjectIdentifier(tracking)
            let number = tracking.subscribe { [weak self] notice in self?.receive(notice, from: address, identity) }
            let kept = state.withLock { state in
                guard let node = state.nodes[address], ObjectIdentifier(node.tracking) == identity else { return false }
                state.nodes[address]?.subscription = number
                return true
            }
            if !kept {
                // Stopped being followed while it subscribed.
                tracking.unsubscribe(number)
                tracking.stop()
            }
        }
        for node in removed { end(node) }
    }

    /// A node's notice, passed on; a reset passes on whether every node is coherent now.
    private func receive(_ notice: Tracking.Notice, from address: Address, _ identity: ObjectIdentifier) {
        state.withLock { state in
            guard let node = state.nodes[address], ObjectIdentifier(node.tracking) == identity else { return }
            switch notice {
            case .invalidated:
                state.publish(notice)
            case .reset(let coherent):
                state.nodes[address]?.coherent = coherent
                state.publish(.reset(coherent: state.coherent))
            }
        }
    }

    /// Stops a node's tracking (its reset is not passed on: the node is no longer followed).
    private func end(_ node: Node) {
        if let subscription = node.subscription { node.tracking.unsubscribe(subscription) }
        node.tracking.stop()
    }
}
