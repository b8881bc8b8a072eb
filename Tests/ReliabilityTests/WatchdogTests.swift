import Dispatch
import Foundation
import HanekeTesting
import Testing
import TestSupport

/// The blocking watchdog that runs every job of the test process (Tests/BlockingWatchdog) sees a
/// thread that sleeps inside a job and only that: these tests block on purpose, inside jobs the
/// watchdog keeps aside, and check what it measured.
@Suite(.enabled(if: Watchdog.isWatching, "HANEKE_WATCHDOG=off"), .tags(.process))
struct WatchdogTests {
    @Test func theJobsRunOnAsManyThreadsAsTheCooperativePoolHas() async throws {
        #expect(Watchdog.threadCount == ProcessInfo.processInfo.activeProcessorCount)
        #expect(Watchdog.limit == .milliseconds(5) || ProcessInfo.processInfo.environment["HANEKE_WATCHDOG_LIMIT_MS"] != nil)
        // A job of its own, holding nothing but the measurement: the job that ran the checks above
        // may have waited for a lock of the testing library's whose holder was waiting for a CPU.
        await Task.yield()
        let job = try #require(await Watchdog.measureCurrentJob {}, "this test's job runs on a watchdog thread")
        // An empty job is never judged as blocking, however busy the machine. Not "asleep < 1 ms":
        // beside a CPU hog, the job that also ran the checks above once measured 1.015 ms asleep
        // (short waits — a lock, a page — which the watchdog's limit is there to tell apart).
        #expect(job.slept < Watchdog.limit)
    }

    @Test func aSleepIsCaughtWithItsStack() async throws {
        let job = try #require(
            await Watchdog.measureCurrentJob {
                // The watchdog's signal cuts the sleep short (EINTR), as it would a blocked poll;
                // it goes on for what remains, so the thread sleeps 50 ms in all, however long it
                // then waits for a CPU on a busy machine.
                var request = timespec(tv_sec: 0, tv_nsec: 50_000_000)
                var remaining = timespec()
                while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
            }
        )
        #expect(job.slept >= .milliseconds(40))
        let stack = try #require(job.stack, "the sampler caught the thread asleep")
        #expect(stack.contains("sleep"), "\(stack)")
        #expect(stack.contains("aSleepIsCaughtWithItsStack"), "\(stack)")
        print("watchdog: a 50 ms sleep measured as \(job.slept) asleep in\n\(stack)")
    }

    /// The old `ChildProcess` waited like this for a process to end.
    @Test func aSemaphoreWaitIsCaught() async throws {
        let semaphore = DispatchSemaphore(value: 0)
        let job = try #require(
            await Watchdog.measureCurrentJob {
                // 60 ms, of which a busy machine may take some before the job reaches its wait.
                afterMilliseconds(60) { semaphore.signal() }
                semaphore.wait()
            }
        )
        #expect(job.slept >= .milliseconds(20))
        #expect(job.stack != nil)
        #expect(!job.waitedForALock, "\(job.stack ?? "")")
    }

    /// Computing is not blocking: a job that keeps its CPU for 30 ms has slept for none of it,
    /// however busy the machine is (time waiting for a CPU is not sleep). On a virtual machine
    /// the host may also take the virtual CPU away (steal time), which the thread's figures count
    /// neither as on a CPU nor as waiting for one: under the CPU hog in CI a job like this one
    /// measured 7.3 ms "asleep". The machine's steal over the job is allowed for (to the
    /// resolution of /proc/stat, a clock tick).
    @Test func aBusyJobHasNotSlept() async throws {
        let stealBefore = try Self.stealTime()
        let job = try #require(
            await Watchdog.measureCurrentJob {
                let clock = ContinuousClock()
                let end = clock.now + .milliseconds(30)
                var spins = 0
                while clock.now < end { spins &+= 1 }
                #expect(spins > 0)
            }
        )
        let steal = try Self.stealTime() - stealBefore
        #expect(job.wall >= .milliseconds(30))
        let tick = Duration.seconds(1) / Int(sysconf(Int32(_SC_CLK_TCK)))
        #expect(job.slept < Watchdog.limit + (steal == .zero ? .zero : steal + tick), "steal \(steal)")
        // Caught asleep at all, it was in a short wait, never a blocking call: a spinning thread
        // that faults a page in while another thread maps memory waits a moment (seen once, run
        // beside the stress suite).
        #expect(job.stack == nil || job.waitedForALock, "\(job.stack ?? "")")
    }

    /// The time the host has taken every virtual CPU of this machine away from it so far (the
    /// `steal` field of /proc/stat's first line, in clock ticks); zero on a machine that is none.
    static func stealTime() throws -> Duration {
        let line = try String(contentsOfFile: "/proc/stat", encoding: .utf8).prefix { $0 != "\n" }
        let fields = line.split(separator: " ")
        let ticks = try #require(fields.count > 8 ? Int(fields[8]) : nil, "/proc/stat: \(line)")
        return .seconds(1) / Int(sysconf(Int32(_SC_CLK_TCK))) * ticks
    }

    /// Waiting for a mutex that another thread holds is told apart from a blocking call: it has a
    /// longer limit, since on a busy machine the holder of a short critical section can wait for a
    /// CPU.
    @Test func aLockWaitIsToldApart() async throws {
        let lock = NSLock()
        let held = DispatchSemaphore(value: 0)
        let waiting = DispatchSemaphore(value: 0)
        // The holder keeps the lock until 30 ms after the job has started waiting for it.
        let thread = Thread {
            lock.lock()
            held.signal()
            waiting.wait()
            usleep(30_000)
            lock.unlock()
        }
        thread.start()
        _ = try await offThePool { held.wait() }
        let job = try #require(await Watchdog.measureCurrentJob {
            waiting.signal()
            lock.lock()
            lock.unlock()
        })
        #expect(job.slept >= .milliseconds(5))
        #expect(job.stack != nil)
        #expect(job.waitedForALock, "\(job.stack ?? "")")
    }

    /// Waiting while another thread runs a global's initializer (the runtime's `swift_once`) is a
    /// lock wait too: a busy machine can keep the initializing thread from a CPU.
    @Test func aWaitForAGlobalsInitializerIsALockWait() async throws {
        let thread = Thread { _ = slowlyInitializedGlobal }
        thread.start()
        _ = try await offThePool { slowInitializerStarted.wait() }
        let job = try #require(
            await Watchdog.measureCurrentJob {
                afterMilliseconds(60) { slowInitializerMayEnd.signal() }
                #expect(slowlyInitializedGlobal == 42)
            }
        )
        #expect(job.slept >= .milliseconds(20))
        #expect(job.stack != nil)
        #expect(job.waitedForALock, "\(job.stack ?? "")")
    }

    /// A page fault is a short wait too. A load that waits for a page to be read from disk is
    /// what the first use of a library's code or data costs: the machine's load, not a call that
    /// blocks. (A CI run caught the runtime's first look at a witness table in
    /// FoundationInternationalization asleep for 21 ms that way.)
    /// - Parameter copying: Whether the pages are read by a copy (`memcpy`, whose implementation
    ///   for this CPU dladdr cannot name: a fill faulting a page in once slept 19 ms there in CI)
    ///   rather than by a load.
    @Test(arguments: [false, true]) func aPageFaultIsAShortWait(copying: Bool) async throws {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        // 2,048 pages read from disk hold the thread a tenth of a second; 8,192 held it half a second.
        let pageCount = 2_048
        let (directory, descriptor, address) = try await offThePool { () throws -> (TemporaryDirectory, Int32, UInt) in
            let directory = try TemporaryDirectory()
            let descriptor = open(directory.appending("pages"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            try #require(descriptor >= 0)
            // Written and flushed, then dropped from the page cache: every page's first touch
            // reads the disk. Random access turns the kernel's read-ahead off.
            let chunk = [UInt8](repeating: 0xA5, count: 1 << 20)
            for _ in 0..<(pageCount * pageSize / chunk.count) {
                try #require(chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == chunk.count)
            }
            try #require(fsync(descriptor) == 0)
            try #require(posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED) == 0)
            let mapping: UnsafeMutableRawPointer? = mmap(nil, pageCount * pageSize, PROT_READ, MAP_SHARED, descriptor, 0)
            try #require(mapping != nil && mapping != MAP_FAILED)
            try #require(madvise(mapping, pageCount * pageSize, MADV_RANDOM) == 0)
            return (directory, descriptor, UInt(bitPattern: mapping))
        }
        let mapping = try #require(UnsafeRawPointer(bitPattern: address))
        var majorFaults = 0
        var sum = 0
        let job = try #require(
            await Watchdog.measureCurrentJob {
                var before = rusage(), after = rusage()
                // The process's count: thousands of major faults in this loop are its own.
                getrusage(RUSAGE_SELF.rawValue, &before)
                // Every page once, in an order that defeats read-ahead (7,919 is prime to 2,048).
                let page = UnsafeMutableRawPointer.allocate(byteCount: pageSize, alignment: 16)
                defer { page.deallocate() }
                for index in 0..<pageCount {
                    let offset = (index * 7_919 % pageCount) * pageSize
                    if copying {
                        page.copyMemory(from: mapping + offset, byteCount: pageSize)
                        sum &+= Int(page.load(as: UInt8.self))
                    } else {
                        sum &+= Int(mapping.load(fromByteOffset: offset, as: UInt8.self))
                    }
                }
                getrusage(RUSAGE_SELF.rawValue, &after)
                majorFaults = after.ru_majflt - before.ru_majflt
            }
        )
        _ = try await offThePool {
            munmap(UnsafeMutableRawPointer(bitPattern: address), pageCount * pageSize)
            close(descriptor)
            withExtendedLifetime(directory) {}
        }
        #expect(sum == 0xA5 * pageCount)
        try #require(majorFaults > pageCount / 2, "the touches read the disk (the kernel dropped the file's pages when asked)")
        #expect(job.slept >= .milliseconds(5))
        #expect(job.stack != nil)
        #expect(job.waitedForALock, "\(job.stack ?? "")")
    }

    /// A task that sleeps with `Task.sleep` gives its thread back: the next job runs on time.
    @Test func taskSleepIsNotBlocking() async throws {
        let start = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(20))
        #expect(ContinuousClock.now - start >= .milliseconds(20))
        let job = try #require(await Watchdog.measureCurrentJob {})
        #expect(job.slept < .milliseconds(1))
    }
}

/// Runs `body` on a thread of its own after `milliseconds`. Not on Dispatch's global queue: under
/// load its threads can all be busy (URLSession's calls wait on them), and a measured job waiting
/// for a signal from there once held its cooperative thread for 6.3 s.
private func afterMilliseconds(_ milliseconds: UInt32, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        usleep(milliseconds * 1_000)
        body()
    }
    thread.start()
}

/// Signalled when `slowlyInitializedGlobal`'s initializer has begun.
private let slowInitializerStarted = DispatchSemaphore(value: 0)

/// Signalled when `slowlyInitializedGlobal`'s initializer may return.
private let slowInitializerMayEnd = DispatchSemaphore(value: 0)

/// A global whose initializer lasts until it is told to end, so that a second thread that reads
/// it meanwhile waits in `swift_once`.
private let slowlyInitializedGlobal: Int = {
    slowInitializerStarted.signal()
    slowInitializerMayEnd.wait()
    return 42
}()
