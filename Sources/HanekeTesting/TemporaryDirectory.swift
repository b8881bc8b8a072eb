public import Foundation
import HanekeProtocols

/// A new, empty directory under the system's temporary folder, removed with everything in it when
/// the value is released (on `IOExecutor.shared`, moments later, or at the latest when the process
/// exits): real files for tests, never shared between tests, never left behind.
///
/// ```swift
/// let directory = try TemporaryDirectory()
/// let disk = try FileStore(directory: directory.path)
/// ```
public final class TemporaryDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String

    /// Creates the directory.
    /// - Parameter prefix: The start of its name; `"haneke-test"` by default.
    /// - Throws: The error of `FileManager.createDirectory` when it cannot be created.
    public init(prefix: String = "haneke-test") throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        path = base + "/" + prefix + "-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        Self.unremoved.withLock { _ = $0.insert(path) }
        _ = Self.removeUnremovedAtExit
    }

    /// The directory as a file URL.
    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// A path inside the directory.
    /// - Parameter name: A relative path.
    /// - Returns: `path + "/" + name`.
    public func appending(_ name: String) -> String {
        path + "/" + name
    }

    /// Removes the directory on the I/O executor: removing a tree is blocking work, and the last
    /// reference is often released by an async test, on one of Swift's cooperative threads.
    deinit {
        let path = path
        IOExecutor.shared.submit {
            try? FileManager.default.removeItem(atPath: path)
            Self.unremoved.withLock { _ = $0.remove(path) }
        }
    }

    /// The directories made and not removed yet: still in use, or released and waiting for the
    /// executor, which a test process that ends at once would never run.
    private static let unremoved = Locked<Set<String>>([])

    /// Removes, at exit, what `unremoved` still holds; registered once, with the first directory.
    private static let removeUnremovedAtExit: Void = {
        atexit {
            for path in TemporaryDirectory.unremoved.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
    }()
}
