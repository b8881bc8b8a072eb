// System calls FileStore needs that Swift cannot call directly: `openat2(2)` and
// `copy_file_range(2)` are reached only through the variadic `syscall(2)`, which Swift does not
// import; and atomic operations on memory another process maps too (the change counters of a
// store folder), which Swift's `Atomic` cannot be placed in. StoreFolders' POSIX.swift and
// ChangeCounters.swift import this module, and FileStore's Internal/FileCopy.swift.

#ifndef HANEKE_CFILESTORESHIMS_H
#define HANEKE_CFILESTORESHIMS_H

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

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

/// `O_TMPFILE` (Linux 3.11), which the C library declares only under `_GNU_SOURCE`: `open` of a
/// folder with it makes a file there that has no name (`EOPNOTSUPP` where the file system cannot).
static inline int haneke_o_tmpfile(void) {
#ifdef O_TMPFILE
    return O_TMPFILE;
#else
    return 020000000 | O_DIRECTORY;
#endif
}

/// `O_NOATIME` (Linux 2.6.8), which the C library declares only under `_GNU_SOURCE`: a read through
/// the descriptor leaves the file's access time alone, so the first read after a write does not
/// dirty the inode. Allowed only on a file the caller owns (or with `CAP_FOWNER`): `EPERM` otherwise.
static inline int haneke_o_noatime(void) {
#ifdef O_NOATIME
    return O_NOATIME;
#else
    return 01000000;
#endif
}

/// Opens `path`, relative to the directory `directory`, without following a symbolic link in any
/// component of the path and without leaving the directory (`RESOLVE_NO_SYMLINKS |
/// RESOLVE_BENEATH`): one system call for what otherwise takes an `openat` per component.
/// Returns the descriptor, or -1 with `errno` set: `ELOOP` when a component is a link, `ENOSYS`
/// (or `EPERM` under some seccomp filters) where the kernel lacks `openat2` (before Linux 5.6).
/// `resolve` adds flags of `open_how.resolve` (0 for none).
/// The corresponding C function is `openat2`.
static inline int haneke_openat2_beneath_resolving(int directory, const char *path, int flags, unsigned long long resolve) {
#if defined(__linux__) && defined(SYS_openat2) && defined(RESOLVE_NO_SYMLINKS)
    struct open_how how = {0};
    how.flags = (unsigned long long)flags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH | resolve;
    return (int)syscall(SYS_openat2, directory, path, &how, sizeof how);
#else
    (void)directory; (void)path; (void)flags; (void)resolve;
    errno = ENOSYS;
    return -1;
#endif
}

/// `haneke_openat2_beneath_resolving` with no flag added.
static inline int haneke_openat2_beneath(int directory, const char *path, int flags) {
    return haneke_openat2_beneath_resolving(directory, path, flags, 0);
}

/// `haneke_openat2_beneath` that only looks the path up in the kernel's caches
/// (`RESOLVE_CACHED`, Linux 5.12): -1 with `errno` `EAGAIN` when the lookup would have to read
/// the disk, so that a caller that must not block can go elsewhere to open it.
/// The corresponding C function is `openat2`.
static inline int haneke_openat2_beneath_cached(int directory, const char *path, int flags) {
    return haneke_openat2_beneath_resolving(directory, path, flags, 0x20);   // RESOLVE_CACHED
}

/// The C library's `preadv2`, which it declares only under `_GNU_SOURCE`.
extern ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags);

/// Reads up to `count` bytes at `offset` only from the page cache (`RWF_NOWAIT`, Linux 4.14 for
/// buffered reads): the bytes read (fewer when the next page is not cached), 0 at the end of the
/// file, or -1 with `errno` `EAGAIN` when the first page is not cached (`EOPNOTSUPP` where the file
/// system cannot tell).
/// The corresponding C function is `preadv2`.
static inline long haneke_pread_nowait(int descriptor, void *buffer, unsigned long count, long long offset) {
#if defined(__linux__)
    struct iovec vector = { buffer, count };
    return (long)preadv2(descriptor, &vector, 1, (off_t)offset, 0x00000008);   // RWF_NOWAIT
#else
    (void)descriptor; (void)buffer; (void)count; (void)offset;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

/// Copies `count` bytes from `source` at `*source_offset` to `destination` at
/// `*destination_offset` in the kernel (sharing the blocks on file systems that can), advancing
/// both offsets; returns the bytes copied, 0 at the end of `source`, or -1 with `errno` set
/// (`ENOSYS` before Linux 4.5, `EXDEV` across file systems before 5.3). The C library declares it
/// only under `_GNU_SOURCE`, which Swift's Glibc module does not define.
/// The corresponding C function is `copy_file_range`.
static inline long haneke_copy_file_range(int source, long long *source_offset, int destination, long long *destination_offset, unsigned long count) {
#if defined(__linux__) && defined(SYS_copy_file_range)
    return syscall(SYS_copy_file_range, source, source_offset, destination, destination_offset, count, 0U);
#else
    (void)source; (void)source_offset; (void)destination; (void)destination_offset; (void)count;
    errno = ENOSYS;
    return -1;
#endif
}

/// The 64-bit counter at `index` of the array at `base`, read atomically with acquire ordering:
/// what another process added before is seen, with what it wrote before adding.
/// The corresponding C function is `__atomic_load_n`.
static inline uint64_t haneke_atomic_load_u64(const void *base, long index) {
    return __atomic_load_n((const uint64_t *)base + index, __ATOMIC_ACQUIRE);
}

/// Adds `amount` to the 64-bit counter at `index` of the array at `base` atomically (acquire and
/// release ordering), and returns the value it had before.
/// The corresponding C function is `__atomic_fetch_add`.
static inline uint64_t haneke_atomic_add_u64(void *base, long index, uint64_t amount) {
    return __atomic_fetch_add((uint64_t *)base + index, amount, __ATOMIC_ACQ_REL);
}

#endif
