/* A minimal test harness for the C tests: CHECK macros that count and report, and a closing
 * "N passed, N failed" line. Each test program exits non-zero when a check failed. */
#ifndef CC_TEST_H
#define CC_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contentcards.h"

static int cc_test_passed, cc_test_failed;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (cond) {                                                                          \
            cc_test_passed++;                                                                \
        } else {                                                                             \
            cc_test_failed++;                                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, cc_last_error_message());                                         \
        }                                                                                    \
    } while (0)

/* A call that must return `expected`; on a mismatch the message says what came back. */
#define CHECK_RC(expected, call)                                                             \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ == (expected)) {                                                             \
            cc_test_passed++;                                                                \
        } else {                                                                             \
            cc_test_failed++;                                                                \
            fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s: %s\n", __FILE__,        \
                    __LINE__, #call, cc_status_name(rc_), rc_, #expected,                   \
                    cc_last_error_message());                                                \
        }                                                                                    \
    } while (0)

#define CHECK_OK(call) CHECK_RC(CC_OK, call)

/* A call whose status a test ignores on purpose. The header marks most calls
 * CC_WARN_UNUSED_RESULT, and GCC's warn_unused_result is not silenced by a (void) cast:
 * negating the value uses it. */
#define CC_TEST_IGNORE(call) ((void)!(call))

/* The message of the last error contains `fragment`. */
#define CHECK_MESSAGE(fragment) CHECK(strstr(cc_last_error_message(), (fragment)) != NULL)

#define CHECK_CONTAINS(haystack, needle) CHECK((haystack) != NULL && strstr((haystack), (needle)) != NULL)

/* `text` with every `from` replaced by `to` (malloc'd). */
static inline char *cc_test_replaced(const char *text, const char *from, const char *to) {
    size_t n = 0, from_len = strlen(from), to_len = strlen(to);
    for (const char *p = strstr(text, from); p; p = strstr(p + from_len, from)) n++;
    char *out = malloc(strlen(text) + n * to_len + 1), *w = out;
    if (!out) return NULL;
    for (const char *p = text, *hit; ; p = hit + from_len) {
        hit = strstr(p, from);
        size_t keep = hit ? (size_t)(hit - p) : strlen(p);
        memcpy(w, p, keep);
        w += keep;
        if (!hit) break;
        memcpy(w, to, to_len);
        w += to_len;
    }
    *w = 0;
    return out;
}

static inline int cc_test_finish(const char *name) {
    printf("%s: %d passed, %d failed\n", name, cc_test_passed, cc_test_failed);
    return cc_test_failed == 0 ? 0 : 1;
}

/* Temporary directories. cc_test_make_dir makes NAME-XXXXXX under $TMPDIR (else /tmp), private
 * to the test; whatever is left in it is removed at exit, also when a check failed or the test
 * stopped early with exit() (not in a forked child: only the process that made it removes it).
 * cc_test_remove_dir removes one, and all that is in it, sooner. */
#define CC_TEST_MAX_DIRS 16
static char cc_test_dirs[CC_TEST_MAX_DIRS][512];
static int cc_test_dir_count;
static pid_t cc_test_dirs_owner;

static inline void cc_test_remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) { unlink(path); return; }
    chmod(path, 0700);                               /* a test may have left it read-only */
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char child[1024];
            if ((size_t)snprintf(child, sizeof child, "%s/%s", path, e->d_name) < sizeof child)
                cc_test_remove_tree(child);
        }
        closedir(d);
    }
    rmdir(path);
}

static inline void cc_test_remove_dirs_at_exit(void) {
    if (getpid() != cc_test_dirs_owner) return;     /* a forked child that called exit() */
    for (int i = 0; i < cc_test_dir_count; i++)
        if (cc_test_dirs[i][0]) cc_test_remove_tree(cc_test_dirs[i]);
}

static inline void cc_test_make_dir(char *dir, size_t size, const char *name) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    int n = snprintf(dir, size, "%s/%s-XXXXXX", base, name);
    if (n < 0 || (size_t)n >= size || (size_t)n >= sizeof cc_test_dirs[0]
        || cc_test_dir_count == CC_TEST_MAX_DIRS || mkdtemp(dir) == NULL) {
        fprintf(stderr, "cannot make a temporary directory %s/%s-XXXXXX: %s\n", base, name, strerror(errno));
        exit(2);
    }
    if (cc_test_dir_count == 0) {
        cc_test_dirs_owner = getpid();
        atexit(cc_test_remove_dirs_at_exit);
    }
    memcpy(cc_test_dirs[cc_test_dir_count++], dir, (size_t)n + 1);
}

/* 1 when the directory and everything in it are gone. */
static inline int cc_test_remove_dir(const char *dir) {
    cc_test_remove_tree(dir);
    for (int i = 0; i < cc_test_dir_count; i++)
        if (strcmp(cc_test_dirs[i], dir) == 0) cc_test_dirs[i][0] = '\0';
    return access(dir, F_OK) != 0 && errno == ENOENT;
}

/* Opens a controller on the sample feed with the rate limit off, in memory. */
static inline cc_controller *cc_test_open_sample(void) {
    cc_controller *c = NULL;
    int rc = cc_controller_open(&c,
        "{\"userId\":\"u-1\",\"refreshTokens\":0,\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}");
    if (rc != CC_OK) {
        fprintf(stderr, "cannot open a controller: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

/* The lock another process finds on the SHARED bytes SQLite locks in the database file at
 * `path` (os_unix.c: PENDING_BYTE 0x40000000, SHARED_FIRST two past it, SHARED_SIZE 510): its
 * type (F_UNLCK when none; -1 when the file could not be probed), its holder in *holder. Asked
 * from a child of its own, which holds no lock there and whose descriptor's close can drop none
 * of this process's (closing any descriptor of a file drops the process's locks on it). When
 * several processes hold the lock, the kernel names one of them. */
static inline int cc_test_sqlite_shared_lock(const char *path, pid_t *holder) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct flock probe = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0x40000002, .l_len = 510};
        int answer[2] = {-1, 0};
        if (fd >= 0 && fcntl(fd, F_GETLK, &probe) == 0) { answer[0] = probe.l_type; answer[1] = probe.l_pid; }
        _exit(write(fds[1], answer, sizeof answer) == sizeof answer ? 0 : 1);
    }
    int answer[2] = {-1, 0}, status = 0;
    if (pid < 0 || read(fds[0], answer, sizeof answer) != sizeof answer) answer[0] = -1;
    if (pid > 0) waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    *holder = answer[1];
    return answer[0];
}

#endif
