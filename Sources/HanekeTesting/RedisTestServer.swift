import Foundation
import HanekeProtocols
#if canImport(Glibc)
import Glibc
#endif

/// A private `redis-server` for tests: its own process on a free loopback port, without
/// persistence, in a temporary folder, stopped when the value is released (or, at the latest,
/// when the test process exits).
///
/// ```swift
/// let server = try await RedisTestServer()
/// let redis = try RedisStore(url: server.url, keyPrefix: "test:")
/// await server.kill()           // Redis crashes…
/// try await server.start()      // …and comes back, empty, on the same port
/// ```
///
/// The server runs `redis-server --port <port> --bind 127.0.0.1 --save '' --appendonly no --dir
/// <temporary folder>` plus any arguments you add. It is found on the `PATH` (or at the path in the
/// `REDIS_SERVER` environment variable); Debian's package is `redis-server`. A server that cannot
/// start is an error, never a reason to skip a test.
public final class RedisTestServer: Sendable {
    /// The TCP port the server listens on, on 127.0.0.1; the same after a restart.
    public let port: Int
    /// The folder the server runs in (and logs to, in `redis.log`).
    public let directory: TemporaryDirectory
    /// The extra arguments given to `redis-server` (the TLS ones included).
    public let arguments: [String]
    /// The TCP port the server also listens on with TLS, when started with certificates.
    public let tlsPort: Int?
    /// The certificates of the TLS port, kept while the server may restart.
    public let certificates: TLSTestCertificates?
    private let executable: String
    private let processID = Locked<pid_t?>(nil)

    /// The server's URL, `redis://127.0.0.1:<port>`.
    public var url: String { "redis://127.0.0.1:\(port)" }

    /// The URL of the TLS port, `rediss://127.0.0.1:<tlsPort>`, when there is one.
    public var tlsURL: String? { tlsPort.map { "rediss://127.0.0.1:\($0)" } }

    /// Whether the server process is running (started, and not stopped or killed by this object).
    public var isRunning: Bool { processID.withLock { $0 != nil } }

    /// Starts a server on a free port and waits until it answers `PING`.
    /// - Parameters:
    ///   - arguments: Extra arguments for `redis-server`, such as `["--requirepass", "secret"]`.
    ///   - tls: Certificates for a second port with TLS (``tlsPort``), beside the plain one;
    ///     `nil` (no TLS port) by default.
    ///   - requireClientCertificates: Whether the TLS port refuses clients without a certificate
    ///     the authority signed (`--tls-auth-clients yes`); `false` by default.
    /// - Throws: ``RedisTestServer/Failure`` when `redis-server` is missing or does not start.
    public convenience init(arguments: [String] = [], tls: TLSTestCertificates? = nil, requireClientCertificates: Bool = false) async throws {
        try await self.init(arguments: arguments, tls: tls, requireClientCertificates: requireClientCertificates, clusterNode: false)
    }

    /// Starts a server; a cluster node (`clusterNode`) also gets a free port for its cluster bus.
    init(arguments: [String], tls: TLSTestCertificates?, requireClientCertificates: Bool, clusterNode: Bool) async throws {
        executable = try Self.executable(named: "redis-server")
        directory = try TemporaryDirectory(prefix: "haneke-redis")
        certificates = tls
        var lastError: (any Error)?
        // A free port may be taken between choosing it and the server binding it: try a few.
        for _ in 0..<5 {
            let candidate = try Self.freePort()
            let tlsCandidate = try tls.map { _ in try Self.freePort() }
            var all = arguments
            if clusterNode {
                all += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", String(try Self.freePort())]
            }
            if let tls, let tlsCandidate {
                all += [
                    "--tls-port", String(tlsCandidate), "--tls-cert-file", tls.serverCertificate, "--tls-key-file", tls.serverKey,
                    "--tls-ca-cert-file", tls.authority, "--tls-auth-clients", requireClientCertificates ? "yes" : "no",
                ]
            }
            do {
                let pid = try await Self.launch(executable, port: candidate, directory: directory, arguments: all)
                port = candidate
                tlsPort = tlsCandidate
                self.arguments = all
                processID.withLock { $0 = pid }
                return
            } catch {
                lastError = error
            }
        }
        throw lastError ?? Failure(message: "redis-server did not start")
    }

    /// Starts the server again after ``stop()`` or ``kill()``, on the same port, and waits until it
    /// answers `PING`. It starts empty (nothing is persisted). Does nothing if it is running.
    /// - Throws: ``RedisTestServer/Failure`` when it does not start.
    public func start() async throws {
        guard !isRunning else { return }
        let pid = try await Self.launch(executable, port: port, directory: directory, arguments: arguments)
        processID.withLock { $0 = pid }
    }

    /// Stops the server with `SIGTERM` and waits (suspending, no thread blocked) for it to exit.
    /// Does nothing if it is not running.
    public func stop() async {
        await end(with: SIGTERM)
    }

    /// Kills the server with `SIGKILL` — a crash: no goodbye to its clients beyond what the kernel
    /// does — and waits (suspending) for it to exit. Does nothing if it is not running.
    public func kill() async {
        await end(with: SIGKILL)
    }

    /// The server's log so far, for failure messages.
    public var log: String {
        (try? String(contentsOfFile: directory.appending("redis.log"), encoding: .utf8)) ?? ""
    }

    /// Ends a server still running: `SIGKILL`, and the wait for it on the I/O executor, never on
    /// the thread that releases the last reference.
    deinit {
        guard let pid = processID.withLock({ $0 }) else { return }
        Self.killAndReap(pid)
    }

    /// Why a server could not start.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, with the end of the server's log when there is one.
        public var message: String
        /// The message.
        public var description: String { message }
    }

    // MARK: - Internals

    private func end(with signal: Int32) async {
        guard let pid = processID.withLock({ pid -> pid_t? in
            defer { pid = nil }
            return pid
        }) else { return }
        signalProcess(pid, signal)
        // `waitpid` runs on the I/O executor, never on a cooperative thread: even with `WNOHANG`,
        // reaping a server that was still freeing its memory kept a cooperative thread 5.6 ms in
        // `wait4` under load (the blocking watchdog caught it in `make test-under-load`).
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            IOExecutor.shared.submit {
                Self.reap(pid, killingAfter: .seconds(5))
                done.resume()
            }
        }
    }

    /// Waits for `pid` to exit, polling every millisecond, and kills it if it has not exited
    /// after `grace`. Blocks its thread: an executor's job only.
    private static func reap(_ pid: pid_t, killingAfter grace: Duration) {
        let deadline = ContinuousClock.now + grace
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now > deadline {
                signalProcess(pid, SIGKILL)
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                break
            }
            usleep(1_000)
        }
        unregister(pid)
    }

    /// The path of one of Redis's programs (`redis-server`, `redis-benchmark`, `redis-cli`) or of `openssl`: from the
    /// `PATH` and the usual folders; for `redis-server`, `$REDIS_SERVER` first.
    /// - Parameter name: The program's name.
    /// - Throws: A failure naming the Debian package to install when it is not found.
    public static func executable(named name: String) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if name == "redis-server", let path = environment["REDIS_SERVER"], !path.isEmpty { return path }
        let folders = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") + ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        for folder in folders {
            let path = "\(folder)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        let package = name == "redis-server" || name == "openssl" ? name : "redis-tools"
        throw Failure(message: "\(name) is not installed (Debian: apt-get install \(package); `make test` installs it)")
    }

    /// A port that was free a moment ago: bound to port 0 on loopback, then released.
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: "socket() failed: errno \(errno)") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw Failure(message: "bind() failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(message: "getsockname() failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    /// Spawns a server on `port`, waits until it answers, and registers it to be killed at exit.
    private static func launch(_ executable: String, port: Int, directory: TemporaryDirectory, arguments: [String]) async throws -> pid_t {
        // posix_spawn sleeps until the child has replaced itself with redis-server: on the I/O
        // executor, as every blocking call here.
        let path = directory.path
        let pid = try await IOExecutor.shared.run { try spawn(executable, port: port, directory: path, arguments: arguments) }
        try await waitUntilReady(port: port, pid: pid, log: directory.appending("redis.log"))
        register(pid)
        return pid
    }

    private static func spawn(_ executable: String, port: Int, directory: String, arguments: [String]) throws -> pid_t {
        let argv = [
            executable, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", directory, "--daemonize", "no",
        ] + arguments
        let log = directory + "/redis.log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process's: SwiftNIO's sockets and Foundation's pipes are not
        // close-on-exec, and a server that inherited one kept a test's connection (or an openssl
        // pipe) open after the test closed it.
        guard let closeFrom = addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw Failure(message: "Could not start \(executable): posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later) is missing or failed")
        }
        // The spawning thread may block or ignore signals (Dispatch's threads block most of them),
        // and a child inherits both: give the server an empty mask and default handlers, so that
        // SIGTERM stops it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        let result = cArguments.withUnsafeBufferPointer { buffer in
            posix_spawn(&pid, executable, &actions, &attributes, UnsafeMutablePointer(mutating: buffer.baseAddress!), environ)
        }
        guard result == 0 else {
            throw Failure(message: "Could not start \(executable): \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare: found by name.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
            unsafeBitCast($0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }

    /// Polls until the server answers `PING`, failing at once if it exits. The wait ends on one of
    /// those events, or when the task is cancelled (a test's time limit): on a loaded machine a
    /// start of milliseconds can take over 10 seconds. Only a server that neither answers nor
    /// exits for `safetyNet` is given up. A server that did not answer is killed.
    private static func waitUntilReady(port: Int, pid: pid_t, log: String, safetyNet: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now + safetyNet
        while ContinuousClock.now < deadline {
            // Both on the I/O executor: `waitpid` on an exiting process, and the blocking PING.
            let state = try? await IOExecutor.shared.run { () -> ServerState in
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid { return .exited }
                return ping(port: port) ? .answering : .starting
            }
            if state == .exited {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                throw Failure(message: "redis-server exited at start on port \(port):\n" + text.split(separator: "\n").suffix(10).joined(separator: "\n"))
            }
            if state == .answering { return }
            do {
                try await Task.sleep(for: .milliseconds(5))
            } catch {
                killAndReap(pid)
                throw error
            }
        }
        killAndReap(pid)
        throw Failure(message: "redis-server on port \(port) neither answered PING nor exited in \(safetyNet)")
    }

    private enum ServerState: Sendable {
        case starting, answering, exited
    }

    /// Kills a server (released while running, or never ready) with `SIGKILL`, and reaps it on
    /// the I/O executor, never on the caller's thread.
    private static func killAndReap(_ pid: pid_t) {
        signalProcess(pid, SIGKILL)
        IOExecutor.shared.submit {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            unregister(pid)
        }
    }

    /// Whether a server on `port` answers `PING` (a blocking exchange on loopback, at most 1 s).
    private static func ping(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        let request = Array("PING\r\n".utf8)
        guard write(fd, request, request.count) == request.count else { return false }
        var reply = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &reply, reply.count)
        // A server that requires a password answers -NOAUTH: it is up all the same.
        return count > 0 && (reply[0] == UInt8(ascii: "+") || reply[0] == UInt8(ascii: "-"))
    }

    // Servers still running when the process exits are stopped then, so that none outlives a test run.
    private static let running = Locked<Set<pid_t>>([])
    private static let exitHandler: Void = {
        atexit {
            for pid in RedisTestServer.running.withLock({ $0 }) {
                signalProcess(pid, SIGTERM)
            }
        }
    }()

    private static func register(_ pid: pid_t) {
        _ = exitHandler
        running.withLock { _ = $0.insert(pid) }
    }

    private static func unregister(_ pid: pid_t) {
        running.withLock { _ = $0.remove(pid) }
    }
}

/// `kill(2)`, out of reach of `RedisTestServer.kill()` inside the class.
private func signalProcess(_ pid: pid_t, _ signal: Int32) {
    _ = kill(pid, signal)
}
