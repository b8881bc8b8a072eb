// System calls FileStore needs that Swift cannot call directly: `openat2(2)` is reached only
// through the variadic `syscall(2)`, which Swift does not import. Only FileStore's
// Internal/POSIX.swift imports this module.

#ifndef HANEKE_CFILESTORESHIMS_H
#define HANEKE_CFILESTORESHIMS_H

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#if defined(__linux__) && __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#include <sys/syscall.h>
#endif

/// `O_PATH` (Linux 2.6.39), which the C library declares only under `_GNU_SOURCE`: a descriptor
/// that names a folder for the `*at` calls without opening it for reading.
static inline int haneke_o_path(void) {
#ifdef O_PATH
    return O_PATH;
#else
    return 010000000;
#endif
}

/// Opens `path`, relative to the directory `directory`, without following a symbolic link in any
/// component of the path and without leaving the directory (`RESOLVE_NO_SYMLINKS |
/// RESOLVE_BENEATH`): one system call for what otherwise takes an `openat` per component.
/// Returns the descriptor, or -1 with `errno` set: `ELOOP` when a component is a link, `ENOSYS`
/// (or `EPERM` under some seccomp filters) where the kernel lacks `openat2` (before Linux 5.6).
/// The corresponding C function is `openat2`.
static inline int haneke_openat2_beneath(int directory, const char *path, int flags) {
#if defined(__linux__) && defined(SYS_openat2) && defined(RESOLVE_NO_SYMLINKS)
    struct open_how how = {0};
    how.flags = (unsigned long long)flags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
    return (int)syscall(SYS_openat2, directory, path, &how, sizeof how);
#else
    (void)directory; (void)path; (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}

#endif
