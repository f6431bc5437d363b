/* SPDX-License-Identifier: Apache-2.0
 * Copyright 2026 The contentcards authors
 *
 * The library's JSON as the contentcards tool reads it (cli.h): compact and well-formed, it is
 * the library's own. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

const char *skip_value(const char *p) {
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
const char *find_key(const char *obj, const char *key) {
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

long long get_int(const char *obj, const char *key) {
    const char *v = find_key(obj, key);
    return v ? strtoll(v, NULL, 10) : 0;
}

/* A JSON string value decoded into `out` (NULL for null). */
int get_string(buf *out, const char *v) {
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
