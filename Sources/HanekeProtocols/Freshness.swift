/// How a ``FetchingStore`` treats the age of its values: how long they live, when one is refreshed in
/// the background, and how long past its expiry one may still be served when the fetcher fails.
///
/// ```swift
/// // Fresh for 5 minutes; after 4, a read returns the value at once and refreshes it in the
/// // background; when the source is down, a value up to an hour past its expiry is served.
/// let freshness = Freshness(timeToLive: .seconds(300), refreshAfter: .seconds(240), serveStaleFor: .seconds(3600))
/// ```
public struct Freshness: Sendable, Hashable {
    /// How long a value set without an expiry of its own lives, and the longest a fetched value
    /// lives (a fetcher's own expiry, such as HTTP freshness, wins only when it is shorter); `nil`
    /// (until evicted) by default. A value given an expiry by a `set` keeps it.
    public var timeToLive: Duration?
    /// The age (since the value was stored) after which a read returns the value at once and starts
    /// one background refresh of its key, whose result replaces it (kept when the refresh fails);
    /// `nil` (never) by default.
    public var refreshAfter: Duration?
    /// How long past its expiry a value is kept and served when the fetcher fails (stale-if-error);
    /// `nil` (never) by default. A stale value is not served by plain reads, only by a fetch whose
    /// fetcher failed.
    public var serveStaleFor: Duration?

    /// Creates a policy.
    /// - Parameters:
    ///   - timeToLive: How long a value set without an expiry lives, and the longest a fetched one
    ///     lives; `nil` for until evicted.
    ///   - refreshAfter: The age after which a read starts a background refresh; `nil` for never.
    ///   - serveStaleFor: How long past its expiry a value is served when the fetcher fails.
    public init(timeToLive: Duration? = nil, refreshAfter: Duration? = nil, serveStaleFor: Duration? = nil) {
        self.timeToLive = timeToLive
        self.refreshAfter = refreshAfter
        self.serveStaleFor = serveStaleFor
    }

    /// Whether the policy changes nothing: no lifetime, refresh or stale window.
    public var isNone: Bool { timeToLive == nil && refreshAfter == nil && serveStaleFor == nil }

    /// Whether reads must look at each entry's age: a refresh or a stale window is set.
    var readsAttributes: Bool { refreshAfter != nil || (serveStaleFor.map { $0 > .zero } ?? false) }
}

/// The counts of a ``FetchingStore``'s freshness decisions.
public struct FreshnessStatistics: Sendable, Hashable {
    /// Reads served a value that was fresh and not due for a refresh.
    public var freshHits = 0
    /// Reads served at once a value due for a refresh (past `refreshAfter`), or an expired value
    /// within the stale window because the fetcher failed.
    public var staleHits = 0
    /// Background refreshes started.
    public var refreshes = 0
    /// Background refreshes that failed (the old value was kept).
    public var refreshFailures = 0
    /// Expired values served within the stale window because the fetcher failed (counted in
    /// ``staleHits`` too).
    public var staleServedOnError = 0

    /// Creates zero counts.
    public init() {}
}
