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
        Self.made.withLock { _ = $0.insert(path) }
        _ = Self.removeLeftoversAtExit
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
        IOExecutor.shared.submit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Every directory this process made. Some are still there at exit: the executor had not run
    /// a removal yet, or a store that outlived its directory made its folder again there (a
    /// `FileStore` opens a deleted folder again, and a `Cache` opens its stores in the background).
    private static let made = Locked<Set<String>>([])

    /// Removes, at exit, every directory of `made` that exists; registered once, with the first.
    private static let removeLeftoversAtExit: Void = {
        atexit {
            for path in TemporaryDirectory.made.withLock({ $0 }) {
                // A few tries: the executor may be removing the same tree, and a file one walk
                // expected can vanish under it.
                for _ in 0..<3 where FileManager.default.fileExists(atPath: path) {
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
        }
    }()
}
