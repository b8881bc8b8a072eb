// The system SQLite (Debian: libsqlite3-dev) and xxHash (libxxhash-dev), for SQLiteStore.
#include <sqlite3.h>
#include <xxhash.h>

// sqlite3_db_config is variadic, which Swift cannot call: one wrapper per option used.

/// Turns on SQLite's defensive mode: no writing to the schema by hand, no corrupting the file
/// through PRAGMA writable_schema or the like.
static inline int haneke_sqlite_defensive(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
}

/// SQLITE_TRANSIENT (a cast of -1 to a function pointer, which Swift does not import): SQLite
/// copies what is bound before the call returns.
static inline sqlite3_destructor_type haneke_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// Stores the number of frames in the write-ahead log after each commit of this connection in
/// `*frames` (SQLite's wal hook; it replaces the automatic checkpoint, which the caller then runs
/// itself). `frames` must outlive the connection.
static int haneke_sqlite_record_log_frames(void *frames, sqlite3 *db, const char *schema, int count) {
    (void)db;
    (void)schema;
    *(int *)frames = count;
    return SQLITE_OK;
}

static inline void haneke_sqlite_count_log_frames(sqlite3 *db, int *frames) {
    sqlite3_wal_hook(db, haneke_sqlite_record_log_frames, frames);
}

#include <time.h>

/// SQLite's progress handler for a connection with a deadline: nonzero (interrupting the
/// statement with SQLITE_INTERRUPT) once CLOCK_MONOTONIC passes `*deadline` nanoseconds.
static int haneke_sqlite_past_deadline(void *deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec > *(long long *)deadline;
}

/// Interrupts any statement of `db` still running at `*deadline` (nanoseconds of CLOCK_MONOTONIC),
/// checked every 10,000 virtual-machine steps. `deadline` must outlive the connection.
static inline void haneke_sqlite_set_deadline(sqlite3 *db, long long *deadline) {
    sqlite3_progress_handler(db, 10000, haneke_sqlite_past_deadline, deadline);
}

#include <string.h>

/// The full path of a database or companion file opened through the "haneke-folder" VFS: the name
/// as given. Names given to that VFS are `/proc/self/fd/<n>/<file>`, relative to a folder held open
/// (descriptor `n`); the unix VFS would resolve the descriptor's link to the folder's path, and
/// then open, delete and test files through that path, which another user able to rename one of
/// its parents could redirect after the folder was checked.
static int haneke_sqlite_folder_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    size_t length = strlen(name);
    if (length + 1 > (size_t)size) return SQLITE_CANTOPEN;
    memcpy(out, name, length + 1);
    return SQLITE_OK;
}

#include <pthread.h>

/// Registers "haneke-folder": the unix VFS (file locking, shared memory, O_NOFOLLOW on every open)
/// with names kept as given, so that every open, delete and access of a database, its log and its
/// log's index resolves from a folder descriptor, never from a path. Registered once per process,
/// under a lock (stores may open on several threads at once); returns SQLite's result. The state
/// is in statics of this function: a header's file-scope statics are not emitted for Swift.
static inline int haneke_sqlite_register_folder_vfs(void) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static sqlite3_vfs vfs;
    static int registered = 0;
    static int status = SQLITE_ERROR;
    pthread_mutex_lock(&lock);
    if (!registered) {
        registered = 1;
        sqlite3_vfs *unix_vfs = sqlite3_vfs_find("unix");
        if (unix_vfs != 0) {
            vfs = *unix_vfs;
            vfs.zName = "haneke-folder";
            vfs.pNext = 0;
            vfs.xFullPathname = haneke_sqlite_folder_full_pathname;
            status = sqlite3_vfs_register(&vfs, 0);
        }
    }
    int result = status;
    pthread_mutex_unlock(&lock);
    return result;
}
