/* sqlite_floor: the least a cold start on a SQLite store can cost, for the cold-start row of
 * `make bench`.
 *
 *   sqlite_floor DIR USER
 *
 * Opens DIR/contentcards.sqlite with the same SQLite the library links (the system's static
 * archive when the library links it in, as it does by default), runs the library's own query
 * for a user's cards, and copies every card's stored body into one buffer, comma-separated:
 * what an open to the first feed has to do at the least, with nothing checked, decoded,
 * indexed or formatted. Prints one JSON line: {"cards": N, "bytes": M}.
 *
 * Why it is a row: the goal for a cold start is a multiple of an empty process, and this
 * process is what SQLite alone adds to one. A library that reads its cards from SQLite can
 * come near this program, not under it. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: sqlite_floor DIR USER\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/contentcards.sqlite", argv[1]);
    sqlite3 *db = NULL;
    sqlite3_stmt *cards = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT id, body, checksum FROM cards WHERE user_id = ?", -1, &cards, NULL) != SQLITE_OK) {
        fprintf(stderr, "sqlite_floor: %s: %s\n", path, db ? sqlite3_errmsg(db) : "out of memory");
        return 1;
    }
    sqlite3_bind_text(cards, 1, argv[2], -1, SQLITE_STATIC);
    size_t capacity = 1 << 20, length = 1;
    char *feed = malloc(capacity);
    if (!feed) return 1;
    feed[0] = '[';
    long n = 0;
    int rc;
    while ((rc = sqlite3_step(cards)) == SQLITE_ROW) {
        const void *body = sqlite3_column_blob(cards, 1);
        size_t bytes = (size_t)sqlite3_column_bytes(cards, 1);
        if (length + bytes + 2 > capacity) {
            while (length + bytes + 2 > capacity) capacity *= 2;
            char *grown = realloc(feed, capacity);
            if (!grown) return 1;
            feed = grown;
        }
        if (bytes) memcpy(feed + length, body, bytes);
        length += bytes;
        feed[length++] = ',';
        n++;
    }
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "sqlite_floor: %s\n", sqlite3_errmsg(db));
        return 1;
    }
    feed[n ? length - 1 : length++] = ']';
    sqlite3_finalize(cards);
    sqlite3_close(db);
    printf("{\"cards\": %ld, \"bytes\": %zu}\n", n, length);
    free(feed);
    return 0;
}
