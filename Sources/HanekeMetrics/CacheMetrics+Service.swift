#if Metrics && ServiceLifecycle
public import ServiceLifecycle

extension CacheMetrics: Service {
    /// Updates the metrics every ``interval`` until the graceful shutdown, then once more.
    /// - Throws: Never; it returns at the graceful shutdown or on cancellation.
    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            await update()
            // Ends early at the graceful shutdown: the sleep is cancelled.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
        await update()
    }
}
#endif
