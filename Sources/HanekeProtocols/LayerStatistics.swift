/// The statistics of one named layer of a store or chain.
public struct LayerStatistics: Sendable, Hashable, CustomStringConvertible {
    /// The layer's name, as given to the store (`"memory"`, `"file"`, `"fetcher"`, …).
    public var name: String
    /// The layer's counters.
    public var statistics: StoreStatistics

    /// Creates a named snapshot.
    /// - Parameters:
    ///   - name: The layer's name.
    ///   - statistics: The layer's counters.
    public init(name: String, statistics: StoreStatistics) {
        self.name = name
        self.statistics = statistics
    }

    /// `"<name>: <counters>"`.
    public var description: String { "\(name): \(statistics)" }
}

extension LayerStatistics {
    /// The layers of a store seen through a view (a codec, a compressor), with the view's own counts
    /// merged into the first layer: each read whose bytes the view rejected (counted by the view as a
    /// miss) moves from that layer's hits to its misses, since the caller got no value, and the
    /// view's errors are added. A base that reports no layers is reported as one layer named `name`.
    package static func merging(viewCounts: StoreStatistics, into layers: [LayerStatistics], orNamed name: String) -> [LayerStatistics] {
        guard !layers.isEmpty else { return [LayerStatistics(name: name, statistics: viewCounts)] }
        var layers = layers
        let rejectedReads = viewCounts.misses
        layers[0].statistics.hits -= min(rejectedReads, layers[0].statistics.hits)
        layers[0].statistics.misses += rejectedReads
        layers[0].statistics.errors += viewCounts.errors
        return layers
    }
}
