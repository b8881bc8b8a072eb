/// The header fields of an HTTP message, in the order they came: a name may repeat, and names are
/// compared without regard to ASCII case (RFC 9110 §5.1).
///
/// ```swift
/// var headers: HTTPHeaderFields = ["Cache-Control": "max-age=60", "ETag": "\"v1\""]
/// headers.add(name: "Vary", value: "Accept-Language")
/// headers["cache-control"]   // "max-age=60"
/// ```
public struct HTTPHeaderFields: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field: its name as it was written, and its value without surrounding whitespace.
    public struct Field: Sendable, Hashable {
        /// The field name, as written (compare it with ``HTTPHeaderFields/namesMatch(_:_:)``).
        public var name: String
        /// The field value.
        public var value: String

        /// Creates a field.
        /// - Parameters:
        ///   - name: The field name.
        ///   - value: The field value.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields, in order.
    public private(set) var fields: [Field]

    /// Creates headers from fields in order.
    /// - Parameter fields: The fields, as (name, value) pairs.
    public init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { Field(name: $0.0, value: $0.1) }
    }

    /// Creates headers from a literal, in the literal's order.
    /// - Parameter elements: The (name, value) pairs.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The number of fields.
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The fields in order.
    /// - Returns: An iterator over the fields.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The value of every field named `name`, combined into one as RFC 9110 §5.3 allows
    /// (joined by `", "`), or `nil` when there is none. Setting it replaces every field of that
    /// name with one (at the first one's place), or removes them all when set to `nil`.
    /// - Parameter name: The field name, in any case.
    public subscript(name: String) -> String? {
        get {
            var combined: String?
            for field in fields where Self.namesMatch(field.name, name) {
                combined = combined.map { $0 + ", " + field.value } ?? field.value
            }
            return combined
        }
        set {
            guard let newValue else {
                remove(name: name)
                return
            }
            replaceOrAdd(name: name, value: newValue)
        }
    }

    /// The values of the fields named `name`, in order.
    /// - Parameter name: The field name, in any case.
    /// - Returns: The values; empty when there is no such field.
    public func values(for name: String) -> [String] {
        fields.compactMap { Self.namesMatch($0.name, name) ? $0.value : nil }
    }

    /// Whether a field named `name` is present.
    /// - Parameter name: The field name, in any case.
    /// - Returns: `true` when at least one field has that name.
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesMatch($0.name, name) }
    }

    /// The members of the comma-separated lists in every field named `name` (such as `Vary`,
    /// `Connection` or `If-None-Match`), without surrounding whitespace and without empty members.
    /// Commas inside quoted strings do not split.
    /// - Parameter name: The field name, in any case.
    /// - Returns: The members, in order.
    public func listMembers(for name: String) -> [String] {
        values(for: name).flatMap { HeaderLists.members(of: $0) }
    }

    /// Appends a field.
    /// - Parameters:
    ///   - name: The field name.
    ///   - value: The field value.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` with one field, at the place of the first one (or at the end).
    /// - Parameters:
    ///   - name: The field name, in any case.
    ///   - value: The new value.
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let first = fields.firstIndex(where: { Self.namesMatch($0.name, name) }) else {
            add(name: name, value: value)
            return
        }
        fields[first] = Field(name: fields[first].name, value: value)
        var index = fields.index(after: first)
        while index < fields.endIndex {
            if Self.namesMatch(fields[index].name, name) {
                fields.remove(at: index)
            } else {
                index += 1
            }
        }
    }

    /// Removes every field named `name`.
    /// - Parameter name: The field name, in any case.
    public mutating func remove(name: String) {
        fields.removeAll { Self.namesMatch($0.name, name) }
    }

    /// Removes every field whose name satisfies `shouldRemove`.
    /// - Parameter shouldRemove: Given a field name, whether to remove the field.
    public mutating func removeAll(where shouldRemove: (String) -> Bool) {
        fields.removeAll { shouldRemove($0.name) }
    }

    /// Whether two field names are the same name: equal without regard to ASCII case.
    /// - Parameters:
    ///   - first: A field name.
    ///   - second: Another.
    /// - Returns: `true` when they name the same field.
    public static func namesMatch(_ first: String, _ second: String) -> Bool {
        let a = first.utf8, b = second.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            guard x | 0x20 == y | 0x20, (x | 0x20) >= UInt8(ascii: "a"), (x | 0x20) <= UInt8(ascii: "z") else { return false }
        }
        return true
    }
}
