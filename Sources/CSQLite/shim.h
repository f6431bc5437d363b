// The system's SQLite (Debian: libsqlite3-dev). A system-library target so that no SQLite
// source is vendored: the library links the distribution's libsqlite3.so.0.
#include <sqlite3.h>
