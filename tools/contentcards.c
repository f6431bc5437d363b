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
 * error; 141 the reader of the output went away (a closed pipe).
 *
 * This file: the usage, the options, the failures, the log handler and main(); the other parts
 * are named in cli.h. */
#include <contentcards.h>

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
    "  user export --store DIR [--user U]    everything stored for the user (JSON)\n"
    "  user forget --store DIR [--user U] [--events-url URL] [discard]\n"
    "                                        remove it all: pending events delivered first, or discarded\n"
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

/* ---- failures -------------------------------------------------------------------------------- */

int json_output = 0;

/* A usage error: the message on stderr (its arguments given through shown()), exit 2. */
int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("contentcards: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'contentcards --help'.\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

/* The failure of the last call: stderr, and the error object on stdout with --json. */
int failed(int status) {
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
    else if (strcmp(command, "user") == 0) rc = cmd_user(&o);
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
