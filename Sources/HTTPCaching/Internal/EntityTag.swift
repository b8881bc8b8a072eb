/// Entity tags (RFC 9110 §8.8.3).
enum EntityTag {
    /// Whether two entity tags match by the weak comparison: equal once a `W/` prefix is dropped.
    static func weaklyMatch(_ first: String, _ second: String) -> Bool {
        opaque(first) == opaque(second)
    }

    private static func opaque(_ tag: String) -> Substring {
        let trimmed = HeaderLists.trim(Substring(tag))
        return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
    }
}
