import Foundation
import StoreFolders
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A warm read hands its descriptor to `DescriptorCloser`, which closes it off the reader's thread
/// (Benchmarks/Notes/2026-11-27-warm-reads-without-a-hop.md, "Closing a read's descriptor off its
/// thread"). Each descriptor here is the write end of a pipe: its read end sees the end of the
/// stream once the write end is closed, which no other test's descriptors can fake (a descriptor
/// number may be reused at once; a pipe's end cannot).
@Suite(.timeLimit(.minutes(1)), .offThePool)
struct DescriptorCloserTests {
    /// A pipe whose read end does not block: `(read, write)`.
    private func makePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0, "pipe: errno \(errno)")
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        try #require(fcntl(ends[0], F_SETFL, O_NONBLOCK) == 0, "fcntl: errno \(errno)")
        return (ends[0], ends[1])
    }

    /// Whether the pipe's write end is closed: its read end is at the end of the stream.
    private func writeEndIsClosed(_ readEnd: Int32) -> Bool {
        var byte: UInt8 = 0
        return read(readEnd, &byte, 1) == 0
    }

    @Test func pastItsLimitACallerClosesItsOwnDescriptor() throws {
        let closer = DescriptorCloser(limit: 2, startsThread: false)
        let pipes = try (0..<3).map { _ in try makePipe() }
        defer { for pipe in pipes { close(pipe.read) } }

        for pipe in pipes { closer.close(pipe.write) }
        #expect(closer.waitingCount == 2)
        #expect(pipes.map { writeEndIsClosed($0.read) } == [false, false, true], "the third is past the limit: closed at once")

        closer.closeWaiting()
        #expect(closer.waitingCount == 0)
        #expect(pipes.allSatisfy { writeEndIsClosed($0.read) })
    }

    @Test func itsThreadClosesWhatWaitsAndEndsWhenNothingComes() async throws {
        // Any two descriptors count as coming fast: the second starts the thread.
        let closer = DescriptorCloser(limit: 8, burstWindow: .seconds(3_600))
        let pipes = try (0..<4).map { _ in try makePipe() }
        defer { for pipe in pipes { close(pipe.read) } }

        closer.close(pipes[0].write)
        #expect(!closer.threadRuns && writeEndIsClosed(pipes[0].read), "with no thread running, the first is closed by its caller")
        for pipe in pipes.dropFirst() { closer.close(pipe.write) }
        #expect(closer.threadRuns)
        await withCheckedContinuation { continuation in closer.afterNextBatch { continuation.resume() } }
        #expect(closer.waitingCount == 0)
        #expect(pipes.allSatisfy { writeEndIsClosed($0.read) }, "the batch after the last descriptor closed them all")

        // With nothing to close, the thread looks a dozen times, each wait longer, and ends.
        var looks = 0
        while closer.threadRuns, looks < 100 {
            await withCheckedContinuation { continuation in closer.afterNextBatch { continuation.resume() } }
            looks += 1
        }
        #expect(!closer.threadRuns, "the thread ends once nothing came for a while")
        #expect(looks <= 13)

        // The next descriptor (within the window of the one closed by its caller) starts a thread again.
        let next = try makePipe()
        defer { close(next.read) }
        closer.close(next.write)
        #expect(closer.threadRuns)
        await withCheckedContinuation { continuation in closer.afterNextBatch { continuation.resume() } }
        #expect(writeEndIsClosed(next.read))
    }

    @Test func descriptorsThatComeSlowlyAreClosedByTheirCallersWithoutAThread() throws {
        // No two descriptors count as coming fast: a thread would cost each more than it saves.
        let closer = DescriptorCloser(limit: 8, burstWindow: .zero)
        let pipes = try (0..<3).map { _ in try makePipe() }
        defer { for pipe in pipes { close(pipe.read) } }

        for pipe in pipes {
            closer.close(pipe.write)
            #expect(writeEndIsClosed(pipe.read))
        }
        #expect(!closer.threadRuns)
        #expect(closer.waitingCount == 0)
    }

    @Test func theSharedLimitLeavesMostDescriptorsToTheProcess() {
        var limits = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0)
        let limit = DescriptorCloser.shared.limit
        #expect(limit <= 256)
        if limits.rlim_cur != rlim_t.max { #expect(limit <= Int(limits.rlim_cur / 16)) }
    }
}
