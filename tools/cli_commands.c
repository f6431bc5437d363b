/* SPDX-License-Identifier: Apache-2.0
 * Copyright 2026 The contentcards authors
 *
 * The commands of the contentcards tool (cli.h, docs/CLI.md), and the controller each opens. */
#include "cli.h"

#include <contentcards.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int cmd_validate(const options *o) {
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
int cmd_feed(const options *o, int with_cards) {
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

int cmd_events(const options *o) {
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

int cmd_refresh(const options *o) {
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

int cmd_diagnostics(const options *o) {
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

/* user export | user forget [discard]: a user's stored data as one JSON document, or all of it
 * removed (pending events delivered first to --events-url, or with "discard" removed). */
int cmd_user(const options *o) {
    if (o->positional_count < 2) return usage_error("%s", "user needs 'export' or 'forget'");
    const char *verb = o->positional[1];
    int forget = strcmp(verb, "forget") == 0;
    if (!forget && strcmp(verb, "export") != 0) return usage_error("unknown user command '%s' (export, forget)", shown(verb));
    int discard = 0;
    if (o->positional_count > 2) {
        if (!forget || strcmp(o->positional[2], "discard") != 0) return usage_error("unexpected argument '%s'", shown(o->positional[2]));
        discard = 1;
    }
    if (!o->store) return usage_error("%s", "--store DIR is required");
    cc_controller *c = NULL;
    int status = open_controller(&c, o, NULL, forget ? o->events_url : NULL);
    if (status != CC_OK) return failed(status);
    char *json = NULL;
    if (forget) status = cc_controller_forget_user(&json, c, NULL, discard ? CC_PENDING_DISCARD : CC_PENDING_FLUSH, o->timeout);
    else status = cc_controller_export_user(&json, c, NULL);
    int rc = 0;
    if (status != CC_OK) {
        rc = failed(status);
    } else if (json_output || !forget) {
        out_line(json);
    } else {
        buf user = {0};
        get_string(&user, find_key(json, "user_id"));
        out_str("forgot user ");
        out_cell(user.data ? user.data : "", 0);
        out_fmt(": %lld cards, %lld dismissals, %lld events delivered, %lld discarded, %lld images\n",
                get_int(json, "cards"), get_int(json, "dismissals"), get_int(json, "events_delivered"),
                get_int(json, "events_discarded"), get_int(json, "images"));
        free(user.data);
    }
    cc_string_free(json);
    (void)cc_controller_close(c);
    return rc;
}
