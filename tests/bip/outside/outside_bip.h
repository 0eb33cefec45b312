/* outside_bip.h - what the BIP programs of tests/bip/outside share: this rank
 * and the job's size, a failure report that names the rank and the line (the
 * program exits 1, which fails the test), and a return-code check that names
 * the code BIP gave and the one the header documents. */
#ifndef OUTSIDE_BIP_H
#define OUTSIDE_BIP_H

#include <stdio.h>
#include <stdlib.h>

#include "bip.h"

static int me = -1, n;

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, "rank %d: %s:%d: ", me, __FILE__, __LINE__);                                                   \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fputc('\n', stderr);                                                                                           \
        exit(1);                                                                                                       \
    } while (0)

#define EXPECT(call, want)                                                                                             \
    do {                                                                                                               \
        long rc_ = (long)(call);                                                                                       \
        if (rc_ != (long)(want))                                                                                       \
            FAIL("%s returned %ld (%s), expected %s", #call, rc_, bip_error_name((int)rc_), #want);                    \
    } while (0)

/* bip_init, then this rank and the job's size; exits 1 if BIP cannot start. */
static void outside_bip_start(void) {
    int rc = bip_init();
    if (rc != BIP_OK) {
        fprintf(stderr, "bip_init: %s\n", bip_error_name(rc));
        exit(1);
    }
    me = bip_mynode();
    n = bip_numnodes();
}

#endif
