/// Runs `body` with a test's server, then awaits `shutdown(server)` — also when `body` throws — so
/// that the test ends only once its server has (a `defer` cannot await, and a `Task` that shuts
/// the server down would outlive the test).
/// - Parameters:
///   - server: The server, started.
///   - shutdown: How it shuts down: `{ await $0.shutdown() }`, or `stop()` for a redis-server.
///   - body: The test's work with the server.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws, once the server has shut down.
public func withServer<Server: Sendable, Result>(
    _ server: Server,
    shutdown: (Server) async -> Void,
    _ body: (Server) async throws -> Result
) async throws -> Result {
    let result: Result
    do {
        result = try await body(server)
    } catch {
        await shutdown(server)
        throw error
    }
    await shutdown(server)
    return result
}
