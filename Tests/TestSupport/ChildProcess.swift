import Dispatch
public import Foundation
@_spi(HanekeInternals) import HanekeProtocols

/// Runs the package's own executables (`haneke`, `HanekeFaultWorker`) as child processes, the way a
/// user or a crash would, for the tool and reliability tests.
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

    /// The path of an executable built beside the test bundle.
    public static func binary(_ name: String) -> String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [here, here.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return here.appendingPathComponent(name).path
    }

    /// Runs `executable` with `arguments` to the end. Standard error is read on another thread while
    /// standard output is read here, so neither pipe can fill and stall the child.
    public static func run(_ executable: String, _ arguments: [String]) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stderrData = Locked(Data())
        let stderrDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            stderrData.withLock { $0 = data }
            stderrDone.signal()
        }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        stderrDone.wait()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, stdout: stdout, stderr: String(decoding: stderrData.withLock { $0 }, as: UTF8.self))
    }

    /// Starts `executable` and returns the process and its standard output, for children that are
    /// killed rather than left to finish. Its standard input is a pipe that stays open (a child
    /// that reads it waits until it is killed).
    public static func start(_ executable: String, _ arguments: [String]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        process.standardInput = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, out)
    }
}
