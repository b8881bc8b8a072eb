/// Operations of the `Store` protocol, as a set: which ones a ``FailingStore`` fails.
public struct StoreOperation: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: Int
    /// Creates a set from raw bits.
    /// - Parameter rawValue: The raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `value(forKey:)`.
    public static let read = StoreOperation(rawValue: 1 << 0)
    /// `setValue(_:forKey:)`.
    public static let write = StoreOperation(rawValue: 1 << 1)
    /// `removeValue(forKey:)`.
    public static let remove = StoreOperation(rawValue: 1 << 2)
    /// `removeAll()`.
    public static let removeAll = StoreOperation(rawValue: 1 << 3)
    /// Every operation.
    public static let all: StoreOperation = [.read, .write, .remove, .removeAll]
}
