// Every test process, and every child it starts, gets a cache home of its own: before any test
// runs, XDG_CACHE_HOME is set to a new folder in the temporary folder, so that what the tests create
// at the default location (Shared.dataCache, Cache(name:) without a directory) never reaches the
// user's real ~/.cache; the folder is removed when the process exits.
//
// This runs in a constructor, before Swift starts a thread: setenv is safe only while the process
// has one thread.

#define _GNU_SOURCE
#include "PrivateCacheHome.h"

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char folder[PATH_MAX];
static pid_t owner;

const char *haneke_private_cache_home(void) {
    return folder[0] ? folder : NULL;
}

static int remove_one(const char *path, const struct stat *info, int type, struct FTW *where) {
    (void)info; (void)type; (void)where;
    remove(path);
    return 0;
}

// Removes the folder and what the tests left in it; only in the process that made it (a child
// started with fork inherits the handler and must leave the folder to its parent).
static void remove_folder(void) {
    if (folder[0] && getpid() == owner) {
        nftw(folder, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    }
}

__attribute__((constructor)) static void make_private_cache_home(void) {
    const char *temporary = getenv("TMPDIR");
    if (temporary == NULL || temporary[0] != '/') temporary = "/tmp";
    if (snprintf(folder, sizeof folder, "%s/haneke-tests-cache.XXXXXX", temporary) >= (int)sizeof folder
        || mkdtemp(folder) == NULL
        || setenv("XDG_CACHE_HOME", folder, 1) != 0) {
        perror("haneke tests: cannot make a private XDG_CACHE_HOME");
        _exit(1);
    }
    owner = getpid();
    atexit(remove_folder);
}
