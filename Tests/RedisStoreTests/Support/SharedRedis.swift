import Foundation
import HanekeTesting
@testable import RedisStore

/// The Redis server shared by the tests that neither stop it nor change its settings.
///
/// `make test` starts one (scripts/with-redis) and passes its URL in `HANEKE_REDIS_URL`; without
/// it (`swift test` alone), the first test to ask starts a private server for this process. Either
/// way a missing or broken server fails the tests: it never skips them. Each test works in a
/// namespace of its own, so tests share the server safely while running in parallel.
enum SharedRedis {
    private static let privateServer = Task { try await RedisTestServer() }

    /// The shared server's URL.
    static func url() async throws -> String {
        if let url = ProcessInfo.processInfo.environment["HANEKE_REDIS_URL"], !url.isEmpty {
            return url
        }
        return try await privateServer.value.url
    }

    /// A key prefix no other test uses.
    static func uniquePrefix(_ label: String = "test") -> String {
        "haneke-test:\(label):\(UUID().uuidString):"
    }

    /// A store on the shared server, in a namespace of its own.
    static func store(
        _ label: String = "test",
        configure: (inout RedisStore.Configuration) -> Void = { _ in }
    ) async throws -> RedisStore {
        var configuration = try RedisStore.Configuration(url: try await url(), keyPrefix: uniquePrefix(label))
        configure(&configuration)
        return RedisStore(configuration: configuration)
    }
}
