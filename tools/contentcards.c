/* SPDX-License-Identifier: Apache-2.0
 * Copyright 2026 The contentcards authors
 *
 * contentcards: the command-line tool of libcontentcards (docs/CLI.md). It uses the library
 * through its public header only. It is the only implementation of the tool: the Python
 * package ships this program (contentcards/bin/contentcards) and its `contentcards` script and
 * `python -m contentcards` exec it (bindings/python/contentcards/cli.py).
 *
 * Exit codes: 0 done; 1 the operation failed (the status name and message on stderr, and with
 * --json an {"error":...} object on stdout) or its output could not be written; 2 a usage
 * error; 141 the reader of the output went away (a closed pipe). */
#include <contentcards.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unicode_width.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_PIPE_CLOSED 141 /* 128 + SIGPIPE: what a shell shows for a filter its reader left */

/* The largest values of the numeric options (docs/CLI.md, "Numbers"). */
#define MAX_LIMIT LLONG_MAX
#define MAX_TIMEOUT_SECONDS 31536000 /* a year: the library's bound of "timeoutSeconds" */

static const char USAGE[] =
    "usage: contentcards [--json] [--log-level LEVEL] COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  validate PAYLOAD_FILE [--user U]      parse a payload: the cards accepted and those left out\n"
    "  feed --store DIR [--user U] [--class-type T]...\n"
    "                                        the visible feed and its counts by class type\n"
    "  counts --store DIR [--user U] [--class-type T]...\n"
    "                                        the badge counts, in total and by class type\n"
    "  events list --store DIR [--limit N]   the events waiting in the outbox\n"
    "  events flush --store DIR --events-url URL [--api-key KEY] [--timeout S]\n"
    "                                        deliver the pending events now\n"
    "  refresh --source FILE_OR_URL [--store DIR] [--user U] [--api-key KEY] [--timeout S]\n"
    "                                        refresh from a payload file or a server\n"
    "  diagnostics [--store DIR] [--user U]  the controller's diagnostics (JSON)\n"
    "\n"
    "Options:\n"
    "  --json               machine-readable output (one JSON document on stdout)\n"
    "  --log-level LEVEL    print the library's log at LEVEL or above on stderr\n"
    "                       (debug, info, warning, error)\n"
    "  --version            print the library's version\n"
    "  -h, --help           print this help\n"
    "  N, S                 numbers: the digits 0-9 only, and one '.' in seconds (0.5)\n"
    "\n"
    "Exit codes: 0 done, 1 the operation failed or its output could not be written,\n"
    "2 usage error, 141 the reader of the output went away. See docs/CLI.md.\n";

/* ---- a growing string ---------------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} buf;

static void buf_add(buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data) {
            fputs("contentcards: out of memory\n", stderr);
            exit(EXIT_FAILED);
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

static void buf_str(buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_fmt(buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string literal, escaped as Python's json.dumps(ensure_ascii=False) does. */
static void buf_json(buf *b, const char *s) {
    buf_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': buf_add(b, "\\\"", 2); break;
        case '\\': buf_add(b, "\\\\", 2); break;
        case '\n': buf_add(b, "\\n", 2); break;
        case '\r': buf_add(b, "\\r", 2); break;
        case '\t': buf_add(b, "\\t", 2); break;
        case '\b': buf_add(b, "\\b", 2); break;
        case '\f': buf_add(b, "\\f", 2); break;
        default:
            if (*p < 0x20) buf_fmt(b, "\\u%04x", *p);
            else buf_add(b, (const char *)p, 1);
        }
    }
    buf_add(b, "\"", 1);
}

/* ---- text for people ------------------------------------------------------------------------ */

/* The code point of the UTF-8 sequence at `p` and its length in `*len`, or -1 (with *len 1)
 * when `p` does not start one: only the shortest form, no surrogates, at most U+10FFFF. */
static long utf8_decode(const unsigned char *p, size_t *len) {
    *len = 1;
    if (p[0] < 0x80) return p[0];
    size_t n = p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : p[0] >= 0xE0 && p[0] <= 0xEF ? 3 : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
    if (n == 0) return -1;
    long cp = p[0] & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return -1; /* also stops at the terminating NUL */
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *len = n;
    return cp;
}

static int valid_utf8(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n;
        if (utf8_decode(p, &n) < 0) return 0;
        p += n;
    }
    return 1;
}

/* `s` as it is shown to people, appended to `b`: control characters (C0, DEL, C1, U+2028 and
 * U+2029) written out as \u001b, as the library writes them in its messages (docs/BEHAVIOUR.md,
 * "Messages"), and a byte that is not UTF-8 as \xff, so that no text from a server or the
 * command line reaches the terminal as a control sequence. Returns the terminal cells the text
 * takes (tools/unicode_width.h). */
static size_t buf_text(buf *b, const char *s) {
    size_t cells = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n;
        long cp = utf8_decode(p, &n);
        if (cp < 0) {
            buf_fmt(b, "\\x%02x", *p);
            cells += 4;
        } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029) {
            buf_fmt(b, "\\u%04lx", (unsigned long)cp);
            cells += 6;
        } else {
            buf_add(b, (const char *)p, n);
            cells += (size_t)cc_code_point_width((uint32_t)cp);
        }
        p += n;
    }
    return cells;
}

/* `s` shown to people (buf_text), in one of a few buffers that live until the next calls: for
 * the arguments of a message. */
static const char *shown(const char *s) {
    static buf slots[4];
    static int next;
    buf *b = &slots[next++ % 4];
    b->len = 0;
    buf_add(b, "", 0);
    buf_text(b, s ? s : "");
    return b->data;
}

/* ---- stdout ------------------------------------------------------------------------------------ */

/* The first error writing stdout (EPIPE: the reader went away); nothing more is written after
 * it. main() reports it (docs/CLI.md, "Exit codes"). */
static int output_errno = 0;

static void out(const char *s, size_t n) {
    if (output_errno || n == 0) return;
    errno = 0;
    if (fwrite(s, 1, n, stdout) != n) output_errno = errno ? errno : EIO;
}

static void out_str(const char *s) { out(s, strlen(s)); }

static void out_line(const char *s) {
    out_str(s);
    out("\n", 1);
}

static void out_fmt(const char *fmt, ...) {
    buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        b.data = malloc((size_t)n + 1);
        if (!b.data) {
            fputs("contentcards: out of memory\n", stderr);
            exit(EXIT_FAILED);
        }
        va_start(ap, fmt);
        vsnprintf(b.data, (size_t)n + 1, fmt, ap);
        va_end(ap);
        out(b.data, (size_t)n);
    }
    free(b.data);
}

/* `s` shown to people (buf_text), then spaces up to `width` terminal cells. */
static void out_cell(const char *s, size_t width) {
    buf b = {0};
    buf_add(&b, "", 0);
    size_t cells = buf_text(&b, s ? s : "");
    while (cells++ < width) buf_add(&b, " ", 1);
    out(b.data, b.len);
    free(b.data);
}

/* A column of a table: `s` padded to `width` terminal cells, then the space between columns
 * (a longer text pushes the rest of its line to the right). */
static void out_column(const char *s, size_t width) {
    out_cell(s, width);
    out(" ", 1);
}

/* The end of the output: stdout flushed and closed, and what went wrong writing it. Returns the
 * exit status: `rc`, or when the output was lost and `rc` is 0, 141 for a closed pipe (quietly:
 * the reader chose to stop) and 1 for any other error (which stderr names in any case). */
static int finish_output(int rc) {
    errno = 0;
    if (fflush(stdout) != 0 && !output_errno) output_errno = errno ? errno : EIO;
    if (ferror(stdout) && !output_errno) output_errno = EIO;
    errno = 0;
    if (fclose(stdout) != 0 && !output_errno) output_errno = errno ? errno : EIO;
    if (!output_errno) return rc;
    if (output_errno == EPIPE) return rc ? rc : EXIT_PIPE_CLOSED;
    fprintf(stderr, "contentcards: cannot write the output: %s\n", strerror(output_errno));
    return rc ? rc : EXIT_FAILED;
}

/* ---- reading the library's JSON (compact, well-formed: it is the library's own) ------------- */

static const char *skip_value(const char *p) {
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++)
            if (*p == '\\' && p[1]) p++;
        return *p ? p + 1 : p;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; *p; p++) {
            if (*p == '"') { p = skip_value(p) - 1; continue; }
            if (*p == '{' || *p == '[') depth++;
            if (*p == '}' || *p == ']') {
                if (--depth == 0) return p + 1;
            }
        }
        return p;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']') p++;
    return p;
}

/* The value of `key` in the object at `obj` (top level only), or NULL. */
static const char *find_key(const char *obj, const char *key) {
    size_t n = strlen(key);
    if (*obj != '{') return NULL;
    const char *p = obj + 1;
    while (*p == '"') {
        const char *name = p + 1;
        const char *end = skip_value(p);
        p = end + 1; /* past ':' */
        if ((size_t)(end - 1 - name) == n && memcmp(name, key, n) == 0) return p;
        p = skip_value(p);
        if (*p == ',') p++;
    }
    return NULL;
}

static long long get_int(const char *obj, const char *key) {
    const char *v = find_key(obj, key);
    return v ? strtoll(v, NULL, 10) : 0;
}

/* A JSON string value decoded into `out` (NULL for null). */
static int get_string(buf *out, const char *v) {
    out->len = 0;
    buf_add(out, "", 0);
    if (!v || *v != '"') return 0;
    for (const char *p = v + 1; *p && *p != '"'; p++) {
        if (*p != '\\') { buf_add(out, p, 1); continue; }
        p++;
        switch (*p) {
        case 'n': buf_add(out, "\n", 1); break;
        case 't': buf_add(out, "\t", 1); break;
        case 'r': buf_add(out, "\r", 1); break;
        case 'b': buf_add(out, "\b", 1); break;
        case 'f': buf_add(out, "\f", 1); break;
        case 'u': {
            unsigned long c = strtoul((char[]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
            p += 4;
            if (c == 0) { /* a C string cannot hold it: written out as text shows it (buf_text) */
                buf_str(out, "\\u0000");
                break;
            }
            if (c >= 0xD800 && c < 0xDC00 && p[1] == '\\' && p[2] == 'u') {
                unsigned long lo = strtoul((char[]){p[3], p[4], p[5], p[6], 0}, NULL, 16);
                c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            char u[4];
            size_t k;
            if (c < 0x80) { u[0] = (char)c; k = 1; }
            else if (c < 0x800) { u[0] = (char)(0xC0 | c >> 6); u[1] = (char)(0x80 | (c & 0x3F)); k = 2; }
            else if (c < 0x10000) { u[0] = (char)(0xE0 | c >> 12); u[1] = (char)(0x80 | ((c >> 6) & 0x3F)); u[2] = (char)(0x80 | (c & 0x3F)); k = 3; }
            else { u[0] = (char)(0xF0 | c >> 18); u[1] = (char)(0x80 | ((c >> 12) & 0x3F)); u[2] = (char)(0x80 | ((c >> 6) & 0x3F)); u[3] = (char)(0x80 | (c & 0x3F)); k = 4; }
            buf_add(out, u, k);
            break;
        }
        default: buf_add(out, p, 1);
        }
    }
    return 1;
}

/* ---- failures -------------------------------------------------------------------------------- */

static int json_output = 0;

/* A usage error: the message on stderr (its arguments given through shown()), exit 2. */
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("contentcards: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'contentcards --help'.\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

/* The failure of the last call: stderr, and the error object on stdout with --json. */
static int failed(int status) {
    const char *name = cc_status_name(status);
    const char *message = cc_last_error_message();
    fprintf(stderr, "contentcards: %s: %s\n", name, shown(message));
    if (json_output) {
        buf b = {0};
        buf_fmt(&b, "{\"error\":{\"code\":%d,\"name\":", status);
        buf_json(&b, name);
        buf_str(&b, ",\"message\":");
        buf_json(&b, message);
        buf_str(&b, "}}");
        out_line(b.data);
        free(b.data);
    }
    return EXIT_FAILED;
}

/* ---- options --------------------------------------------------------------------------------- */

typedef struct {
    const char *store, *user, *source, *events_url, *api_key, *log_level;
    const char *positional[3];
    int positional_count;
    const char *class_types[64];
    int class_type_count;
    double timeout;
    long long limit;
    int help, version;
} options;

static const char *const VALUE_OPTIONS[] = {"--store", "--user", "--class-type", "--source", "--events-url",
                                            "--api-key", "--timeout", "--limit", "--log-level", NULL};

/* The number grammar of every numeric option (docs/CLI.md, "Numbers"): the ASCII digits 0-9,
 * at least one; no sign, space, '_', hex, exponent or other script's digits. `n` bytes of `s`. */
static int all_digits(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* --limit: a whole number, 0 to MAX_LIMIT. */
static int parse_count(const char *name, const char *value, long long *out) {
    if (!all_digits(value, strlen(value)))
        return usage_error("%s needs a whole number >= 0 written with the digits 0-9, not '%s'", name, shown(value));
    unsigned long long n = 0;
    for (const char *p = value; *p; p++) {
        unsigned digit = (unsigned)(*p - '0');
        if (n > ((unsigned long long)MAX_LIMIT - digit) / 10)
            return usage_error("%s is at most %lld, not '%s'", name, (long long)MAX_LIMIT, shown(value));
        n = n * 10 + digit;
    }
    *out = (long long)n;
    return 0;
}

/* --timeout: seconds, digits with at most one '.' between digits (2, 0.5), more than 0 and at
 * most MAX_TIMEOUT_SECONDS: finite by its grammar (no "inf", "nan" or "1e999"). */
static int parse_seconds(const char *name, const char *value, double *out) {
    const char *dot = strchr(value, '.');
    size_t len = strlen(value);
    int ok = dot ? all_digits(value, (size_t)(dot - value)) && all_digits(dot + 1, len - (size_t)(dot - value) - 1)
                 : all_digits(value, len);
    if (!ok)
        return usage_error("%s needs a number of seconds > 0 written with the digits 0-9 and at most one '.' "
                           "(2, 0.5), not '%s'", name, shown(value));
    double seconds = strtod(value, NULL); /* the C locale's '.': the program never sets a locale */
    if (!(seconds > 0)) return usage_error("%s needs a number of seconds > 0, not '%s'", name, shown(value));
    if (seconds > MAX_TIMEOUT_SECONDS)
        return usage_error("%s is at most %d seconds (a year), not '%s'", name, MAX_TIMEOUT_SECONDS, shown(value));
    *out = seconds;
    return 0;
}

static int add_positional(options *o, const char *a) {
    if (!valid_utf8(a)) return usage_error("argument '%s' is not valid UTF-8 (arguments are UTF-8 text)", shown(a));
    if (o->positional_count == 3) return usage_error("unexpected argument '%s'", shown(a));
    o->positional[o->positional_count++] = a;
    return 0;
}

static int parse(options *o, int argc, char **argv) {
    int rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) { json_output = 1; continue; }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { o->help = 1; continue; }
        if (strcmp(a, "--version") == 0) { o->version = 1; continue; }
        if (strcmp(a, "--") == 0) {
            for (i++; i < argc; i++)
                if ((rc = add_positional(o, argv[i]))) return rc;
            break;
        }
        if (a[0] == '-' && a[1]) {
            const char *eq = strchr(a, '=');
            size_t n = eq ? (size_t)(eq - a) : strlen(a);
            const char *name = NULL;
            for (int k = 0; VALUE_OPTIONS[k]; k++)
                if (strlen(VALUE_OPTIONS[k]) == n && strncmp(VALUE_OPTIONS[k], a, n) == 0) name = VALUE_OPTIONS[k];
            if (!name) return usage_error("unknown option '%s'", shown(a));
            const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) return usage_error("option %s needs a value", name);
            if (!valid_utf8(value))
                return usage_error("the value of %s is not valid UTF-8: '%s' (arguments are UTF-8 text)", name, shown(value));
            if (strcmp(name, "--store") == 0) o->store = value;
            else if (strcmp(name, "--user") == 0) o->user = value;
            else if (strcmp(name, "--source") == 0) o->source = value;
            else if (strcmp(name, "--events-url") == 0) o->events_url = value;
            else if (strcmp(name, "--api-key") == 0) o->api_key = value;
            else if (strcmp(name, "--log-level") == 0) o->log_level = value;
            else if (strcmp(name, "--class-type") == 0) {
                if (o->class_type_count == 64) return usage_error("%s: at most 64 class types", name);
                o->class_types[o->class_type_count++] = value;
            } else if (strcmp(name, "--timeout") == 0) {
                if ((rc = parse_seconds(name, value, &o->timeout))) return rc;
            } else if (strcmp(name, "--limit") == 0) {
                if ((rc = parse_count(name, value, &o->limit))) return rc;
            }
            continue;
        }
        if ((rc = add_positional(o, a))) return rc;
    }
    return 0;
}

/* ---- the log handler (--log-level) ------------------------------------------------------------ */

static const char *level_name(int level) {
    return level >= CC_LOG_ERROR ? "error" : level >= CC_LOG_WARNING ? "warning" : level >= CC_LOG_INFO ? "info" : "debug";
}

/* On any thread of the library: one line each, written at once (stderr is unbuffered). */
static void log_to_stderr(void *userdata, int level, const char *message) {
    (void)userdata;
    buf b = {0};
    buf_fmt(&b, "contentcards: [%s] ", level_name(level));
    buf_text(&b, message ? message : "");
    buf_add(&b, "\n", 1);
    fputs(b.data, stderr);
    free(b.data);
}

/* ---- the controller ---------------------------------------------------------------------------- */

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* {"userId":U,"storagePath":DIR,"source":...,"events":...,...} from the options. */
static void endpoint(buf *b, const char *key, const char *where, const char *api_key) {
    buf_str(b, ",");
    buf_json(b, key);
    if (starts_with(where, "http://") || starts_with(where, "https://")) {
        buf_str(b, ":{\"url\":");
        buf_json(b, where);
        buf_str(b, ",\"apiKey\":");
        buf_json(b, api_key ? api_key : "");
        buf_str(b, "}");
    } else {
        buf_str(b, ":{\"file\":");
        buf_json(b, where);
        buf_str(b, "}");
    }
}

static int open_controller(cc_controller **c, const options *o, const char *source, const char *events) {
    buf b = {0};
    buf_str(&b, "{\"userId\":");
    buf_json(&b, o->user ? o->user : "");
    if (o->store) {
        buf_str(&b, ",\"storagePath\":");
        buf_json(&b, o->store);
    }
    if (source) endpoint(&b, "source", source, o->api_key);
    if (events) endpoint(&b, "events", events, o->api_key);
    /* One-off runs: no rate limit, no background delivery (flush delivers). */
    buf_str(&b, ",\"refreshTokens\":0,\"eventFlushIntervalSeconds\":0");
    if (o->timeout > 0) buf_fmt(&b, ",\"timeoutSeconds\":%.17g", o->timeout);
    buf_str(&b, "}");
    int status = cc_controller_open(c, b.data);
    free(b.data);
    return status;
}

static void print_left_out(const char *summary) {
    const char *p = find_key(summary, "leftOut");
    buf id = {0}, reason = {0};
    if (p && *p == '[') {
        for (p++; *p == '{'; ) {
            long long index = get_int(p, "index");
            int has_id = get_string(&id, find_key(p, "id"));
            get_string(&reason, find_key(p, "reason"));
            out_fmt("left out: card %lld", index);
            if (has_id) {
                out(" ", 1);
                out_cell(id.data, 0);
            }
            out(": ", 2);
            out_cell(reason.data, 0);
            out("\n", 1);
            p = skip_value(p);
            if (*p == ',') p++;
        }
    }
    free(id.data);
    free(reason.data);
}

/* ---- commands ------------------------------------------------------------------------------------ */

static int cmd_validate(const options *o) {
    if (o->positional_count != 2) return usage_error("%s", "validate needs one PAYLOAD_FILE");
    cc_controller *c = NULL;
    int status = open_controller(&c, o, o->positional[1], NULL);
    if (status != CC_OK) return failed(status);
    char *summary = NULL;
    status = cc_controller_refresh(&summary, c, 0);
    if (status != CC_OK) {
        int rc = failed(status);
        (void)cc_controller_close(c);
        return rc;
    }
    const char *left = find_key(summary, "leftOut");
    if (json_output) {
        out_fmt("{\"accepted\":%lld,\"leftOut\":%.*s}\n", get_int(summary, "added"),
                (int)(skip_value(left) - left), left);
    } else {
        const char *end = skip_value(left);
        int left_count = 0;
        for (const char *p = left + 1; p < end && *p == '{'; p = skip_value(p) + 1) left_count++;
        out_fmt("accepted %lld cards, left out %d\n", get_int(summary, "added"), left_count);
        print_left_out(summary);
    }
    cc_string_free(summary);
    (void)cc_controller_close(c);
    return 0;
}

typedef struct {
    char *class_type;
    long long total, unviewed;
} tally;

static int tally_compare(const void *a, const void *b) {
    return strcmp(((const tally *)a)->class_type, ((const tally *)b)->class_type);
}

static char *filter_json(const options *o) {
    if (o->class_type_count == 0) return NULL;
    buf b = {0};
    buf_str(&b, "[");
    for (int i = 0; i < o->class_type_count; i++) {
        if (i) buf_str(&b, ",");
        buf_json(&b, o->class_types[i]);
    }
    buf_str(&b, "]");
    return b.data;
}

/* The widths of the feed's columns, in terminal cells (docs/CLI.md, "Output"). */
enum { ID_CELLS = 24, CLASS_TYPE_CELLS = 16, TYPE_CELLS = 16, STATE_CELLS = 8 };

/* feed and counts: the filtered feed, its counts and its counts by class type. */
static int cmd_feed(const options *o, int with_cards) {
    if (!o->store) return usage_error("%s", "--store DIR is required");
    if (o->positional_count != 1) return usage_error("unexpected argument '%s'", shown(o->positional[1]));
    cc_controller *c = NULL;
    int status = open_controller(&c, o, NULL, NULL);
    if (status != CC_OK) return failed(status);
    char *filter = filter_json(o);
    char *cards = NULL;
    cc_snapshot *snap = NULL;
    tally *tallies = NULL;
    size_t n = 0, kinds = 0;
    long long total = 0, unviewed = 0;
    status = cc_controller_snapshot(&snap, c, filter);
    if (status == CC_OK && with_cards && json_output) status = cc_controller_feed(&cards, c, filter);
    if (status == CC_OK) status = cc_snapshot_count(&n, snap);
    if (status != CC_OK) goto done;
    tallies = calloc(n + 1, sizeof *tallies);
    if (!tallies) {
        fputs("contentcards: out of memory\n", stderr);
        exit(EXIT_FAILED);
    }
    if (with_cards && !json_output && n > 0) {
        out_column("ID", ID_CELLS);
        out_column("CLASS TYPE", CLASS_TYPE_CELLS);
        out_column("TYPE", TYPE_CELLS);
        out_column("STATE", STATE_CELLS);
        out_line("TITLE");
    }
    for (size_t i = 0; i < n && status == CC_OK; i++) {
        const char *id = NULL, *type = NULL, *class_type = NULL, *title = NULL, *description = NULL;
        int viewed = 0, control = 0, pinned = 0;
        status = cc_snapshot_string(&id, snap, i, "id");
        if (status == CC_OK) status = cc_snapshot_string(&type, snap, i, "type");
        if (status == CC_OK) status = cc_snapshot_string(&class_type, snap, i, "classType");
        if (status == CC_OK) status = cc_snapshot_string(&title, snap, i, "title");
        if (status == CC_OK) status = cc_snapshot_string(&description, snap, i, "cardDescription");
        if (status == CC_OK) status = cc_snapshot_bool(&viewed, snap, i, "viewed");
        if (status == CC_OK) status = cc_snapshot_bool(&control, snap, i, "isControl");
        if (status == CC_OK) status = cc_snapshot_bool(&pinned, snap, i, "pinned");
        if (status != CC_OK) break;
        const char *ct = class_type ? class_type : "";
        size_t k = 0;
        while (k < kinds && strcmp(tallies[k].class_type, ct) != 0) k++;
        if (k == kinds) {
            tallies[kinds].class_type = strdup(ct);
            if (!tallies[kinds++].class_type) {
                fputs("contentcards: out of memory\n", stderr);
                exit(EXIT_FAILED);
            }
        }
        tallies[k].total++;
        total++;
        if (!viewed && !control) { tallies[k].unviewed++; unviewed++; }
        if (with_cards && !json_output) {
            const char *state = control ? "control" : pinned ? (viewed ? "pinned" : "pinned*") : viewed ? "viewed" : "unviewed";
            /* TITLE: the title; without one (missing or empty), the description; without either,
             * nothing, and the line ends after STATE. */
            const char *shown_title = title && *title ? title : description && *description ? description : "";
            out_column(id ? id : "", ID_CELLS);
            out_column(*ct ? ct : "(none)", CLASS_TYPE_CELLS);
            out_column(type ? type : "", TYPE_CELLS);
            if (*shown_title) {
                out_column(state, STATE_CELLS);
                out_cell(shown_title, 0);
            } else {
                out_cell(state, 0);
            }
            out("\n", 1);
        }
    }
    if (status != CC_OK) goto done;
    qsort(tallies, kinds, sizeof *tallies, tally_compare);
    if (json_output) {
        buf b = {0};
        if (with_cards) {
            buf_str(&b, "{\"cards\":");
            buf_str(&b, cards);
            buf_fmt(&b, ",\"counts\":{\"total\":%lld,\"unviewed\":%lld}", total, unviewed);
        } else {
            buf_fmt(&b, "{\"total\":%lld,\"unviewed\":%lld", total, unviewed);
        }
        buf_str(&b, ",\"byClassType\":{");
        for (size_t k = 0; k < kinds; k++) {
            if (k) buf_str(&b, ",");
            buf_json(&b, tallies[k].class_type);
            buf_fmt(&b, ":{\"total\":%lld,\"unviewed\":%lld}", tallies[k].total, tallies[k].unviewed);
        }
        buf_str(&b, "}}");
        out_line(b.data);
        free(b.data);
    } else {
        if (with_cards && n > 0) out("\n", 1);
        out_fmt("total %lld, unviewed %lld\n", total, unviewed);
        for (size_t k = 0; k < kinds; k++) {
            out("  ", 2);
            out_cell(*tallies[k].class_type ? tallies[k].class_type : "(none)", 0);
            out_fmt(": total %lld, unviewed %lld\n", tallies[k].total, tallies[k].unviewed);
        }
    }
done:;
    int rc = status == CC_OK ? 0 : failed(status);
    for (size_t k = 0; k < kinds; k++) free(tallies[k].class_type);
    free(tallies);
    free(filter);
    cc_string_free(cards);
    if (snap) (void)cc_snapshot_close(snap);
    (void)cc_controller_close(c);
    return rc;
}

static void format_time(char out[32], double t) {
    time_t s = (time_t)t;
    struct tm tm;
    if (gmtime_r(&s, &tm)) strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
    else snprintf(out, 32, "%.0f", t);
}

static int cmd_events(const options *o) {
    if (o->positional_count < 2) return usage_error("%s", "events needs 'list' or 'flush'");
    const char *verb = o->positional[1];
    int flush = strcmp(verb, "flush") == 0;
    if (!flush && strcmp(verb, "list") != 0) return usage_error("unknown events command '%s' (list, flush)", shown(verb));
    if (o->positional_count > 2) return usage_error("unexpected argument '%s'", shown(o->positional[2]));
    if (!o->store) return usage_error("%s", "--store DIR is required");
    if (flush && !o->events_url) return usage_error("%s", "events flush needs --events-url URL");
    cc_controller *c = NULL;
    int status = open_controller(&c, o, NULL, flush ? o->events_url : NULL);
    if (status != CC_OK) return failed(status);
    char *json = NULL;
    if (flush) status = cc_controller_flush_events(&json, c, o->timeout);
    else status = cc_controller_pending_events_json(&json, c, (size_t)o->limit);
    int rc = 0;
    if (status != CC_OK) {
        rc = failed(status);
    } else if (json_output) {
        out_line(json);
    } else if (flush) {
        out_fmt("delivered %lld, dropped %lld, pending %lld\n", get_int(json, "delivered"), get_int(json, "dropped"),
                get_int(json, "pending"));
    } else {
        buf id = {0}, type = {0}, card = {0}, user = {0};
        const char *p = find_key(json, "events");
        long long shown_count = 0;
        if (p && *p == '[') {
            for (p++; *p == '{'; shown_count++) {
                get_string(&id, find_key(p, "id"));
                get_string(&type, find_key(p, "type"));
                int has_card = get_string(&card, find_key(p, "cardId"));
                get_string(&user, find_key(p, "userId"));
                const char *t = find_key(p, "time");
                char when[32];
                format_time(when, t ? strtod(t, NULL) : 0);
                out_str(when);
                out("  ", 2);
                out_column(type.data, 18);
                out_column(has_card ? card.data : "-", 20);
                out_column(user.data[0] ? user.data : "\"\"", 12);
                out_cell(id.data, 0);
                out("\n", 1);
                p = skip_value(p);
                if (*p == ',') p++;
            }
        }
        out_fmt("%lld pending (%lld shown), %lld failed delivery attempts\n", get_int(json, "pending"), shown_count,
                get_int(json, "failedAttempts"));
        free(id.data); free(type.data); free(card.data); free(user.data);
    }
    cc_string_free(json);
    (void)cc_controller_close(c);
    return rc;
}

static int cmd_refresh(const options *o) {
    if (!o->source) return usage_error("%s", "refresh needs --source FILE_OR_URL");
    if (o->positional_count != 1) return usage_error("unexpected argument '%s'", shown(o->positional[1]));
    cc_controller *c = NULL;
    int status = open_controller(&c, o, o->source, NULL);
    if (status != CC_OK) return failed(status);
    char *summary = NULL;
    status = cc_controller_refresh(&summary, c, o->timeout);
    int rc = 0;
    if (status != CC_OK) {
        rc = failed(status);
    } else if (json_output) {
        out_line(summary);
    } else {
        const char *counts = find_key(summary, "counts");
        out_fmt("added %lld, updated %lld, removed %lld, kept newer %lld\n", get_int(summary, "added"),
                get_int(summary, "updated"), get_int(summary, "removed"), get_int(summary, "keptNewer"));
        print_left_out(summary);
        out_fmt("total %lld, unviewed %lld\n", counts ? get_int(counts, "total") : 0,
                counts ? get_int(counts, "unviewed") : 0);
    }
    cc_string_free(summary);
    (void)cc_controller_close(c);
    return rc;
}

static int cmd_diagnostics(const options *o) {
    if (o->positional_count != 1) return usage_error("unexpected argument '%s'", shown(o->positional[1]));
    cc_controller *c = NULL;
    int status = open_controller(&c, o, NULL, NULL);
    if (status != CC_OK) return failed(status);
    char *json = NULL;
    status = cc_controller_diagnostics(&json, c);
    int rc = status == CC_OK ? 0 : failed(status);
    if (status == CC_OK) out_line(json);
    cc_string_free(json);
    (void)cc_controller_close(c);
    return rc;
}

static int run(int argc, char **argv) {
    options o = {0};
    int rc = parse(&o, argc, argv);
    if (rc) return rc;
    if (o.help) {
        out_str(USAGE);
        return 0;
    }
    if (o.version) {
        out_fmt("contentcards %s\n", cc_version());
        return 0;
    }
    if (o.positional_count == 0) {
        fputs(USAGE, stderr);
        return EXIT_USAGE;
    }
    if (o.log_level) {
        int level = strcmp(o.log_level, "debug") == 0 ? CC_LOG_DEBUG : strcmp(o.log_level, "info") == 0 ? CC_LOG_INFO
                  : strcmp(o.log_level, "warning") == 0 ? CC_LOG_WARNING : strcmp(o.log_level, "error") == 0 ? CC_LOG_ERROR : 0;
        if (!level) return usage_error("--log-level must be debug, info, warning or error, not '%s'", shown(o.log_level));
        (void)cc_set_log_handler(log_to_stderr, level, NULL, NULL);
    }
    const char *command = o.positional[0];
    if (strcmp(command, "validate") == 0) rc = cmd_validate(&o);
    else if (strcmp(command, "feed") == 0) rc = cmd_feed(&o, 1);
    else if (strcmp(command, "counts") == 0) rc = cmd_feed(&o, 0);
    else if (strcmp(command, "events") == 0) rc = cmd_events(&o);
    else if (strcmp(command, "refresh") == 0) rc = cmd_refresh(&o);
    else if (strcmp(command, "diagnostics") == 0) rc = cmd_diagnostics(&o);
    else rc = usage_error("unknown command '%s'", shown(command));
    (void)cc_set_log_handler(NULL, 0, NULL, NULL);
    return rc;
}

int main(int argc, char **argv) {
    /* A closed pipe is an error of write() (EPIPE), not a signal that kills the process:
     * finish_output() ends quietly with 141 (docs/CLI.md, "Exit codes"). */
    signal(SIGPIPE, SIG_IGN);
    int rc = run(argc, argv);
    return finish_output(rc);
}
