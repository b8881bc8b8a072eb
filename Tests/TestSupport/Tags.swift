public import Testing

/// Tags that say what a suite or test needs beyond memory. Swift 6.3's `swift test --filter`
/// matches names only; a toolchain whose Swift Testing knows the `tag:` prefix runs one kind with
/// `swift test --filter tag:redis` (see CONTRIBUTING.md, "Test tags and the private Redis").
extension Tag {
    /// Touches real files: a `FileStore`, a `Cache` on disk, a temporary folder.
    @Tag public static var disk: Self
    /// Needs a redis-server: the shared one (`HANEKE_REDIS_URL`, else a private one) or one it starts.
    @Tag public static var redis: Self
    /// Starts child processes: the tool, the fault and crash workers, redis-server, a shell.
    @Tag public static var process: Self
    /// One of the heavy suites that scripts/run-tests runs apart, one test at a time.
    @Tag public static var slow: Self
}
