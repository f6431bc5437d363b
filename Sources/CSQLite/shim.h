// The system's SQLite (Debian: libsqlite3-dev). A system-library target so that no SQLite
// source is vendored: the library links the distribution's libsqlite3.so.0.
#include <sqlite3.h>

// sqlite3_config is variadic, which Swift cannot call: the one setting the library makes.
// Allocation statistics take a global mutex on every SQLite allocation; they are off.
static inline int cc_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
