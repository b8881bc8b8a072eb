/// What ``StoreConformanceSuite/run()`` throws: every check that failed, and why.
public struct ConformanceFailure: Error, CustomStringConvertible {
    /// One failed check.
    public struct Failure: Sendable, Hashable {
        /// The check's name.
        public var check: String
        /// What went wrong.
        public var problem: String
    }

    /// A value read back was not the one expected.
    public struct Mismatch: Error, CustomStringConvertible {
        /// What was expected and what was read.
        public var description: String
        /// Creates a mismatch.
        /// - Parameter description: What was expected and what was read.
        public init(_ description: String) { self.description = description }
    }

    /// The type of the store under test.
    public var storeType: String
    /// Every failed check.
    public var failures: [Failure]

    /// A line per failed check.
    public var description: String {
        "\(storeType) failed \(failures.count) conformance check(s):\n"
            + failures.map { "  - \($0.check): \($0.problem)" }.joined(separator: "\n")
    }
}
