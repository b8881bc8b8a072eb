// The blocking watchdog: the test process's global executor, with a measurement around every job.
//
// Swift's cooperative pool has one thread per core (two on the CI machine). A job that sleeps in
// a blocking call — a semaphore, waitpid, usleep, a synchronous read of a pipe — keeps one of
// those threads from every other task for as long as it sleeps, which is how a test suite starves
// on a busy machine. This file takes over the runtime's global-executor hooks (the documented way
// to replace the global executor) when the test bundle loads, runs every job on as many threads as
// the cooperative pool has, and measures for each job how long its thread slept:
//
//     slept = wall time − time on a CPU − time waiting for a CPU
//
// Time on a CPU comes from CLOCK_THREAD_CPUTIME_ID and time waiting for a CPU from the kernel's
// run-queue delay in /proc/thread-self/schedstat, so neither computing nor being preempted on a
// loaded machine counts as sleeping: only a thread that gave its CPU away inside a job does. A
// sampler thread takes the stack of every job it finds asleep after its first millisecond (with a
// signal, which wakes the thread: the wait for a CPU that the signal causes is counted as sleep),
// and the stack says what the job waited for:
//
// - a blocking wait (a timer, a process, a pipe or socket, a semaphore, fsync…): the job is an
//   offender when it slept longer than the limit (HANEKE_WATCHDOG_LIMIT_MS, 5 ms unless set);
// - a short wait (a mutex, one file-system call on names such as mkdir or unlink, which waits
//   for a kernel lock on a directory, or the setting up of a socket — socket, bind, listen — which
//   never waits for a peer), or a page fault (the memory-map lock, or a page of a library read
//   from disk the first time the process runs its code): an offender past the short-wait limit
//   (HANEKE_WATCHDOG_LOCK_LIMIT_MS, 50 ms), times the load: on a busy machine the holder of a
//   short critical section waits for a CPU in proportion to the threads runnable per CPU (read
//   from /proc/loadavg every 100 ms; the busiest of the last second counts). A job that holds a
//   lock across a blocking call is caught by that call;
// - the allocator (an arena lock, or the memory-map lock while it maps or unmaps), whose waits
//   are the machine's load and never I/O, and the test framework's own console lock: counted,
//   never an offender.
//
// A job that computes on a cooperative thread for longer than the CPU limit
// (HANEKE_WATCHDOG_CPU_LIMIT_MS, 300 ms of CPU time, which a busy machine barely changes) is an
// offender too: every other task waits behind it, on a busy machine for several times as long.
// That is how a test that needs many turns of the ready queue timed out under load while no job
// slept: jobs waited 0.5 s for a thread on average, behind test helpers that made megabytes of
// noise in a debug build. The sampler takes one stack of a job it finds running after 20 ms, and
// the report names the jobs that held a thread longest and how long jobs waited in the queue.
//
// When the process exits the watchdog prints every offender's stack and makes the exit status 1,
// so the test run fails.
//
// HANEKE_WATCHDOG=off leaves the runtime's executor alone; HANEKE_WATCHDOG_THREADS sets the number
// of worker threads (the process's CPUs by default); HANEKE_SYMBOLIZER names the llvm-symbolizer
// that names the frames of a report.

#define _GNU_SOURCE
#include "BlockingWatchdog.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SWIFTCC __attribute__((swiftcall))

typedef struct SwiftJob SwiftJob;
typedef struct {
    void *identity;
    uintptr_t implementation;
} SerialExecutorRef;

typedef SWIFTCC void EnqueueOriginal(SwiftJob *job);
typedef SWIFTCC void EnqueueHook(SwiftJob *job, EnqueueOriginal *original);
typedef SWIFTCC void DelayOriginal(unsigned long long delay, SwiftJob *job);
typedef SWIFTCC void DelayHook(unsigned long long delay, SwiftJob *job, DelayOriginal *original);
typedef SWIFTCC void DeadlineOriginal(long long sec, long long nsec, long long tsec, long long tnsec, int clock,
                                      SwiftJob *job);
typedef SWIFTCC void DeadlineHook(long long sec, long long nsec, long long tsec, long long tnsec, int clock,
                                  SwiftJob *job, DeadlineOriginal *original);
typedef SWIFTCC void JobRun(SwiftJob *job, SerialExecutorRef executor);
typedef char *Demangle(const char *name, size_t length, char *buffer, size_t *size, uint32_t flags);

enum { maximumWorkers = 64, stackDepth = 48, stacksPerJob = 4, keptCapacity = 256, offenderCapacity = 32, stackTextCapacity = 8192 };

static const uint64_t nanosecondsPerSecond = 1000000000ull;

// MARK: - Settings and counters

static int watching;
static int workerCount;
static uint64_t limitNanoseconds = 5 * 1000000ull;
/// The longest a job may compute on a cooperative thread (HANEKE_WATCHDOG_CPU_LIMIT_MS): work that
/// long belongs on a thread of its own, as every other task waits behind it — on a busy machine
/// for several times as long.
static uint64_t cpuLimitNanoseconds = 300 * 1000000ull;
static uint64_t lockLimitNanoseconds = 50 * 1000000ull;
/// How many times the CPUs the busiest recent moment had runnable threads for (at least 1), in
/// thousandths: a short wait is judged against the short-wait limit times this, since a holder
/// preempted on a busy machine waits for a CPU in proportion.
static _Atomic uint64_t loadFactorThousandths = 1000;
static _Atomic uint64_t largestLoadFactorThousandths = 1000;
static JobRun *runJob;
static Demangle *demangle;
static _Atomic uint64_t jobsRun;
/// The longest sleep in a blocking call among the jobs the sampler caught (under recordLock).
static uint64_t longestBlockingSleep;
static _Atomic uint64_t offenderTotal;

static uint64_t now(clockid_t clock) {
    struct timespec time;
    clock_gettime(clock, &time);
    return (uint64_t)time.tv_sec * nanosecondsPerSecond + (uint64_t)time.tv_nsec;
}

// MARK: - Workers

typedef struct {
    int count;
    void *frames[stackDepth];
} Stack;

typedef struct {
    pthread_t thread;
    pid_t tid;
    int schedstat;   // /proc/self/task/<tid>/schedstat, read by the worker and the sampler
    int stat;        // /proc/self/task/<tid>/stat, read by the sampler
    _Atomic uint64_t sequence;    // the job running now (or last), counted from 1
    _Atomic uint64_t startedAt;   // when that job started; 0 between jobs
    uint64_t lastSignalAt;        // the sampler's own
    uint64_t tag;                 // set by haneke_watchdog_keep_current_job
    // Written by the signal handler, on this worker's own thread: the stacks the job was caught
    // asleep in.
    Stack stacks[stacksPerJob];
    volatile sig_atomic_t stackCount;
    volatile uint64_t stacksSequence;
    // The sampler's signal wakes a sleeping thread, which then waits for a CPU before its handler
    // runs: time it would have slept, turned into run-queue delay by the watchdog itself. The
    // sampler notes the thread's run-queue delay as it signals (for job `signalSequence`), the
    // handler adds what accrued since to `inducedDelay`, and the job counts it as sleep.
    _Atomic uint64_t signalSequence;
    _Atomic uint64_t runDelayAtSignal;
    _Atomic uint64_t inducedDelay;
    // A job that has held its thread for a while on a CPU: the sampler asks for its stack once
    // (`busyRequest` is the job's sequence), and the handler keeps it apart from the sleep stacks.
    _Atomic uint64_t busyRequest;
    Stack busyStack;
    volatile uint64_t busyStackSequence;
} Worker;

static Worker workers[maximumWorkers];
static __thread Worker *currentWorker;
static int stackSignal;

// MARK: - The ready queue

typedef struct Node {
    struct Node *next;
    SwiftJob *job;
    uint64_t enqueuedAt;   // CLOCK_MONOTONIC
} Node;

static pthread_mutex_t queueLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queueReady = PTHREAD_COND_INITIALIZER;
static Node *queueHead;
static Node *queueTail;
static Node *spareNodes;
static int idleWorkers;

static void enqueueReady(SwiftJob *job) {
    uint64_t enqueuedAt = now(CLOCK_MONOTONIC);   // read before the lock, which every job takes
    pthread_mutex_lock(&queueLock);
    Node *node = spareNodes;
    if (node) {
        spareNodes = node->next;
    } else if (!(node = malloc(sizeof(Node)))) {
        abort();
    }
    node->next = NULL;
    node->job = job;
    node->enqueuedAt = enqueuedAt;
    if (queueTail) {
        queueTail->next = node;
    } else {
        queueHead = node;
    }
    queueTail = node;
    if (idleWorkers > 0) pthread_cond_signal(&queueReady);
    pthread_mutex_unlock(&queueLock);
}

/// Takes the oldest ready job, waiting for one; `*enqueuedAt` is when it became ready.
static SwiftJob *dequeueReady(uint64_t *enqueuedAt) {
    pthread_mutex_lock(&queueLock);
    while (!queueHead) {
        idleWorkers += 1;
        pthread_cond_wait(&queueReady, &queueLock);
        idleWorkers -= 1;
    }
    Node *node = queueHead;
    queueHead = node->next;
    if (!queueHead) queueTail = NULL;
    SwiftJob *job = node->job;
    *enqueuedAt = node->enqueuedAt;
    node->next = spareNodes;
    spareNodes = node;
    pthread_mutex_unlock(&queueLock);
    return job;
}

// MARK: - Jobs for later (Task.sleep)

typedef struct {
    uint64_t due;   // CLOCK_MONOTONIC
    SwiftJob *job;
} Timed;

static pthread_mutex_t timerLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timerChanged;
static Timed *timed;
static size_t timedCount;
static size_t timedCapacity;

static void enqueueAt(uint64_t due, SwiftJob *job) {
    pthread_mutex_lock(&timerLock);
    if (timedCount == timedCapacity) {
        timedCapacity = timedCapacity ? timedCapacity * 2 : 64;
        if (!(timed = realloc(timed, timedCapacity * sizeof(Timed)))) abort();
    }
    // A binary min-heap on `due`.
    size_t index = timedCount++;
    while (index > 0 && timed[(index - 1) / 2].due > due) {
        timed[index] = timed[(index - 1) / 2];
        index = (index - 1) / 2;
    }
    timed[index] = (Timed){due, job};
    if (index == 0) pthread_cond_signal(&timerChanged);
    pthread_mutex_unlock(&timerLock);
}

static Timed popEarliest(void) {
    Timed earliest = timed[0];
    Timed last = timed[--timedCount];
    size_t index = 0;
    for (;;) {
        size_t child = 2 * index + 1;
        if (child >= timedCount) break;
        if (child + 1 < timedCount && timed[child + 1].due < timed[child].due) child += 1;
        if (timed[child].due >= last.due) break;
        timed[index] = timed[child];
        index = child;
    }
    if (timedCount > 0) timed[index] = last;
    return earliest;
}

static void *runTimer(void *unused) {
    (void)unused;
    pthread_mutex_lock(&timerLock);
    for (;;) {
        if (timedCount == 0) {
            pthread_cond_wait(&timerChanged, &timerLock);
            continue;
        }
        uint64_t current = now(CLOCK_MONOTONIC);
        if (timed[0].due <= current) {
            Timed due = popEarliest();
            pthread_mutex_unlock(&timerLock);
            enqueueReady(due.job);
            pthread_mutex_lock(&timerLock);
            continue;
        }
        struct timespec until = {(time_t)(timed[0].due / nanosecondsPerSecond),
                                 (long)(timed[0].due % nanosecondsPerSecond)};
        pthread_cond_timedwait(&timerChanged, &timerLock, &until);
    }
    return NULL;
}

// MARK: - The runtime's hooks

static SWIFTCC void enqueueHook(SwiftJob *job, EnqueueOriginal *original) {
    (void)original;
    enqueueReady(job);
}

static SWIFTCC void delayHook(unsigned long long delay, SwiftJob *job, DelayOriginal *original) {
    (void)original;
    enqueueAt(now(CLOCK_MONOTONIC) + delay, job);
}

static SWIFTCC void deadlineHook(long long sec, long long nsec, long long tsec, long long tnsec, int clock,
                                 SwiftJob *job, DeadlineOriginal *original) {
    (void)tsec;
    (void)tnsec;
    (void)original;
    // The runtime's clocks on Linux: 1 is ContinuousClock (CLOCK_BOOTTIME), 2 SuspendingClock
    // (CLOCK_MONOTONIC).
    uint64_t clockNow = now(clock == 1 ? CLOCK_BOOTTIME : CLOCK_MONOTONIC);
    uint64_t deadline = (uint64_t)sec * nanosecondsPerSecond + (uint64_t)nsec;
    uint64_t delay = deadline > clockNow ? deadline - clockNow : 0;
    enqueueAt(now(CLOCK_MONOTONIC) + delay, job);
}

// MARK: - Measuring a job

/// The sampler looks at a job after its first millisecond: a shorter sleep has no stack to judge,
/// and is shorter than every limit.
static const uint64_t catchAfterNanoseconds = 1000000;

/// Reads a /proc file from its start into `text` (of `capacity` bytes), ending it with a NUL.
/// - Returns: Whether anything was read.
static int readProcFile(int descriptor, char *text, size_t capacity) {
    ssize_t length = descriptor >= 0 ? pread(descriptor, text, capacity - 1, 0) : -1;
    if (length <= 0) return 0;
    text[length] = 0;
    return 1;
}

/// The time a thread has waited for a CPU (the second field of its schedstat file `descriptor`).
/// Called in the signal handler too: pread and strtoull take no lock.
static uint64_t runQueueDelay(int descriptor) {
    char text[128];
    if (!readProcFile(descriptor, text, sizeof text)) return 0;
    char *end;
    strtoull(text, &end, 10);
    return strtoull(end, NULL, 10);
}

/// What a thread caught asleep was waiting for.
typedef enum {
    /// Anything that can take as long as the world makes it: a timer, a process, a pipe, a
    /// socket, a semaphore or condition, a disk flush, another thread's one-time initialization.
    waitBlocking = 0,
    /// A short critical section behind someone else: a mutex, one file-system call on names
    /// (mkdir, unlink, stat…) that waits for a kernel lock on a directory, a socket's set-up
    /// (socket, bind, listen: the kernel's own locks, never a peer), or a page fault (the
    /// memory-map lock while another thread maps or unmaps, or a page of a library's code or data
    /// read from disk the first time the process touches it). On a busy machine the holder may
    /// itself wait a few time slices for a CPU.
    waitShort = 1,
    /// The allocator: an arena lock (malloc never holds one across I/O) or the process's
    /// memory-map lock while it maps or unmaps. How long it takes is the machine's load, not a
    /// blocking call: counted, never an offender.
    waitMemory = 2,
    /// The test framework's own bookkeeping (its console lock): not this package's to fix.
    waitFramework = 3,
    /// Not a wait: the job computed on its thread for longer than the CPU limit.
    waitNone = 4,
} Wait;

typedef struct {
    uint64_t tag;
    HanekeWatchdogJob measured;
    Wait wait;     // the kind of the job's worst wait (blocking before short before framework)
    Stack stack;   // a stack of that kind
    /// An offender whose sleep the sampler never caught: the stack it took while the job ran, if
    /// it took one (a job held long enough), which names the job even so.
    int hasRunningStack;
    Stack runningStack;
} Kept;

static pthread_mutex_t recordLock = PTHREAD_MUTEX_INITIALIZER;
static Kept kept[keptCapacity];
static size_t keptCount;
static Kept offenders[offenderCapacity];
static size_t offenderCount;
static uint64_t shortWaitsOverLimit;
static uint64_t longestShortWait;
static uint64_t memoryWaitsOverLimit;
static uint64_t longestMemoryWait;
static uint64_t frameworkWaitsOverLimit;

// What held the threads: every job's wall time and time on a CPU, how long jobs waited in the
// ready queue for a thread, and the jobs that held a thread longest (each with a stack the sampler
// took while it ran). A test that times out under load while no job blocked waits behind these.
enum { busiestCapacity = 5 };
static const uint64_t busyStackAfterNanoseconds = 20 * 1000000ull;
static _Atomic uint64_t heldNanoseconds;
static _Atomic uint64_t heldOnACPUNanoseconds;
static _Atomic uint64_t queuedNanoseconds;
static _Atomic uint64_t longestQueued;
static Kept busiest[busiestCapacity];   // by wall time, longest first (under recordLock)

static int endsWith(const char *text, const char *suffix) {
    size_t length = strlen(text), suffixLength = strlen(suffix);
    return length >= suffixLength && strcmp(text + length - suffixLength, suffix) == 0;
}

static int isNamed(const char *name, const char *const *names, size_t count) {
    for (size_t index = 0; index < count; index += 1) {
        if (strcmp(name, names[index]) == 0 || (strstr(name, names[index]) && names[index][0] == '_')) return 1;
    }
    return 0;
}

/// Classifies a stack by the function the thread sleeps in and by who called it.
/// Where the copy and fill routines that libc chose for this CPU start (memset, memcpy, memmove
/// resolve at load time to internal functions such as `__memset_avx2_unaligned_erms`, which
/// dladdr cannot name: they are not exported).
static uintptr_t stringRoutines[3];
static pthread_once_t stringRoutinesOnce = PTHREAD_ONCE_INIT;

static void findStringRoutines(void) {
    static const char *const names[] = {"memset", "memcpy", "memmove"};
    for (int index = 0; index < 3; index += 1) stringRoutines[index] = (uintptr_t)dlsym(RTLD_DEFAULT, names[index]);
}

/// Whether `address`, in libc but in no symbol dladdr can name, lies in one of the copy and fill
/// routines libc chose: within 2 KiB of its start (the longest, memcpy's, is 1.75 KiB here; the
/// bytes after a shorter one are other string routines, which do not sleep either but in a page
/// fault).
static int isInStringRoutine(const void *address) {
    pthread_once(&stringRoutinesOnce, findStringRoutines);
    for (int index = 0; index < 3; index += 1) {
        uintptr_t start = stringRoutines[index];
        if (start != 0 && (uintptr_t)address >= start && (uintptr_t)address - start < 2048) return 1;
    }
    return 0;
}

static Wait classify(const Stack *stack) {
    static const char *const lockFunctions[] = {"pthread_mutex_lock", "pthread_mutex_timedlock", "___pthread_mutex_lock",
                                                "__lll_lock_wait", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
                                                "_lockSlow", "__pthread_once_slow",
                                                // Signalling a condition variable waits only for its
                                                // internal lock, never for an event (SwiftNIO's thread
                                                // pool signals one on every submit; 10 ms under load).
                                                "pthread_cond_signal", "pthread_cond_broadcast",
                                                "__pthread_cond_signal", "__pthread_cond_broadcast"};
    static const char *const nameFunctions[] = {"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
                                                "renameat", "renameat2", "stat", "stat64", "lstat", "lstat64",
                                                "fstatat", "fstatat64", "__fstatat64", "statx", "access", "faccessat",
                                                "open", "open64", "openat", "openat64", "__open64_nocancel",
                                                "__openat64_nocancel", "close", "__close_nocancel", "symlink",
                                                "symlinkat", "readlink", "readlinkat", "chmod", "fchmod", "fchmodat",
                                                // glibc's internal names for the same calls (a name that starts
                                                // with _ matches wherever it occurs in a symbol):
                                                // `UUID()` opens /dev/urandom through __open64.
                                                "__open", "__libc_open", "__close", "__unlink", "__mkdir", "__rename",
                                                "__stat", "__lstat", "__fstatat", "__access", "__readlink",
                                                // A socket's set-up, never its traffic: NIO's bind(to:) makes its
                                                // listening socket on the caller's thread (socket() slept 16 ms
                                                // under load).
                                                "socket", "__socket", "bind", "__bind", "listen", "__listen",
                                                "setsockopt", "__setsockopt", "getsockname", "__getsockname"};
    // Copies that fault a page in wait for the process's memory-map lock while another thread
    // maps or unmaps (or for the disk, when the page is a mapped file's).
    static const char *const faultFunctions[] = {"__memcpy", "__memmove", "__memset"};
    // The allocator, and the calls by which it grows or trims the heap.
    static const char *const memoryFunctions[] = {"malloc", "free", "calloc", "realloc", "__libc_malloc", "__libc_free",
                                                  "__libc_calloc", "__libc_realloc", "posix_memalign", "__posix_memalign",
                                                  "aligned_alloc", "memalign", "__libc_memalign", "mmap", "mmap64", "__mmap",
                                                  "munmap", "__munmap", "mprotect", "__mprotect", "madvise", "__madvise",
                                                  "brk", "__brk", "sbrk", "__sbrk"};
    Wait wait = waitBlocking;
    int decided = 0, lastLibcFrameWasSyscall = 0;
    // Frames above the handler and the trampoline: the first named one says what the thread waits
    // in; one of the allocator's among those in libc, that it waits for memory; the first outside
    // libc says who asked.
    for (int index = 2; index < stack->count; index += 1) {
        Dl_info info;
        if (!dladdr(stack->frames[index], &info) || !info.dli_fname) continue;
        int inLibc = endsWith(info.dli_fname, "/libc.so.6");
        // Every system call goes through libc (or the loader's own wrappers), so a thread that
        // sleeps with its first frame anywhere else sleeps in a page fault: a load or a store that
        // waits for the memory-map lock or for a page of a library to be read in. Seen in CI: the
        // runtime's first look at a witness table in FoundationInternationalization slept 21 ms
        // with swift_getWitnessTable itself as the first frame.
        if (index == 2 && !inLibc && !strstr(info.dli_fname, "/ld-linux")) return waitShort;
        if (inLibc) lastLibcFrameWasSyscall = info.dli_sname && strcmp(info.dli_sname, "syscall") == 0;
        // Seen in CI: a fill that faulted a page in slept 19 ms in __memset_avx2_unaligned_erms,
        // which dladdr does not name (and the frame after it, swift_getWitnessTable, is not libc's).
        if (!decided && inLibc && !info.dli_sname && isInStringRoutine(stack->frames[index])) {
            wait = waitShort;
            decided = 1;
        }
        if (!decided && info.dli_sname) {
            const char *name = info.dli_sname;
            if (isNamed(name, lockFunctions, sizeof lockFunctions / sizeof *lockFunctions)
                || (inLibc && isNamed(name, nameFunctions, sizeof nameFunctions / sizeof *nameFunctions))
                || (inLibc && isNamed(name, faultFunctions, sizeof faultFunctions / sizeof *faultFunctions))) {
                wait = waitShort;
                decided = 1;
            } else if (strncmp(name, "futex", 5) != 0 && strncmp(name, "__futex", 7) != 0) {
                decided = 1;
            }
        }
        if (inLibc && info.dli_sname && isNamed(info.dli_sname, memoryFunctions, sizeof memoryFunctions / sizeof *memoryFunctions)) {
            wait = waitMemory;
        }
        if (!inLibc) {
            if (endsWith(info.dli_fname, "/libTesting.so")) return waitFramework;
            // The Swift runtime's own locks are futexes it waits on through libc's `syscall`: the
            // one-time initialization of a global or a static (`swift_once`, which another thread
            // runs for the length of the initializer) and its metadata caches.
            if (endsWith(info.dli_fname, "/libswiftCore.so") && lastLibcFrameWasSyscall) return waitShort;
            return wait;
        }
    }
    return wait;
}

/// Keeps what a job measured: under its tag for a test, or as an offender when it blocked a
/// thread (slept longer than the limit in a blocking wait, or longer than the short-wait limit in
/// short waits), or counted when it only waited shortly or for the test framework.
static void record(Worker *worker, uint64_t sequence, uint64_t slept, uint64_t wall, uint64_t cpu) {
    Kept entry = {worker->tag, {slept, wall, cpu, 0, 0}, waitFramework, {0, {0}}, 0, {0, {0}}};
    int caught = worker->stacksSequence == sequence ? worker->stackCount : 0;
    for (int index = 0; index < caught; index += 1) {
        Wait wait = classify(&worker->stacks[index]);
        if (index == 0 || wait < entry.wait) {
            entry.wait = wait;
            entry.stack = worker->stacks[index];
        }
    }
    // A sleep the sampler never caught is judged as a short wait: it fails only past that limit.
    // (A CI run reported one as "not caught" and nothing else: the stack taken while it ran, if
    // any, at least says which job it was.)
    if (caught == 0) {
        entry.wait = waitShort;
        if (worker->busyStackSequence == sequence) {
            entry.hasRunningStack = 1;
            entry.runningStack = worker->busyStack;
        }
    }
    entry.measured.stack_taken = caught > 0;
    entry.measured.waited_for_a_lock = caught > 0 && entry.wait == waitShort;
    uint64_t shortLimit = lockLimitNanoseconds / 1000 * atomic_load(&loadFactorThousandths);
    int offends = (entry.wait == waitBlocking && slept > limitNanoseconds)
                  || (entry.wait == waitShort && slept > shortLimit);
    pthread_mutex_lock(&recordLock);
    if (entry.tag == 0 && entry.wait == waitBlocking && slept > longestBlockingSleep) longestBlockingSleep = slept;
    if (entry.tag != 0) {
        kept[keptCount % keptCapacity] = entry;
        keptCount += 1;
    } else if (offends) {
        atomic_fetch_add(&offenderTotal, 1);
        if (offenderCount < offenderCapacity) offenders[offenderCount++] = entry;
    } else if (slept <= limitNanoseconds) {
        // Shorter than every limit: only the longest blocking sleep is kept (above).
    } else if (entry.wait == waitShort) {
        shortWaitsOverLimit += 1;
        if (slept > longestShortWait) longestShortWait = slept;
    } else if (entry.wait == waitMemory) {
        memoryWaitsOverLimit += 1;
        if (slept > longestMemoryWait) longestMemoryWait = slept;
    } else {
        frameworkWaitsOverLimit += 1;
    }
    pthread_mutex_unlock(&recordLock);
}

// MARK: - Naming a stack

/// Appends to `text` (of `capacity` bytes, `*used` of them used) what printf would print.
static void append(char *text, size_t capacity, size_t *used, const char *format, ...) __attribute__((format(printf, 4, 5)));
static void append(char *text, size_t capacity, size_t *used, const char *format, ...) {
    if (*used + 1 >= capacity) return;
    va_list arguments;
    va_start(arguments, format);
    int written = vsnprintf(text + *used, capacity - *used, format, arguments);
    va_end(arguments);
    if (written > 0) *used = *used + (size_t)written < capacity ? *used + (size_t)written : capacity - 1;
}

/// A function name as people read it: Swift names demangled.
static void appendName(char *text, size_t capacity, size_t *used, const char *name, size_t length) {
    char *readable = demangle && length > 2 && name[0] == '$' && name[1] == 's'
                         ? demangle(name, length, NULL, NULL, 0) : NULL;
    if (readable) {
        append(text, capacity, used, "%s", readable);
        free(readable);
    } else {
        append(text, capacity, used, "%.*s", (int)length, name);
    }
}

/// Names one frame the dynamic linker cannot (the test bundle's own functions are not exported)
/// with llvm-symbolizer, which the Swift toolchain ships: "function at file:line".
static int symbolize(const char *file, uintptr_t address, char *text, size_t capacity, size_t *used) {
    if (strchr(file, '\'')) return 0;
    const char *symbolizer = getenv("HANEKE_SYMBOLIZER");
    char command[4200];
    snprintf(command, sizeof command, "'%s' --inlining=false --obj='%s' 0x%lx 2>/dev/null",
             symbolizer ? symbolizer : "llvm-symbolizer", file, (unsigned long)address);
    FILE *output = popen(command, "r");
    if (!output) {
        // Said on the frame's line, so that a stack left unnamed says why.
        append(text, capacity, used, "%s+0x%lx (popen failed: %s)\n", file, (unsigned long)address, strerror(errno));
        return 1;
    }
    char function[2048] = "", location[2048] = "";
    int named = fgets(function, sizeof function, output) != NULL && fgets(location, sizeof location, output) != NULL;
    int status = pclose(output);
    function[strcspn(function, "\n")] = 0;
    location[strcspn(location, "\n")] = 0;
    if (!named || function[0] == 0 || strcmp(function, "??") == 0) {
        if (status == 0) return 0;
        append(text, capacity, used, "%s+0x%lx (the symbolizer ended with status 0x%x)\n", file, (unsigned long)address, (unsigned)status);
        return 1;
    }
    appendName(text, capacity, used, function, strlen(function));
    append(text, capacity, used, " at %s\n", location);
    return 1;
}

/// A stack, one frame per line, from the frame that slept outwards; ends at the job's start.
static void describeStack(const Kept *entry, char *text, size_t capacity) {
    size_t used = 0;
    text[0] = 0;
    // The first two frames are the signal handler's and the kernel's trampoline.
    for (int index = 2; index < entry->stack.count; index += 1) {
        // Frames after the first are return addresses: the call is the instruction before.
        uintptr_t address = (uintptr_t)entry->stack.frames[index] - (index > 2 ? 1 : 0);
        Dl_info info;
        int found = dladdr((void *)address, &info);
        append(text, capacity, &used, "    ");
        if (found && info.dli_sname) {
            appendName(text, capacity, &used, info.dli_sname, strlen(info.dli_sname));
            append(text, capacity, &used, " (%s)\n", strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname);
        } else if (!(found && info.dli_fname && symbolize(info.dli_fname, address - (uintptr_t)info.dli_fbase, text, capacity, &used))) {
            append(text, capacity, &used, "%s+0x%lx\n", found && info.dli_fname ? info.dli_fname : "?",
                   (unsigned long)(address - (found ? (uintptr_t)info.dli_fbase : 0)));
        }
        if (found && info.dli_sname && strcmp(info.dli_sname, "swift_job_run") == 0) break;
    }
}

/// Raises `*largest` to `value` if it is larger.
static void raiseTo(_Atomic uint64_t *largest, uint64_t value) {
    uint64_t seen = atomic_load_explicit(largest, memory_order_relaxed);
    while (value > seen && !atomic_compare_exchange_weak_explicit(largest, &seen, value, memory_order_relaxed, memory_order_relaxed)) {
    }
}

/// A job that held its thread `wall` (`cpu` of it on a CPU), with the stack the sampler took while
/// it ran, or else, when `orAsleep`, the first it caught it asleep in.
static Kept heldJob(Worker *worker, uint64_t sequence, uint64_t wall, uint64_t cpu, Wait wait, int orAsleep) {
    Kept entry = {worker->tag, {0, wall, cpu, 0, 0}, wait, {0, {0}}, 0, {0, {0}}};
    if (worker->busyStackSequence == sequence) {
        entry.measured.stack_taken = 1;
        entry.stack = worker->busyStack;
    } else if (orAsleep && worker->stacksSequence == sequence && worker->stackCount > 0) {
        entry.measured.stack_taken = 1;
        entry.stack = worker->stacks[0];
    }
    return entry;
}

/// Keeps a job among the ones that held a thread longest.
static void noteHeld(Worker *worker, uint64_t sequence, uint64_t wall, uint64_t cpu) {
    pthread_mutex_lock(&recordLock);
    if (wall > busiest[busiestCapacity - 1].measured.wall_nanoseconds) {
        Kept entry = heldJob(worker, sequence, wall, cpu, waitBlocking, 1);
        int index = busiestCapacity - 1;
        while (index > 0 && busiest[index - 1].measured.wall_nanoseconds < wall) {
            busiest[index] = busiest[index - 1];
            index -= 1;
        }
        busiest[index] = entry;
    }
    pthread_mutex_unlock(&recordLock);
}

/// Keeps a job that computed longer than the CPU limit as an offender, with the stack the sampler
/// took while it ran.
static void recordBusy(Worker *worker, uint64_t sequence, uint64_t wall, uint64_t cpu) {
    Kept entry = heldJob(worker, sequence, wall, cpu, waitNone, 0);
    pthread_mutex_lock(&recordLock);
    atomic_fetch_add(&offenderTotal, 1);
    if (offenderCount < offenderCapacity) offenders[offenderCount++] = entry;
    pthread_mutex_unlock(&recordLock);
}

static void runMeasured(Worker *worker, SwiftJob *job, uint64_t enqueuedAt) {
    uint64_t sequence = atomic_fetch_add(&worker->sequence, 1) + 1;
    worker->tag = 0;
    atomic_store(&worker->inducedDelay, 0);
    uint64_t waitedBefore = runQueueDelay(worker->schedstat);
    uint64_t cpuBefore = now(CLOCK_THREAD_CPUTIME_ID);
    uint64_t start = now(CLOCK_MONOTONIC);
    atomic_store(&worker->startedAt, start);
    uint64_t queued = start > enqueuedAt ? start - enqueuedAt : 0;
    atomic_fetch_add_explicit(&queuedNanoseconds, queued, memory_order_relaxed);
    raiseTo(&longestQueued, queued);

    runJob(job, (SerialExecutorRef){NULL, 0});

    uint64_t end = now(CLOCK_MONOTONIC);
    atomic_store(&worker->startedAt, 0);
    uint64_t cpu = now(CLOCK_THREAD_CPUTIME_ID) - cpuBefore;
    uint64_t wall = end - start;
    atomic_fetch_add_explicit(&jobsRun, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&heldNanoseconds, wall, memory_order_relaxed);
    atomic_fetch_add_explicit(&heldOnACPUNanoseconds, cpu, memory_order_relaxed);
    if (wall >= busyStackAfterNanoseconds) noteHeld(worker, sequence, wall, cpu);
    if (worker->tag == 0 && cpu > cpuLimitNanoseconds) recordBusy(worker, sequence, wall, cpu);
    // What the job slept is at most wall - cpu: most jobs end here, without reading schedstat again.
    if (worker->tag == 0 && wall <= cpu + catchAfterNanoseconds) return;
    uint64_t waited = runQueueDelay(worker->schedstat) - waitedBefore;
    uint64_t induced = atomic_load(&worker->inducedDelay);
    waited = waited > induced ? waited - induced : 0;
    uint64_t slept = wall > cpu + waited ? wall - cpu - waited : 0;
    if (worker->tag != 0 || slept > catchAfterNanoseconds) record(worker, sequence, slept, wall, cpu);
}

static void *runWorker(void *argument) {
    Worker *worker = argument;
    currentWorker = worker;
    worker->tid = (pid_t)syscall(SYS_gettid);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)worker->tid);
    worker->schedstat = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)worker->tid);
    worker->stat = open(path, O_RDONLY | O_CLOEXEC);
    for (;;) {
        uint64_t enqueuedAt;
        SwiftJob *job = dequeueReady(&enqueuedAt);
        runMeasured(worker, job, enqueuedAt);
    }
    return NULL;
}

// MARK: - Catching a sleeping job's stack

static void takeStack(int signal) {
    (void)signal;
    int savedErrno = errno;
    Worker *worker = currentWorker;
    if (worker && atomic_exchange(&worker->busyRequest, 0) == atomic_load(&worker->sequence)) {
        // The sampler asked for a busy job's stack: keep it apart; it says nothing of sleeping.
        worker->busyStack.count = backtrace(worker->busyStack.frames, stackDepth);
        worker->busyStackSequence = atomic_load(&worker->sequence);
    } else if (worker) {
        uint64_t sequence = atomic_load(&worker->sequence);
        if (atomic_exchange(&worker->signalSequence, 0) == sequence) {
            uint64_t delay = runQueueDelay(worker->schedstat), atSignal = atomic_load(&worker->runDelayAtSignal);
            if (delay > atSignal) atomic_fetch_add(&worker->inducedDelay, delay - atSignal);
        }
        if (worker->stacksSequence != sequence) {
            worker->stackCount = 0;
            worker->stacksSequence = sequence;
        }
        if (worker->stackCount < stacksPerJob) {
            Stack *stack = &worker->stacks[worker->stackCount];
            stack->count = backtrace(stack->frames, stackDepth);
            worker->stackCount += 1;
        }
    }
    errno = savedErrno;
}

/// The state letter of a worker's thread (R running, S sleeping, D in uninterruptible sleep).
static char threadState(Worker *worker) {
    char text[512];
    if (!readProcFile(worker->stat, text, sizeof text)) return '?';
    char *close = strrchr(text, ')');
    return close && close[1] == ' ' ? close[2] : '?';
}

/// Notes how many threads are runnable now (from /proc/loadavg, less the sampler itself) in
/// `recent[slot]`, and sets the load factor from the largest of the last second's notes.
static void noteLoad(int loadavg, uint64_t recent[10], uint64_t slot) {
    char text[128];
    if (!readProcFile(loadavg, text, sizeof text)) return;
    // "0.52 0.58 0.59 3/612 12345": the fourth field is runnable/all.
    char *field = text;
    for (int skip = 0; skip < 3 && field; skip += 1) {
        field = strchr(field, ' ');
        if (field) field += 1;
    }
    if (!field) return;
    uint64_t runnable = strtoull(field, NULL, 10);
    recent[slot] = runnable > 0 ? runnable - 1 : 0;
    uint64_t busiest = 0;
    for (int index = 0; index < 10; index += 1) busiest = recent[index] > busiest ? recent[index] : busiest;
    // /proc/loadavg counts the whole machine's runnable threads: per CPU of the machine.
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t factor = busiest * 1000 / (uint64_t)(cpus > 0 ? cpus : 1);
    atomic_store(&loadFactorThousandths, factor > 1000 ? factor : 1000);
    if (factor > atomic_load(&largestLoadFactorThousandths)) atomic_store(&largestLoadFactorThousandths, factor);
}

/// Every millisecond, looks at the threads that have been in one job for more than a millisecond,
/// and takes the stack of each that is asleep (at most every 2 ms, at most 4 per job).
///
/// The sampler runs at a real-time priority when the system allows it, so that no busy thread
/// comes between its look at a worker and its signal: a worker that woke in between would have
/// its wait for a CPU counted as induced (see `inducedDelay`).
static void *runSampler(void *unused) {
    (void)unused;
    struct sched_param priority = {.sched_priority = 1};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &priority);
    int loadavg = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    uint64_t recentLoad[10] = {0};
    for (uint64_t round = 0;; round += 1) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
        if (round % 100 == 0) noteLoad(loadavg, recentLoad, (round / 100) % 10);
        uint64_t current = now(CLOCK_MONOTONIC);
        for (int index = 0; index < workerCount; index += 1) {
            Worker *worker = &workers[index];
            // The job first, then its start: a job that began after this read has a later start.
            uint64_t sequence = atomic_load(&worker->sequence);
            uint64_t started = atomic_load(&worker->startedAt);
            if (started == 0 || started > current || current - started < catchAfterNanoseconds || current - worker->lastSignalAt < 2 * catchAfterNanoseconds) continue;
            if (current - started >= busyStackAfterNanoseconds && worker->busyStackSequence != sequence
                && atomic_load(&worker->busyRequest) != sequence && threadState(worker) == 'R') {
                // A job that has held its thread on a CPU for a while: one stack, to name it.
                worker->lastSignalAt = current;
                atomic_store(&worker->busyRequest, sequence);
                pthread_kill(worker->thread, stackSignal);
                continue;
            }
            if (worker->stacksSequence == sequence && worker->stackCount >= stacksPerJob) continue;
            uint64_t delay = runQueueDelay(worker->schedstat);
            char state = threadState(worker);
            if (state != 'S' && state != 'D') continue;
            worker->lastSignalAt = current;
            // Only an interruptible sleep (S) is cut short by the signal; a thread in D wakes
            // when its call ends, and its wait for a CPU then is its own.
            if (state == 'S') {
                atomic_store(&worker->runDelayAtSignal, delay);
                atomic_store(&worker->signalSequence, sequence);
            }
            pthread_kill(worker->thread, stackSignal);
        }
    }
    return NULL;
}

// MARK: - Installing and reporting

/// Prints a kept job's stack, when one was taken, to stderr.
static void printStack(const Kept *entry) {
    if (!entry->measured.stack_taken) return;
    static char stack[stackTextCapacity];
    describeStack(entry, stack, sizeof stack);
    fputs(stack, stderr);
}

static void report(void) {
    if (!watching || atomic_load(&jobsRun) == 0) return;
    fflush(stdout);
    pthread_mutex_lock(&recordLock);
    uint64_t total = atomic_load(&offenderTotal);   // under the lock, with the offenders it counts
    fprintf(stderr,
            "blocking watchdog: %llu jobs ran on %d threads; the longest sleep in a blocking call was %.1f ms (limit %.0f ms); "
            "%llu jobs waited longer for a lock, a file name or a page, the longest %.1f ms (limit %.0f ms, times the load: up to "
            "x%.1f); %llu for the allocator, the longest %.1f ms; %llu for the test framework\n",
            (unsigned long long)atomic_load(&jobsRun), workerCount, longestBlockingSleep / 1e6,
            limitNanoseconds / 1e6, (unsigned long long)shortWaitsOverLimit, longestShortWait / 1e6,
            lockLimitNanoseconds / 1e6, atomic_load(&largestLoadFactorThousandths) / 1000.0, (unsigned long long)memoryWaitsOverLimit,
            longestMemoryWait / 1e6,
            (unsigned long long)frameworkWaitsOverLimit);
    uint64_t jobs = atomic_load(&jobsRun);
    fprintf(stderr,
            "blocking watchdog: jobs held the threads %.1f s (on a CPU %.1f s); a job waited for a thread %.2f ms on average, "
            "%.0f ms at most\n",
            atomic_load(&heldNanoseconds) / 1e9, atomic_load(&heldOnACPUNanoseconds) / 1e9,
            atomic_load(&queuedNanoseconds) / 1e6 / (double)jobs, atomic_load(&longestQueued) / 1e6);
    for (int index = 0; index < busiestCapacity && busiest[index].measured.wall_nanoseconds >= 100 * 1000000ull; index += 1) {
        HanekeWatchdogJob *job = &busiest[index].measured;
        fprintf(stderr, "blocking watchdog: a job held its thread %.0f ms (on a CPU %.0f ms)%s%s\n", job->wall_nanoseconds / 1e6,
                job->cpu_nanoseconds / 1e6, busiest[index].tag != 0 ? " (kept for a test of the watchdog)" : "",
                job->stack_taken ? ", running:" : "");
        printStack(&busiest[index]);
    }
    if (total == 0) {
        pthread_mutex_unlock(&recordLock);
        return;
    }
    fprintf(stderr, "blocking watchdog: %llu jobs blocked or held a cooperative thread:\n", (unsigned long long)total);
    for (size_t index = 0; index < offenderCount; index += 1) {
        HanekeWatchdogJob *job = &offenders[index].measured;
        if (offenders[index].wait == waitNone) {
            fprintf(stderr, "  a job computed %.0f ms on a CPU (limit %.0f ms; it held its thread %.0f ms)%s\n",
                    job->cpu_nanoseconds / 1e6, cpuLimitNanoseconds / 1e6, job->wall_nanoseconds / 1e6,
                    job->stack_taken ? ", running:" : " (its stack was not caught)");
            printStack(&offenders[index]);
            continue;
        }
        fprintf(stderr, "  a job slept %.1f ms (wall %.1f ms, on a CPU %.1f ms)%s\n", job->slept_nanoseconds / 1e6,
                job->wall_nanoseconds / 1e6, job->cpu_nanoseconds / 1e6,
                !job->stack_taken ? (offenders[index].hasRunningStack ? " (no sleep of it was caught; it was running:)" : " (its stack was not caught)")
                : offenders[index].wait == waitShort ? ", waiting for a lock, a file name or a page in:" : ", asleep in:");
        if (!job->stack_taken && offenders[index].hasRunningStack) {
            Kept running = offenders[index];
            running.stack = running.runningStack;
            running.measured.stack_taken = 1;
            printStack(&running);
        } else {
            printStack(&offenders[index]);
        }
    }
    pthread_mutex_unlock(&recordLock);
    fflush(stderr);
    _exit(1);
}

static int threadsOfThisProcess(void) {
    const char *setting = getenv("HANEKE_WATCHDOG_THREADS");
    if (setting && atoi(setting) > 0) return atoi(setting) < maximumWorkers ? atoi(setting) : maximumWorkers;
    cpu_set_t set;
    int count = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    return count < 1 ? 1 : count < maximumWorkers ? count : maximumWorkers;
}

static void startThread(pthread_t *thread, void *(*body)(void *), void *argument) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 8 << 20);
    if (pthread_create(thread, &attributes, body, argument) != 0) abort();
    pthread_attr_destroy(&attributes);
}

__attribute__((constructor)) static void install(void) {
    const char *setting = getenv("HANEKE_WATCHDOG");
    if (setting && strcmp(setting, "off") == 0) return;
    const char *limit = getenv("HANEKE_WATCHDOG_LIMIT_MS");
    if (limit && atof(limit) > 0) limitNanoseconds = (uint64_t)(atof(limit) * 1e6);
    const char *lockLimit = getenv("HANEKE_WATCHDOG_LOCK_LIMIT_MS");
    if (lockLimit && atof(lockLimit) > 0) lockLimitNanoseconds = (uint64_t)(atof(lockLimit) * 1e6);
    const char *cpuLimit = getenv("HANEKE_WATCHDOG_CPU_LIMIT_MS");
    if (cpuLimit && atof(cpuLimit) > 0) cpuLimitNanoseconds = (uint64_t)(atof(cpuLimit) * 1e6);

    EnqueueHook **enqueue = dlsym(RTLD_DEFAULT, "swift_task_enqueueGlobal_hook");
    DelayHook **delay = dlsym(RTLD_DEFAULT, "swift_task_enqueueGlobalWithDelay_hook");
    DeadlineHook **deadline = dlsym(RTLD_DEFAULT, "swift_task_enqueueGlobalWithDeadline_hook");
    runJob = (JobRun *)dlsym(RTLD_DEFAULT, "swift_job_run");
    demangle = (Demangle *)dlsym(RTLD_DEFAULT, "swift_demangle");
    if (!enqueue || !delay || !deadline || !runJob) {
        fprintf(stderr, "blocking watchdog: the Swift runtime's executor hooks are missing; not watching\n");
        return;
    }

    // backtrace() loads its unwinder on first use; do that here, not in a signal handler.
    void *warmUp[4];
    backtrace(warmUp, 4);
    stackSignal = SIGRTMIN + 5;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = takeStack;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(stackSignal, &action, NULL);

    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&timerChanged, &attributes);
    pthread_condattr_destroy(&attributes);

    workerCount = threadsOfThisProcess();
    for (int index = 0; index < workerCount; index += 1) {
        startThread(&workers[index].thread, runWorker, &workers[index]);
    }
    pthread_t timer, sampler;
    startThread(&timer, runTimer, NULL);
    startThread(&sampler, runSampler, NULL);

    *enqueue = enqueueHook;
    *delay = delayHook;
    *deadline = deadlineHook;
    watching = 1;
    atexit(report);
}

// MARK: - The interface for tests

int32_t haneke_watchdog_is_watching(void) { return watching; }

int32_t haneke_watchdog_thread_count(void) { return workerCount; }

uint64_t haneke_watchdog_limit_nanoseconds(void) { return limitNanoseconds; }


int32_t haneke_watchdog_keep_current_job(uint64_t tag) {
    if (!currentWorker || tag == 0) return 0;
    currentWorker->tag = tag;
    return 1;
}

int32_t haneke_watchdog_kept_job(uint64_t tag, HanekeWatchdogJob *job, char *stack, uint64_t capacity) {
    int32_t found = 0;
    Kept entry;
    pthread_mutex_lock(&recordLock);
    size_t first = keptCount > keptCapacity ? keptCount - keptCapacity : 0;
    for (size_t index = first; index < keptCount; index += 1) {
        Kept *slot = &kept[index % keptCapacity];
        if (slot->tag != tag) continue;
        found = 1;
        entry = *slot;
    }
    pthread_mutex_unlock(&recordLock);
    if (!found) return 0;
    *job = entry.measured;
    if (stack && capacity > 0) {
        stack[0] = 0;
        if (entry.measured.stack_taken) describeStack(&entry, stack, (size_t)capacity);
    }
    return 1;
}
