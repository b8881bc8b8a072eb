#ifndef HANEKE_BLOCKING_WATCHDOG_H
#define HANEKE_BLOCKING_WATCHDOG_H

#include <stdint.h>

/// What the watchdog measured for one job it was asked to keep (see
/// `haneke_watchdog_keep_current_job`).
typedef struct {
    /// Time the job's thread slept inside the job: wall time minus time on a CPU minus time
    /// waiting for a CPU.
    uint64_t slept_nanoseconds;
    /// Wall time from the job's start to its end.
    uint64_t wall_nanoseconds;
    /// Time the job's thread spent on a CPU.
    uint64_t cpu_nanoseconds;
    /// Whether the watchdog caught the job's thread asleep and took its stack.
    int32_t stack_taken;
    /// Whether the job's waits were short ones: a mutex, one file-system call on names, a
    /// socket's set-up or a page fault.
    int32_t waited_for_a_lock;
} HanekeWatchdogJob;

/// Whether the watchdog runs this process's global-executor jobs (1) or not (0).
int32_t haneke_watchdog_is_watching(void);

/// The number of threads that run the jobs (the cooperative pool's width).
int32_t haneke_watchdog_thread_count(void);

/// The longest sleep allowed inside one job, in nanoseconds.
uint64_t haneke_watchdog_limit_nanoseconds(void);

/// Marks the job running on this thread so that what it measures is kept under `tag` (non-zero)
/// and is not reported as a failure. Returns 0 when this thread is not one of the watchdog's.
int32_t haneke_watchdog_keep_current_job(uint64_t tag);

/// Copies what was measured for the job kept under `tag`, and its stack (one frame per line) into
/// `stack` (at most `capacity` bytes, NUL-terminated). Naming the frames runs llvm-symbolizer:
/// call this off the cooperative threads. Returns 0 if no such job has ended.
int32_t haneke_watchdog_kept_job(uint64_t tag, HanekeWatchdogJob *job, char *stack, uint64_t capacity);


#endif
