// The system's SQLite (Debian: libsqlite3-dev). A system-library target so that no SQLite
// source is vendored. The shipped library links SQLite in from the system's libsqlite3.a
// (CMake option CC_STATIC_SQLITE, on by default); SwiftPM builds link libsqlite3.so.0.
#include <sqlite3.h>

// sqlite3_db_config is variadic, which Swift cannot call: one wrapper per option used.
// NO_CKPT_ON_CLOSE: closing the last connection leaves the WAL as it is instead of writing
// it into the database file (used while a store is not yet known to be ours).
static inline int cc_sqlite_no_checkpoint_on_close(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, on, (int *)0);
}

// sqlite3_config is variadic, which Swift cannot call: the one setting the library makes.
// Allocation statistics take a global mutex on every SQLite allocation; they are off.
static inline int cc_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
