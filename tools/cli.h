/* SPDX-License-Identifier: Apache-2.0
 * Copyright 2026 The contentcards authors
 *
 * The parts of the contentcards tool (docs/CLI.md), each in a file of its own, and what they
 * share: what the program writes and shows to people (cli_output.c), the library's JSON as the
 * program reads it (cli_json.c), the commands (cli_commands.c); the options, the failures and
 * main() are in contentcards.c. Internal to the program. */
#ifndef CC_CLI_H
#define CC_CLI_H

#include <stddef.h>

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_PIPE_CLOSED 141 /* 128 + SIGPIPE: what a shell shows for a filter its reader left */

/* A growing string, NUL-terminated. */
typedef struct {
    char *data;
    size_t len, cap;
} buf;

/* The command line, parsed (contentcards.c). */
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

/* cli_output.c: a growing string, text for people, stdout. */
void buf_add(buf *b, const char *s, size_t n);
void buf_str(buf *b, const char *s);
void buf_fmt(buf *b, const char *fmt, ...);
void buf_json(buf *b, const char *s);
int valid_utf8(const char *s);
size_t buf_text(buf *b, const char *s);
const char *shown(const char *s);
void out(const char *s, size_t n);
void out_str(const char *s);
void out_line(const char *s);
void out_fmt(const char *fmt, ...);
void out_cell(const char *s, size_t width);
void out_column(const char *s, size_t width);
int finish_output(int rc);

/* cli_json.c: reading the library's JSON. */
const char *skip_value(const char *p);
const char *find_key(const char *obj, const char *key);
long long get_int(const char *obj, const char *key);
int get_string(buf *out, const char *v);

/* contentcards.c: --json, and the failures. */
extern int json_output;
int usage_error(const char *fmt, ...);
int failed(int status);

/* cli_commands.c: the commands. */
int cmd_validate(const options *o);
int cmd_feed(const options *o, int with_cards);
int cmd_events(const options *o);
int cmd_user(const options *o);
int cmd_refresh(const options *o);
int cmd_diagnostics(const options *o);

#endif
