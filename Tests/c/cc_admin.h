/* The reference server's admin API for the C tests that run under Tests/c/with_server.py:
 * one call through the CC_ADMIN command the wrapper provides. */
#ifndef CC_ADMIN_H
#define CC_ADMIN_H

#include <stdio.h>
#include <stdlib.h>

/* One admin call (METHOD PATH JSON); the answer goes to `out` when not NULL. A failed call ends
 * the test program: its later checks would mean nothing. */
static inline void admin(const char *method, const char *path, const char *json, char *out, size_t out_len) {
    char cmd[4096];                 /* the image tests post cards with long URLs */
    snprintf(cmd, sizeof cmd, "%s %s %s '%s'", getenv("CC_ADMIN"), method, path, json ? json : "");
    FILE *p = popen(cmd, "r");
    if (!p) { perror("popen"); exit(2); }
    size_t n = fread(out ? out : cmd, 1, out ? out_len - 1 : sizeof cmd - 1, p);
    if (out) out[n] = 0;
    if (pclose(p) != 0) { fprintf(stderr, "admin call failed: %s\n", cmd); exit(2); }
}

#endif
