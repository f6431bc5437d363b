/* proctime: times whole processes, the way a user's shell starts them, for the cold-start row
 * of `make bench`.
 *
 *   proctime ROUNDS OUTDIR CMD1 [ARGS...] [';' CMD2 [ARGS...]]...
 *
 * In each round every command runs once, one after the other (so a slow moment of the machine
 * falls on all of them alike), started with posix_spawn and waited for with waitpid; the time
 * is from just before the spawn to just after the wait. Command i's standard output is
 * appended to OUTDIR/i.out (its standard error is left as it is). Prints one JSON line: the
 * median milliseconds of each command, in order.
 *
 * Why not Python's subprocess: from the bench's Python process (a hundred megabytes resident
 * after the pipeline rows) one spawn cost about a millisecond of its own, as much as the empty
 * process it was measuring; hyperfine and this program measure the same empty process at
 * 0.6 ms on the machines of docs/PERFORMANCE.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_COMMANDS 16

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: proctime ROUNDS OUTDIR CMD [ARGS...] [';' CMD [ARGS...]]...\n");
        return 2;
    }
    int rounds = atoi(argv[1]);
    const char *outdir = argv[2];
    char **commands[MAX_COMMANDS];
    int n = 0;
    commands[n++] = &argv[3];
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], ";") == 0) {
            argv[i] = NULL;                     /* ends the previous command's argv */
            if (i + 1 < argc) {
                if (n == MAX_COMMANDS) { fprintf(stderr, "proctime: at most %d commands\n", MAX_COMMANDS); return 2; }
                commands[n++] = &argv[i + 1];
            }
        }
    }
    if (rounds < 1) rounds = 1;
    double *times = calloc((size_t)(rounds * n), sizeof *times);
    if (!times) return 1;
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < n; c++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%d.out", outdir, c);
            posix_spawn_file_actions_t actions;
            posix_spawn_file_actions_init(&actions);
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_APPEND, 0644);
            pid_t pid;
            double start = now_ms();
            int rc = posix_spawn(&pid, commands[c][0], &actions, NULL, commands[c], environ);
            posix_spawn_file_actions_destroy(&actions);
            if (rc != 0) { fprintf(stderr, "proctime: cannot start %s: %s\n", commands[c][0], strerror(rc)); return 1; }
            int status;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            times[c * rounds + r] = now_ms() - start;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "proctime: %s failed (status %d)\n", commands[c][0], status);
                return 1;
            }
        }
    }
    printf("{\"rounds\":%d,\"median_ms\":[", rounds);
    for (int c = 0; c < n; c++) {
        qsort(&times[c * rounds], (size_t)rounds, sizeof *times, compare);
        double *t = &times[c * rounds];
        double median = rounds % 2 ? t[rounds / 2] : (t[rounds / 2 - 1] + t[rounds / 2]) / 2;
        printf("%s%.3f", c ? "," : "", median);
    }
    printf("]}\n");
    free(times);
    return 0;
}
