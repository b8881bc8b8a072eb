import Foundation
public import HanekeProtocols
import Logging

/// Fetches values from files: a file that is missing and a file that does not decode are different
/// errors (`notFound` and `decoding`). The read runs off Swift's cooperative threads.
///
/// ```swift
/// let config = try await cache.fetch(path: "/etc/myapp/config.json")
/// ```
public struct DiskFetcher<Value: DataConvertible & Sendable>: Fetcher {
    /// The file every fetch reads, or `nil` to read the key itself as a path.
    public let path: String?

    /// Creates a fetcher.
    /// - Parameter path: The file to read whatever the key; `nil` (the default) reads the key as a path.
    public init(path: String? = nil) {
        self.path = path
    }

    /// Reads the file and decodes it.
    /// - Parameter key: The cache key; used as the path when the fetcher has none.
    /// - Returns: The decoded contents.
    /// - Throws: `StoreError` with code `notFound` (no such file), `decoding`, or `io`.
    public func fetch(_ key: String) async throws -> Value {
        let path = self.path ?? key
        let data: Data = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    continuation.resume(returning: try Data(contentsOf: URL(fileURLWithPath: path)))
                } catch let error as CocoaError where error.code == .fileReadNoSuchFile || error.code == .fileNoSuchFile {
                    continuation.resume(throwing: StoreError(.notFound, "There is no file at \(path)", cause: error))
                } catch {
                    continuation.resume(throwing: StoreError(.io, "Could not read \(path): \(error.localizedDescription)", cause: error))
                }
            }
        }
        do {
            return try Value.convertFromData(data)
        } catch {
            throw StoreError.wrapping(error, as: .decoding, "The file \(path) (\(data.count) bytes) does not decode as \(Value.self)")
        }
    }
}
