import Foundation
import Testing
import TestSupport

/// The test support that runs child processes: what a test reads line by line and what it reads
/// after are the whole output, in order, however the child's writes arrive.
@Suite(.timeLimit(.minutes(1)), .tags(.process))
struct ChildProcessTests {
    /// The child writes its lines in one write: the first `readLine()` reads them all from the
    /// pipe, and the lines it does not return are the start of `readOutput()`.
    @Test func aLineReadFirstLosesNothingOfTheRest() async throws {
        let child = try await ChildProcess.start("/bin/sh", ["-c", "printf 'ack a 1\\nack b 2\\nack c'"])
        #expect(try await child.readLine() == "ack a 1")
        let status = await child.status()
        #expect(status == 0)
        #expect(String(decoding: try await child.readOutput(), as: UTF8.self) == "ack b 2\nack c")
    }

    @Test func linesAreReadToTheEndThenNil() async throws {
        let child = try await ChildProcess.start("/bin/sh", ["-c", "printf 'one\\n\\nthree\\nfour'"])
        var lines: [String] = []
        while let line = try await child.readLine() { lines.append(line) }
        #expect(lines == ["one", "", "three", "four"])
        #expect(try await child.readOutput().isEmpty)
    }

    /// A child started to be killed keeps its standard error for the failure message of a test
    /// whose child ended too early.
    @Test func aStartedChildsStandardErrorIsKept() async throws {
        let child = try await ChildProcess.start("/bin/sh", ["-c", "echo 'it broke' >&2; exit 3"])
        #expect(try await child.readLine() == nil)
        #expect(await child.status() == 3)
        #expect(await child.errorOutput() == "it broke\n")
    }
}
