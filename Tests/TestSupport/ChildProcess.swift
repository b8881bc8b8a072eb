public import Foundation
import HanekeProtocols

/// Runs the package's own executables (`haneke`, `HanekeFaultWorker`) and a few system tools as
/// child processes, the way a user or a crash would, for the tool and reliability tests.
///
/// Nothing here blocks one of Swift's cooperative threads: a process is started and its pipes are
/// drained on threads of their own (``offThePool(_:)``), and its end is reported by its
/// termination handler (no `waitUntilExit`), so a test that waits for a child lets every other
/// test run.
public enum ChildProcess {
    /// What a finished child printed and how it ended.
    public struct Outcome: Sendable {
        /// The exit status (or the signal that ended it).
        public var status: Int32
        /// Standard output.
        public var stdout: Data
        /// Standard error.
        public var stderr: String
        /// Standard output as text.
        public var output: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// A child that runs until it is killed or ends by itself.
    public final class Running: Sendable {
        /// The process.
        public let process: Process
        /// Its standard output.
        public let output: Pipe
        /// The standard input of a child made by ``ChildProcess/start(_:_:)``.
        public let input: Pipe?
        private let exit = Locked<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))
        /// Its standard error, read to the end on a thread of its own from the start, so that the
        /// pipe never fills and stalls the child; nil when it is not captured.
        private let errors: Task<Data, Never>?

        fileprivate init(process: Process, output: Pipe, input: Pipe? = nil, errors: Pipe? = nil) {
            self.process = process
            self.output = output
            self.input = input
            self.errors = errors.map { pipe in
                let handle = pipe.fileHandleForReading
                return Task { (try? await offThePool { handle.readDataToEndOfFile() }) ?? Data() }
            }
        }

        /// Called by the process's termination handler.
        fileprivate func ended(_ status: Int32) {
            let waiters = exit.withLock { exit in
                exit.status = status
                defer { exit.waiters = [] }
                return exit.waiters
            }
            for waiter in waiters { waiter.resume(returning: status) }
        }

        /// Waits (suspending) until the process has ended; returns its status.
        public func status() async -> Int32 {
            await withCheckedContinuation { continuation in
                let status = exit.withLock { exit -> Int32? in
                    if exit.status == nil { exit.waiters.append(continuation) }
                    return exit.status
                }
                if let status { continuation.resume(returning: status) }
            }
        }

        /// Sends `signal` (SIGKILL by default) and waits until the process has ended.
        @discardableResult
        public func kill(_ signal: Int32 = SIGKILL) async -> Int32 {
            _ = Foundation.kill(process.processIdentifier, signal)
            return await status()
        }

        /// Writes `text` and a newline to the process's standard input (a child made by
        /// ``ChildProcess/start(_:_:)``), on a thread of its own.
        public func writeLine(_ text: String) async throws {
            guard let handle = input?.fileHandleForWriting else { return }
            try await offThePool { handle.write(Data((text + "\n").utf8)) }
        }

        /// Writes `command` as a line and returns the line the process answers with.
        public func ask(_ command: String) async throws -> String? {
            try await writeLine(command)
            return try await readLine()
        }

        /// Everything the process wrote to its standard output that ``readLine()`` has not read,
        /// read to the end on a thread of its own (call it once the process has ended, or it
        /// waits for that).
        public func readOutput() async throws -> Data {
            let handle = output.fileHandleForReading
            return try await offThePool { handle.readDataToEndOfFile() }
        }

        /// The next line the process writes to its standard output (without the newline), read
        /// on a thread of its own; `nil` at the end of the output. It reads a byte at a time (a
        /// `read(2)` each: Foundation's `FileHandle` keeps no buffer), so nothing past the line is
        /// taken from the pipe: the next ``readLine()`` or ``readOutput()`` starts right after it.
        public func readLine() async throws -> String? {
            let handle = output.fileHandleForReading
            return try await offThePool {
                var bytes: [UInt8] = []
                while true {
                    let byte = handle.readData(ofLength: 1)
                    guard let first = byte.first else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
                    if first == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
                    bytes.append(first)
                }
            }
        }

        /// What the process wrote to its standard error, once it has closed it (ended); empty
        /// when the child was started without capturing it.
        public func errorOutput() async -> String {
            String(decoding: await errors?.value ?? Data(), as: UTF8.self)
        }
    }

    /// The path of an executable built beside the test bundle.
    public static func binary(_ name: String) -> String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [here, here.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return here.appendingPathComponent(name).path
    }

    /// Runs `executable` with `arguments` to the end, writing `input` to its standard input. Both
    /// output pipes are drained at once, each on a thread of its own, so neither can fill and stall
    /// the child; the test's task suspends meanwhile.
    public static func run(_ executable: String, _ arguments: [String], input: Data? = nil) async throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let (out, err, inputPipe) = try await pipes()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input == nil ? FileHandle.nullDevice : inputPipe
        let child = Running(process: process, output: out)
        process.terminationHandler = { child.ended($0.terminationStatus) }
        do {
            try await launch(process)
        } catch {
            try? out.fileHandleForWriting.close()
            try? err.fileHandleForWriting.close()
            throw error
        }
        if let input {
            let writer = inputPipe.fileHandleForWriting
            _ = try await offThePool {
                writer.write(input)
                try writer.close()
            }
        }
        let errHandle = err.fileHandleForReading
        async let stderr = offThePool { errHandle.readDataToEndOfFile() }
        let stdout = try await child.readOutput()
        let status = await child.status()
        return Outcome(status: status, stdout: stdout, stderr: String(decoding: try await stderr, as: UTF8.self))
    }

    /// Starts `executable` for a child that is killed rather than left to finish. Its standard
    /// input is a pipe that stays open (a child that reads it waits until it is killed); its
    /// standard error is kept for ``Running/errorOutput()``.
    public static func start(_ executable: String, _ arguments: [String]) async throws -> Running {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let (out, err, inputPipe) = try await pipes()
        process.standardInput = inputPipe
        process.standardOutput = out
        process.standardError = err
        let child = Running(process: process, output: out, input: inputPipe, errors: err)
        process.terminationHandler = { child.ended($0.terminationStatus) }
        do {
            try await launch(process)
        } catch {
            try? out.fileHandleForWriting.close()
            try? err.fileHandleForWriting.close()   // ends the reading of standard error
            throw error
        }
        return child
    }

    /// Three pipes, made on a thread of their own: `pipe(2)` allocates in the kernel and can sleep
    /// there (10 ms seen in CI, under load).
    private static func pipes() async throws -> (Pipe, Pipe, Pipe) {
        try await offThePool { (Pipe(), Pipe(), Pipe()) }
    }

    /// Starts a process on a thread of its own: `posix_spawn` sleeps until the child has replaced
    /// itself with the executable, 5–30 ms on a busy machine. A child that crashes does not start
    /// Swift's backtracer, which would inherit the child's pipes and keep them open after it died.
    private static func launch(_ process: Process) async throws {
        var environment = process.environment ?? ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        try await offThePool { try process.run() }
    }
}
