import NIOCore
public import NIOPosix

/// Starts SwiftNIO's shared event loops and its blocking thread pool on a thread of their own,
/// before a test makes a framework's application. Each is started the first time it is used, and
/// its start waits on a condition variable until its threads run: when that first use is
/// `Application.make` (Vapor) or a server's start (Hummingbird) in a test's task, it blocks a
/// cooperative thread (Vapor's took 6.3 ms beside a CPU hog in CI, past the blocking watchdog's
/// 5 ms). Once started, both are only read.
/// The first call starts them; every later call awaits that start.
public func startNIOSingletons() async throws {
    try await nioSingletonsStarted.value
}

/// The one start, shared by every test.
private let nioSingletonsStarted = Task {
    try await offThePool {
        _ = MultiThreadedEventLoopGroup.singleton
        _ = NIOSingletons.posixBlockingThreadPool
    }
}

/// SwiftNIO's shared event loops, started off the pool by ``startNIOSingletons()``.
public func sharedEventLoops() async throws -> MultiThreadedEventLoopGroup {
    try await startNIOSingletons()
    return MultiThreadedEventLoopGroup.singleton
}
