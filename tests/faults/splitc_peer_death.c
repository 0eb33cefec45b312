/* splitc_peer_death.c - the Split-C runtime sees a peer die.  Processor 1
 * leaves without a word after a barrier (exit code 0, so the launcher does
 * not end the job for us); processor 0 keeps reading from it.  The runtime
 * must end processor 0 within seconds with its network error
 * (SPLITC_ERR_NETWORK: "network failure ... a peer process died"), never
 * hang in the read.  Nothing here handles the error: the runtime's own
 * report and exit code are what the test checks. */
#include <stdio.h>
#include <unistd.h>

#include "splitc_rt.h"

static int sum;
static int *value; /* static spread data: one int per processor */
__attribute__((constructor)) static void register_value(void) {
    splitc_register_static((void **)&value, sizeof(int), sizeof(int));
}

int splitc_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    *value = 1000 + splitc_myproc();
    splitc_barrier();
    if (splitc_myproc() == 1) {
        fflush(NULL);
        _exit(0);
    }
    if (splitc_myproc() != 0) _exit(0);
    const double t0 = splitc_get_seconds();
    long n = 0;
    while (splitc_get_seconds() - t0 < 20) {
        sum += (int)splitc_read_4(splitc_toglobal(1, value));
        n++;
    }
    printf("splitc_peer_death: NOT detected after %.1f s (%ld reads)\n", splitc_get_seconds() - t0, n);
    return 1;
}
