// The raw descriptor-relative calls the file benchmarks compare with path calls: `openat2(2)` is
// reached only through the variadic `syscall(2)`, which Swift does not import.

#ifndef HANEKE_CFILEBASELINE_H
#define HANEKE_CFILEBASELINE_H

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

/// `openat2` with `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`, as FileStore reads an entry.
static inline int baseline_openat2_beneath(int directory, const char *path, int flags) {
    struct open_how how = {0};
    how.flags = (unsigned long long)flags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
    return (int)syscall(SYS_openat2, directory, path, &how, sizeof how);
}

/// `O_PATH`, which the C library declares only under `_GNU_SOURCE`.
static inline int baseline_o_path(void) {
#ifdef O_PATH
    return O_PATH;
#else
    return 010000000;
#endif
}

#endif
