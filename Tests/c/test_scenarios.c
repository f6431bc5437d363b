/* The one-API scenario through the C API: runs Tests/scenarios/one_api.scenario
 * step by step and compares the transcript with one_api.expected, which the Swift and Python
 * runners must match too (Tests/scenarios/README.md describes both files).
 *
 *   test_scenarios            run and compare (a difference prints both transcripts)
 *   test_scenarios --print    print the transcript only */
#include "cc_test.h"

#include <stdarg.h>
#include <unistd.h>

#define SCENARIO_DIR CC_REPO_DIR "/Tests/scenarios"

/* A growing string. */
typedef struct { char *data; size_t len, cap; } buffer;

static void put(buffer *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data) { perror("realloc"); exit(2); }
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void puts_(buffer *b, const char *s) { put(b, s, strlen(s)); }

static void putf(buffer *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(b, tmp, n < 0 ? 0 : (size_t)n);
}

/* Writes `json` with the value of every "key": in `keys` replaced by "*" (ids and times that
 * differ from run to run), unless it is null. Values are strings, numbers or null here. */
static void put_masked(buffer *b, const char *json, const char *const *keys) {
    const char *p = json;
    while (*p) {
        int masked = 0;
        for (const char *const *k = keys; *k; k++) {
            size_t n = strlen(*k);
            if (p[0] == '"' && strncmp(p + 1, *k, n) == 0 && p[n + 1] == '"' && p[n + 2] == ':'
                && strncmp(p + n + 3, "null", 4) != 0) {
                put(b, p, n + 3);
                p += n + 3;
                if (*p == '"') {
                    p++;
                    while (*p && *p != '"') p += (*p == '\\' && p[1]) ? 2 : 1;
                    if (*p) p++;
                } else {
                    while (*p && *p != ',' && *p != '}' && *p != ']') p++;
                }
                puts_(b, "\"*\"");
                masked = 1;
                break;
            }
        }
        if (!masked) put(b, p++, 1);
    }
}

static const char *const masked_keys[] = {"eventId", "time", NULL};
static const char *const masked_event_keys[] = {"eventId", "time", "id", NULL};

/* "@REPO" and "@TMP" in a step's argument. */
static void substitute(buffer *out, const char *arg, const char *tmp) {
    for (const char *p = arg; *p;) {
        if (strncmp(p, "@REPO", 5) == 0) { puts_(out, CC_REPO_DIR); p += 5; }
        else if (strncmp(p, "@TMP", 4) == 0) { puts_(out, tmp); p += 4; }
        else put(out, p++, 1);
    }
}

/* The text of the value of `key` at the top level of the JSON object `json` (its length in
 * *len), or NULL when there is none. Keys inside nested objects (the last refresh's summary
 * also has "counts") are not top-level ones. */
static const char *top_value(const char *json, const char *key, size_t *len) {
    size_t klen = strlen(key);
    int depth = 0;
    for (const char *p = json; *p; p++) {
        if (*p == '"') {
            const char *s = p + 1, *e = s;
            while (*e && *e != '"') e += (*e == '\\' && e[1]) ? 2 : 1;
            if (!*e) return NULL;
            if (depth == 1 && (size_t)(e - s) == klen && strncmp(s, key, klen) == 0 && e[1] == ':') {
                const char *v = e + 2, *q = v;
                int d = 0;
                for (; *q; q++) {
                    if (*q == '"') {
                        q++;
                        while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
                        if (!*q) break;
                    } else if (*q == '{' || *q == '[') d++;
                    else if (*q == '}' || *q == ']') { if (d == 0) break; d--; }
                    else if (*q == ',' && d == 0) break;
                }
                *len = (size_t)(q - v);
                return v;
            }
            p = e;
        } else if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') depth--;
    }
    return NULL;
}

/* The stable fields of the diagnostics (README.md, "The transcript"), in their order, with
 * the library's bytes for each value; lastSuccessfulRefreshAt is "*" unless null. */
static void put_diagnostics(buffer *b, const char *json) {
    static const char *const keys[] = {"userId", "closed", "storedCards", "counts", "pendingEvents",
                                       "lastSuccessfulRefreshAt", NULL};
    puts_(b, "{");
    for (const char *const *k = keys; *k; k++) {
        size_t n = 0;
        const char *v = top_value(json, *k, &n);
        putf(b, "%s\"%s\":", k == keys ? "" : ",", *k);
        if (!v) puts_(b, "\"missing\"");
        else if (strcmp(*k, "lastSuccessfulRefreshAt") == 0 && !(n == 4 && strncmp(v, "null", 4) == 0)) puts_(b, "\"*\"");
        else put(b, v, n);
    }
    puts_(b, "}");
}

/* The export document (export_user) with its varying values written "*" (README.md, "The
 * transcript"): the top-level "exported_at", and "id" and "time" of each pending event (inside
 * the top-level "pending_events" only: the cards have ids too); "eventId" and "time" as
 * everywhere. */
static void put_export(buffer *b, const char *json) {
    static const char *const event_keys[] = {"eventId", "time", "id", NULL};
    size_t at_len = 0, events_len = 0;
    const char *at = top_value(json, "exported_at", &at_len);
    const char *events = top_value(json, "pending_events", &events_len);
    if (!at || !events || at > events) { put_masked(b, json, masked_keys); return; }
    buffer part = {0};
    put(&part, json, (size_t)(at - json));
    put_masked(b, part.data, masked_keys);
    puts_(b, strncmp(at, "null", 4) == 0 ? "null" : "\"*\"");
    part.len = 0;
    put(&part, at + at_len, (size_t)(events - (at + at_len)));
    put_masked(b, part.data, masked_keys);
    part.len = 0;
    put(&part, events, events_len);
    put_masked(b, part.data, event_keys);
    put_masked(b, events + events_len, masked_keys);
    free(part.data);
}

/* Writes `s` with every occurrence of the temporary directory `tmp` written "@TMP". */
static void put_untmp(buffer *b, const char *s, const char *tmp) {
    size_t n = strlen(tmp);
    for (const char *p = s; *p;) {
        if (n && strncmp(p, tmp, n) == 0) { puts_(b, "@TMP"); p += n; }
        else put(b, p++, 1);
    }
}

static void result_ok(buffer *t, const char *json, const char *const *keys) {
    puts_(t, "= ok");
    if (json) { puts_(t, " "); put_masked(t, json, keys); }
    puts_(t, "\n");
}

/* Whether the scenario closed the current controller (a `close` step since the last `open`). */
static int closed;
static const char *tmp_dir;

static void result_error(buffer *t, int rc) {
    /* A step on a closed controller: C says the handle no longer exists (CC_E_INVALID_HANDLE),
     * Swift and Python CC_E_CLOSED (docs/API.md); each runner writes its own code so. */
    if (closed && rc == CC_E_INVALID_HANDLE) { puts_(t, "= error (closed)\n"); return; }
    putf(t, "= error %s (%d): ", cc_status_name(rc), rc);
    put_untmp(t, cc_last_error_message(), tmp_dir);
    puts_(t, "\n");
}

static void run_step(buffer *t, cc_controller **c, const char *op, const char *arg, const char *tmp) {
    char *out = NULL;
    int rc;
    const char *filter = *arg ? arg : NULL;
    tmp_dir = tmp;
    if (strcmp(op, "open") == 0) {
        buffer config = {0};
        cc_controller *opened = NULL;
        substitute(&config, arg, tmp);
        rc = cc_controller_open(&opened, config.data);
        free(config.data);
        if (rc == CC_OK) { *c = opened; closed = 0; result_ok(t, NULL, masked_keys); } else result_error(t, rc);
        return;
    }
    if (strcmp(op, "refresh") == 0) rc = cc_controller_refresh(&out, *c, 0);
    else if (strcmp(op, "apply") == 0) rc = cc_controller_apply(&out, *c, arg);
    else if (strcmp(op, "cards") == 0) rc = cc_controller_feed(&out, *c, filter);
    else if (strcmp(op, "card") == 0) rc = cc_controller_card(&out, *c, arg);
    else if (strcmp(op, "counts") == 0) {
        int64_t total = 0, unviewed = 0, unread = 0;
        rc = cc_controller_all_counts(&total, &unviewed, &unread, *c, filter);
        if (rc == CC_OK) {
            char json[128];
            snprintf(json, sizeof json, "{\"total\":%lld,\"unviewed\":%lld,\"unread\":%lld}", (long long)total,
                     (long long)unviewed, (long long)unread);
            result_ok(t, json, masked_keys);
            return;
        }
    } else if (strcmp(op, "log") == 0) {
        char action[64] = {0};
        const char *space = strchr(arg, ' ');
        size_t n = space ? (size_t)(space - arg) : strlen(arg);
        if (n >= sizeof action) n = sizeof action - 1;
        memcpy(action, arg, n);
        rc = cc_controller_log(&out, *c, action, space ? space + 1 : NULL);
        /* A refusal is a result in every language: C says CC_E_REFUSED and gives it too. */
        if (rc == CC_E_REFUSED && out) rc = CC_OK;
    } else if (strcmp(op, "pending_events") == 0) {
        rc = cc_controller_pending_events_json(&out, *c, 0);
        if (rc == CC_OK) { result_ok(t, out, masked_event_keys); cc_string_free(out); return; }
    } else if (strcmp(op, "flush_events") == 0) rc = cc_controller_flush_events(&out, *c, 0);
    else if (strcmp(op, "change_user") == 0) rc = cc_controller_change_user(*c, arg);
    else if (strcmp(op, "user") == 0) {
        rc = cc_controller_user(&out, *c);
        if (rc == CC_OK) {
            buffer quoted = {0};
            putf(&quoted, "\"%s\"", out); /* user ids of the scenario need no escaping */
            result_ok(t, quoted.data, masked_keys);
            free(quoted.data);
            cc_string_free(out);
            return;
        }
    } else if (strcmp(op, "mark_read") == 0 || strcmp(op, "mark_unread") == 0) {
        int changed = 0;
        rc = cc_controller_mark_read(&changed, *c, arg, strcmp(op, "mark_read") == 0);
        if (rc == CC_OK) { result_ok(t, changed ? "{\"changed\":true}" : "{\"changed\":false}", masked_keys); return; }
    } else if (strcmp(op, "mark_all_read") == 0) {
        int64_t marked = 0;
        rc = cc_controller_mark_all_read(&marked, *c, filter);
        if (rc == CC_OK) {
            char json[64];
            snprintf(json, sizeof json, "{\"marked\":%lld}", (long long)marked);
            result_ok(t, json, masked_keys);
            return;
        }
    } else if (strcmp(op, "diagnostics") == 0) {
        rc = cc_controller_diagnostics(&out, *c);
        if (rc == CC_OK) {
            buffer d = {0};
            put_diagnostics(&d, out);
            result_ok(t, d.data, masked_keys);
            free(d.data);
            cc_string_free(out);
            return;
        }
    } else if (strcmp(op, "export_user") == 0) {
        rc = cc_controller_export_user(&out, *c, *arg ? arg : NULL);
        if (rc == CC_OK) {
            buffer d = {0};
            put_export(&d, out);
            result_ok(t, d.data, masked_keys);
            free(d.data);
            cc_string_free(out);
            return;
        }
    } else if (strcmp(op, "forget_user") == 0) {
        /* USER|- flush|discard ("-": the current user); the configuration's timeout. */
        char user[128] = {0};
        const char *space = strchr(arg, ' ');
        size_t n = space ? (size_t)(space - arg) : strlen(arg);
        if (n >= sizeof user) n = sizeof user - 1;
        memcpy(user, arg, n);
        const char *pending = space ? space + 1 : "";
        int mode = strcmp(pending, "discard") == 0 ? CC_PENDING_DISCARD : CC_PENDING_FLUSH;
        rc = cc_controller_forget_user(&out, *c, strcmp(user, "-") == 0 ? NULL : user, mode, 0);
    } else if (strcmp(op, "close") == 0) {
        rc = cc_controller_close(*c);
        if (rc == CC_OK) closed = 1;
    }
    else { fprintf(stderr, "unknown step %s\n", op); exit(2); }
    if (rc == CC_OK) result_ok(t, out, masked_keys); else result_error(t, rc);
    cc_string_free(out);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    buffer b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) put(&b, chunk, n);
    fclose(f);
    if (!b.data) put(&b, "", 0);
    return b.data;
}

int main(int argc, char **argv) {
    int print_only = argc > 1 && strcmp(argv[1], "--print") == 0;
    char tmp[256];
    cc_test_make_dir(tmp, sizeof tmp, "cc-scenario");
    char *scenario = read_file(SCENARIO_DIR "/one_api.scenario");
    if (!scenario) { perror(SCENARIO_DIR "/one_api.scenario"); return 2; }
    buffer t = {0};
    cc_controller *c = NULL;
    for (char *line = strtok(scenario, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == '\0') continue;
        char *space = strchr(line, ' ');
        const char *arg = "";
        if (space) { *space = '\0'; arg = space + 1; }
        putf(&t, "> %s%s%s\n", line, *arg ? " " : "", arg);
        run_step(&t, &c, line, arg, tmp);
    }
    if (c && !closed) (void)cc_controller_close(c);
    CHECK(cc_test_remove_dir(tmp));
    if (print_only) { fputs(t.data, stdout); return 0; }
    char *expected = read_file(SCENARIO_DIR "/one_api.expected");
    CHECK(expected != NULL);
    CHECK(expected && strcmp(expected, t.data) == 0);
    if (expected && strcmp(expected, t.data) != 0) {
        fprintf(stderr, "the C transcript differs from one_api.expected:\n%s", t.data);
    }
    free(expected);
    free(scenario);
    free(t.data);
    return cc_test_finish("test_scenarios");
}
