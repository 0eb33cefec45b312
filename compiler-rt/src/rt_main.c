/* rt_main.c - main() for Split-C programs (library splitc_rt_main): start the
 * runtime, run splitc_main(argc, argv) on every processor, shut down.
 *
 * The job is normally started by the launcher: `vipl-run -n N program args`.
 * As a convenience, a program started by hand with SPLITC_PROCS=N (N > 1)
 * re-executes itself under the launcher (SPLITC_LAUNCHER, default "vipl-run"
 * found on PATH).  Started by hand without it, a program is a job of one. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "splitc_rt.h"

/* One "splitc: ..." error line through viastack's logging facility
 * (rt_error.cpp; $VIASTACK_LOG, docs/logging.md). */
void splitc_rt_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int under_launcher(void) { return getenv("VIASTACK_RANK") != NULL || getenv("PMIX_RANK") != NULL; }

/* Returns only if nothing was to be done; exits on a launch failure. */
static void relaunch_if_asked(int argc, char **argv) {
    const char *procs = getenv("SPLITC_PROCS");
    if (!procs || !*procs || under_launcher()) return;
    char *end = NULL;
    long n = strtol(procs, &end, 10);
    if (!end || *end || n < 1 || n > SPLITC_MAX_PROCS) {
        splitc_rt_log_error("SPLITC_PROCS=%s is not a processor count (1..%d)", procs, SPLITC_MAX_PROCS);
        exit(2);
    }
    if (n == 1) return;
    const char *launcher = getenv("SPLITC_LAUNCHER");
    if (!launcher || !*launcher) launcher = "vipl-run";
    char count[16];
    snprintf(count, sizeof count, "%ld", n);
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args) exit(2);
    args[0] = (char *)launcher;
    args[1] = "-n";
    args[2] = count;
    for (int i = 0; i < argc; ++i) args[3 + i] = argv[i];
    execvp(launcher, args);
    splitc_rt_log_error("cannot start the launcher '%s' for SPLITC_PROCS=%ld: %s "
                        "(put vipl-run on PATH or set SPLITC_LAUNCHER to its path)",
                        launcher, n, strerror(errno));
    exit(2);
}

int main(int argc, char **argv) {
    relaunch_if_asked(argc, argv);
    return splitc_run(argc, argv, splitc_main);
}
