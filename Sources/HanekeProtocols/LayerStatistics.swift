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
