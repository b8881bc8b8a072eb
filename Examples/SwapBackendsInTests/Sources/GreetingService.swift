import Foundation
import Haneke

/// An application component that caches what it computes. It takes its disk tier as any
/// `Store<String, Data>`, so tests can swap the real `FileStore` for test doubles.
final class GreetingService: Sendable {
    private let greetings: FetchingStore<ChainedStore<MemoryStore<String, String>, CodedStore<AnyStore<String, Data>, ConformanceCodec<String>>>, ClosureFetcher<String, String>>

    /// - Parameters:
    ///   - disk: The disk tier (a `FileStore` in production).
    ///   - compose: How a greeting is made on a miss (the slow part).
    init(disk: some Store<String, Data>, compose: @escaping @Sendable (String) async throws -> String) {
        greetings = MemoryStore<String, String>(countLimit: 1_000)
            .chained(to: disk.eraseToAnyStore().coded(as: String.self))
            .fetching(compose)
    }

    func greeting(for name: String) async throws -> String {
        try await greetings.fetch(name)
    }

    func forget(_ name: String) async throws {
        try await greetings.removeValue(forKey: name)
    }
}
