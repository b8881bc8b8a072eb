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
