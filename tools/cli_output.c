/* SPDX-License-Identifier: Apache-2.0
 * Copyright 2026 The contentcards authors
 *
 * What the contentcards tool writes (cli.h): a growing string, text for people, stdout. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_width.h"

/* ---- a growing string ---------------------------------------------------------------------- */

void buf_add(buf *b, const char *s, size_t n) {
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

void buf_str(buf *b, const char *s) { buf_add(b, s, strlen(s)); }

void buf_fmt(buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string literal, escaped as Python's json.dumps(ensure_ascii=False) does. */
void buf_json(buf *b, const char *s) {
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

int valid_utf8(const char *s) {
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
size_t buf_text(buf *b, const char *s) {
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
const char *shown(const char *s) {
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

void out(const char *s, size_t n) {
    if (output_errno || n == 0) return;
    errno = 0;
    if (fwrite(s, 1, n, stdout) != n) output_errno = errno ? errno : EIO;
}

void out_str(const char *s) { out(s, strlen(s)); }

void out_line(const char *s) {
    out_str(s);
    out("\n", 1);
}

void out_fmt(const char *fmt, ...) {
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
void out_cell(const char *s, size_t width) {
    buf b = {0};
    buf_add(&b, "", 0);
    size_t cells = buf_text(&b, s ? s : "");
    while (cells++ < width) buf_add(&b, " ", 1);
    out(b.data, b.len);
    free(b.data);
}

/* A column of a table: `s` padded to `width` terminal cells, then the space between columns
 * (a longer text pushes the rest of its line to the right). */
void out_column(const char *s, size_t width) {
    out_cell(s, width);
    out(" ", 1);
}

/* The end of the output: stdout flushed and closed, and what went wrong writing it. Returns the
 * exit status: `rc`, or when the output was lost and `rc` is 0, 141 for a closed pipe (quietly:
 * the reader chose to stop) and 1 for any other error (which stderr names in any case). */
int finish_output(int rc) {
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
