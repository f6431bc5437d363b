/* bench_c: the C side of `make bench`. Each mode measures one thing through the C ABI and prints
 * one JSON object; bench/run.py runs it next to its baselines and prints the table.
 *
 *   bench_c pipeline PAYLOAD FILTER REPEATS OUT   apply (decode + merge into a fresh in-memory
 *                                                 store) then feed (filter + encode); OUT gets the
 *                                                 last feed JSON, for the output check
 *   bench_c calls PAYLOAD N                       cost of one cc_controller_counts
 *   bench_c logging DIR N [THREADS]               durable impressions: rate and latency p50/p99,
 *                                                 N in all from THREADS threads at once (1)
 *   bench_c memory PAYLOAD                        resident memory for the stored cards
 *   bench_c controllers N                         resident memory of N controllers (users)
 *   bench_c percard DIR N                         per-card operations on a file store holding N
 *                                                 cards: median microseconds of a logged
 *                                                 impression, click and dismissal, a card by id,
 *                                                 a count, and an incremental sync changing 10
 *   bench_c readers N [FILTER]                    the latency of a count (with FILTER, "[]" by
 *                                                 default: every card, through the readers' lock)
 *                                                 while another thread applies N cards
 *   bench_c cold DIR                              open a controller on a store with cards already
 *                                                 in it, to the first feed read (run in a new
 *                                                 process: load time is measured by the caller);
 *                                                 the kept feed serves it when it stands
 *   bench_c cold-store DIR                        the same, the kept feed removed first: the open
 *                                                 reads the store (docs/BEHAVIOUR.md, "The store")
 *   bench_c cold-check DIR                        the same, the store's stamp removed too: the
 *                                                 open checks every page (what follows any change
 *                                                 to the file)
 *   bench_c load                                  load the library, make one call, exit (what a
 *                                                 cold start costs before it opens anything) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "contentcards.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { perror("read"); exit(2); }
    buf[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

static void check(int rc, const char *what) {
    if (rc != CC_OK) {
        fprintf(stderr, "%s: %s (%s)\n", what, cc_status_name(rc), cc_last_error_message());
        exit(1);
    }
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    if (f) fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_array(const char *name, double *v, int n) {
    printf("\"%s\":[", name);
    for (int i = 0; i < n; i++) printf("%s%.4f", i ? "," : "", v[i]);
    printf("]");
}

static int pipeline(const char *payload_path, const char *filter, int repeats, const char *out_path) {
    size_t len = 0;
    char *payload = read_file(payload_path, &len);
    double *apply_ms = calloc((size_t)repeats, sizeof(double));
    double *feed_ms = calloc((size_t)repeats, sizeof(double));
    size_t out_len = 0;
    for (int r = 0; r < repeats; r++) {
        cc_controller *c = NULL;
        check(cc_controller_open(&c, "{\"maxPayloadBytes\":1073741824}"), "open");
        double t0 = now_ms();
        check(cc_controller_apply(NULL, c, payload), "apply");
        double t1 = now_ms();
        char *feed = NULL;
        check(cc_controller_feed(&feed, c, filter), "feed");
        double t2 = now_ms();
        apply_ms[r] = t1 - t0;
        feed_ms[r] = t2 - t1;
        out_len = strlen(feed);
        if (r == repeats - 1 && out_path) {
            FILE *f = fopen(out_path, "wb");
            if (f) { fwrite(feed, 1, out_len, f); fclose(f); }
        }
        cc_string_free(feed);
        cc_controller_close(c);
    }
    printf("{\"mode\":\"pipeline\",\"bytes\":%zu,\"out_bytes\":%zu,", len, out_len);
    print_array("apply_ms", apply_ms, repeats);
    printf(",");
    print_array("feed_ms", feed_ms, repeats);
    printf("}\n");
    free(payload);
    return 0;
}

static int calls(const char *payload_path, long n) {
    char *payload = read_file(payload_path, NULL);
    cc_controller *c = NULL;
    check(cc_controller_open(&c, "{\"maxPayloadBytes\":1073741824}"), "open");
    check(cc_controller_apply(NULL, c, payload), "apply");
    int64_t total = 0, unviewed = 0;
    double best = 1e18;
    for (int round = 0; round < 5; round++) {
        double t0 = now_ms();
        /* The cost of the call alone: its status is checked once, after the loop. */
        for (long i = 0; i < n; i++) (void)!cc_controller_counts(&total, &unviewed, c, NULL);
        double per = (now_ms() - t0) * 1e6 / (double)n;
        if (per < best) best = per;
    }
    check(cc_controller_counts(&total, &unviewed, c, NULL), "cc_controller_counts");
    /* The floor: a call that does nothing but clear the thread's error. */
    double floor_best = 1e18;
    for (int round = 0; round < 5; round++) {
        double t0 = now_ms();
        for (long i = 0; i < n; i++) (void)cc_abi_version();
        double per = (now_ms() - t0) * 1e6 / (double)n;
        if (per < floor_best) floor_best = per;
    }
    printf("{\"mode\":\"calls\",\"cards\":%lld,\"count_ns\":%.1f,\"abi_version_ns\":%.2f}\n", (long long)total, best, floor_best);
    cc_controller_close(c);
    free(payload);
    return 0;
}

/* One logging thread: impressions on the 100 cards, each call's latency in lat[from..to). */
struct logger { cc_controller *c; double *lat; int from, to; };

static void *log_impressions(void *arg) {
    struct logger *l = arg;
    char id[16];
    for (int i = l->from; i < l->to; i++) {
        snprintf(id, sizeof id, "c%d", i % 100);
        double a = now_ms();
        check(cc_controller_log_impression(l->c, id), "log");
        l->lat[i] = (now_ms() - a) * 1000.0;
    }
    return NULL;
}

static int logging(const char *dir, int n, int threads) {
    char config[1024];
    snprintf(config, sizeof config, "{\"storagePath\":\"%s\",\"userId\":\"bench\"}", dir);
    cc_controller *c = NULL;
    check(cc_controller_open(&c, config), "open");
    char payload[256 * 100];
    size_t off = 0;
    off += (size_t)snprintf(payload + off, sizeof payload - off, "[");
    for (int i = 0; i < 100; i++)
        off += (size_t)snprintf(payload + off, sizeof payload - off, "%s{\"id\":\"c%d\",\"tp\":\"short_news\",\"ca\":%d,\"ds\":\"d\"}", i ? "," : "", i, 1000 + i);
    snprintf(payload + off, sizeof payload - off, "]");
    check(cc_controller_apply(NULL, c, payload), "apply");
    int64_t before = 0;
    check(cc_controller_pending_events(&before, c), "cc_controller_pending_events");
    if (threads < 1) threads = 1;
    double *lat = calloc((size_t)n, sizeof(double));
    struct logger *ls = calloc((size_t)threads, sizeof *ls);
    pthread_t *ts = calloc((size_t)threads, sizeof *ts);
    double t0 = now_ms();
    for (int t = 0; t < threads; t++) {
        ls[t] = (struct logger){c, lat, (int)((long)n * t / threads), (int)((long)n * (t + 1) / threads)};
        if (threads == 1) log_impressions(&ls[t]);
        else if (pthread_create(&ts[t], NULL, log_impressions, &ls[t]) != 0) { fprintf(stderr, "pthread_create\n"); exit(1); }
    }
    if (threads > 1) for (int t = 0; t < threads; t++) pthread_join(ts[t], NULL);
    double total_ms = now_ms() - t0;
    qsort(lat, (size_t)n, sizeof(double), cmp_double);
    int64_t pending = 0;
    check(cc_controller_pending_events(&pending, c), "cc_controller_pending_events");
    /* Every call's event is in the outbox (no endpoint: nothing leaves it). */
    printf("{\"mode\":\"logging\",\"n\":%d,\"threads\":%d,\"per_second\":%.0f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,\"pending\":%lld}\n",
           n, threads, n / (total_ms / 1000.0), lat[n / 2], lat[(int)(n * 0.99)], lat[n - 1], (long long)(pending - before));
    free(ls);
    free(ts);
    cc_controller_close(c);
    free(lat);
    return 0;
}

static int memory(const char *payload_path) {
    char *payload = read_file(payload_path, NULL);
    cc_controller *c = NULL;
    check(cc_controller_open(&c, "{\"maxPayloadBytes\":1073741824}"), "open");
    long before = rss_kb();
    check(cc_controller_apply(NULL, c, payload), "apply");
    free(payload);
    long after = rss_kb();
    int64_t total = 0;
    check(cc_controller_counts(&total, NULL, c, NULL), "cc_controller_counts");
    printf("{\"mode\":\"memory\",\"cards\":%lld,\"rss_before_kb\":%ld,\"rss_after_kb\":%ld}\n", (long long)total, before, after);
    cc_controller_close(c);
    return 0;
}

static int controllers(int n) {
    const char *small = "[{\"id\":\"a\",\"tp\":\"short_news\",\"ca\":1,\"ds\":\"hello\",\"e\":{\"class_type\":\"home_tile\"}},"
                        "{\"id\":\"b\",\"tp\":\"control\",\"ca\":2}]";
    cc_controller **all = calloc((size_t)n, sizeof *all);
    /* one first, so the library's one-time costs are not counted per controller */
    cc_controller *warm = NULL;
    check(cc_controller_open(&warm, NULL), "open");
    long before = rss_kb();
    char config[64];
    for (int i = 0; i < n; i++) {
        snprintf(config, sizeof config, "{\"userId\":\"user-%d\"}", i);
        check(cc_controller_open(&all[i], config), "open");
        check(cc_controller_apply(NULL, all[i], small), "apply");
    }
    long after = rss_kb();
    printf("{\"mode\":\"controllers\",\"n\":%d,\"rss_before_kb\":%ld,\"rss_after_kb\":%ld}\n", n, before, after);
    for (int i = 0; i < n; i++) cc_controller_close(all[i]);
    cc_controller_close(warm);
    free(all);
    return 0;
}

static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

/* N cards, each dismissible with a url, created 1000 + i; `gen` changes every card's text. */
static char *percard_payload(int n, int first, int count, int gen) {
    size_t cap = (size_t)count * 200 + 64;
    char *p = malloc(cap);
    size_t off = (size_t)snprintf(p, cap, "[");
    for (int i = first; i < first + count; i++)
        off += (size_t)snprintf(p + off, cap - off,
                                "%s{\"id\":\"c%d\",\"tp\":\"short_news\",\"ca\":%d,\"ds\":\"text %d\",\"db\":true,"
                                "\"u\":\"https://example.com/%d\",\"e\":{\"class_type\":\"t%d\"}}",
                                i > first ? "," : "", i, 1000 + i, gen, i, i % 4);
    snprintf(p + off, cap - off, "]");
    (void)n;
    return p;
}

static int percard(const char *dir, int n) {
    char config[1024];
    snprintf(config, sizeof config, "{\"storagePath\":\"%s\",\"userId\":\"bench-%d\",\"maxPayloadBytes\":1073741824}", dir, n);
    cc_controller *c = NULL;
    check(cc_controller_open(&c, config), "open");
    char *all = percard_payload(n, 0, n, 0);
    check(cc_controller_apply(NULL, c, all), "apply");
    free(all);
    enum { R = 41 };
    double imp[R], clk[R], dis[R], get[R], cnt[R], sync[R];
    char id[32];
    int64_t total = 0, unviewed = 0;
    for (int r = 0; r < R; r++) {
        int k = (int)((r * 7919L) % n);
        snprintf(id, sizeof id, "c%d", k);
        double a = now_ms();
        check(cc_controller_log_impression(c, id), "impression");
        double b = now_ms();
        check(cc_controller_log_click(c, id), "click");
        double d = now_ms();
        char *card = NULL;
        check(cc_controller_card(&card, c, id), "card");
        double e = now_ms();
        check(cc_controller_counts(&total, &unviewed, c, "[\"t1\"]"), "counts");
        double e2 = now_ms();
        /* A dismissal needs a card not dismissed yet: one added for it and removed after, so
         * the store keeps its N cards (a small feed would come round again). */
        check(cc_controller_apply(NULL, c, "[{\"id\":\"x\",\"tp\":\"short_news\",\"ca\":1,\"ds\":\"x\",\"db\":true}]"), "add");
        double f = now_ms();
        check(cc_controller_log_dismissal(c, "x"), "dismissal");
        double g = now_ms();
        check(cc_controller_apply(NULL, c, "[{\"id\":\"x\",\"ca\":1,\"r\":true}]"), "remove");
        cc_string_free(card);
        int first = (int)((r * 104729L) % (n > 10 ? n - 10 : 1));
        char *ten = percard_payload(n, first, n < 10 ? n : 10, r + 1);
        double h = now_ms();
        check(cc_controller_apply(NULL, c, ten), "incremental apply");
        double i = now_ms();
        free(ten);
        imp[r] = (b - a) * 1000; clk[r] = (d - b) * 1000; get[r] = (e - d) * 1000;
        cnt[r] = (e2 - e) * 1000; dis[r] = (g - f) * 1000; sync[r] = (i - h) * 1000;
    }
    printf("{\"mode\":\"percard\",\"cards\":%d,\"impression_us\":%.1f,\"click_us\":%.1f,\"dismissal_us\":%.1f,"
           "\"card_us\":%.1f,\"counts_us\":%.2f,\"sync10_us\":%.1f}\n", n, median_of(imp, R), median_of(clk, R),
           median_of(dis, R), median_of(get, R), median_of(cnt, R), median_of(sync, R));
    cc_controller_close(c);
    return 0;
}

struct apply_job {
    cc_controller *c;
    const char *payload;
    volatile int done;
    double ms;
};

static void *apply_thread(void *arg) {
    struct apply_job *job = arg;
    double a = now_ms();
    check(cc_controller_apply(NULL, job->c, job->payload), "big apply");
    job->ms = now_ms() - a;
    job->done = 1;
    return NULL;
}

static int readers(int n, const char *filter) {
    cc_controller *c = NULL;
    check(cc_controller_open(&c, "{\"maxPayloadBytes\":1073741824}"), "open");
    check(cc_controller_apply(NULL, c, "[{\"id\":\"first\",\"tp\":\"short_news\",\"ca\":1,\"ds\":\"x\"}]"), "apply");
    char *payload = percard_payload(n, 0, n, 0);
    struct apply_job job = {c, payload, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, apply_thread, &job);
    enum { MAX = 1 << 20 };
    double *lat = malloc(sizeof(double) * MAX);
    int k = 0;
    int64_t total = 0;
    while (!job.done && k < MAX) {
        double a = now_ms();
        check(cc_controller_counts(&total, NULL, c, filter), "count");
        lat[k++] = (now_ms() - a) * 1000;
        usleep(200);
    }
    pthread_join(th, NULL);
    qsort(lat, (size_t)k, sizeof(double), cmp_double);
    printf("{\"mode\":\"readers\",\"cards\":%d,\"apply_ms\":%.1f,\"reads\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}\n",
           n, job.ms, k, k ? lat[k / 2] : 0, k ? lat[(int)(k * 0.99)] : 0, k ? lat[k - 1] : 0);
    free(lat);
    free(payload);
    cc_controller_close(c);
    return 0;
}

/* What a cold start finds beside the store: everything a clean close left, no kept feed (the
 * open reads the store through SQLite), or neither the kept feed nor the stamp (the open also
 * checks every page, as after any change to the file: docs/BEHAVIOUR.md, "The store"). */
enum cold_start { COLD_AS_LEFT, COLD_NO_KEPT_FEED, COLD_UNSTAMPED };

static int cold(const char *dir, enum cold_start start) {
    char path[1024];
    if (start != COLD_AS_LEFT) {
        snprintf(path, sizeof path, "%s/contentcards.sqlite-feed", dir);
        unlink(path);
    }
    if (start == COLD_UNSTAMPED) {
        snprintf(path, sizeof path, "%s/contentcards.sqlite-checked", dir);
        unlink(path);
    }
    double t0 = now_ms();
    char config[1024];
    snprintf(config, sizeof config, "{\"storagePath\":\"%s\",\"userId\":\"bench\"}", dir);
    cc_controller *c = NULL;
    check(cc_controller_open(&c, config), "open");
    double t1 = now_ms();
    char *feed = NULL;
    check(cc_controller_feed(&feed, c, NULL), "feed");
    double t2 = now_ms();
    int64_t total = 0;
    check(cc_controller_counts(&total, NULL, c, NULL), "cc_controller_counts");
    printf("{\"mode\":\"cold\",\"cards\":%lld,\"open_ms\":%.3f,\"first_feed_ms\":%.3f}\n", (long long)total, t1 - t0, t2 - t1);
    cc_string_free(feed);
    cc_controller_close(c);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 6 && strcmp(argv[1], "pipeline") == 0) return pipeline(argv[2], argv[3], atoi(argv[4]), argv[5]);
    if (argc >= 4 && strcmp(argv[1], "calls") == 0) return calls(argv[2], atol(argv[3]));
    if (argc >= 4 && strcmp(argv[1], "logging") == 0) return logging(argv[2], atoi(argv[3]), argc >= 5 ? atoi(argv[4]) : 1);
    if (argc >= 3 && strcmp(argv[1], "memory") == 0) return memory(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "controllers") == 0) return controllers(atoi(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "cold") == 0) return cold(argv[2], COLD_AS_LEFT);
    if (argc >= 3 && strcmp(argv[1], "cold-store") == 0) return cold(argv[2], COLD_NO_KEPT_FEED);
    if (argc >= 3 && strcmp(argv[1], "cold-check") == 0) return cold(argv[2], COLD_UNSTAMPED);
    /* The library loaded and one call made, nothing else: what a cold start costs before it opens. */
    if (argc >= 2 && strcmp(argv[1], "load") == 0) return cc_abi_version() == CC_ABI_VERSION ? 0 : 1;
    if (argc >= 3 && strcmp(argv[1], "readers") == 0) return readers(atoi(argv[2]), argc >= 4 ? argv[3] : "[]");
    if (argc >= 4 && strcmp(argv[1], "percard") == 0) return percard(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: see the comment at the top of bench/bench_c.c\n");
    return 2;
}
