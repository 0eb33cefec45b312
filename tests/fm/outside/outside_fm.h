/* outside_fm.h - what the FM programs of tests/fm/outside share: this node and
 * the job's size, a failure report that names the node and the line (the
 * program exits 1, which fails the test), and a return-code check that names
 * the code FM gave and the one the header documents. */
#ifndef OUTSIDE_FM_H
#define OUTSIDE_FM_H

#include <stdio.h>
#include <stdlib.h>

#include "fm.h"

static unsigned me, nodes;

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, "node %u: %s:%d: ", me, __FILE__, __LINE__);                                                   \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fputc('\n', stderr);                                                                                           \
        exit(1);                                                                                                       \
    } while (0)

#define EXPECT(call, want)                                                                                             \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != (want)) FAIL("%s returned %d (%s), expected %s", #call, rc_, FM_error_name(rc_), #want);            \
    } while (0)

/* FM_initialize, then this node and the job's size; exits 1 if FM cannot start. */
static void outside_fm_start(void) {
    int rc = FM_initialize();
    if (rc != FM_OK) {
        fprintf(stderr, "FM_initialize: %s\n", FM_error_name(rc));
        exit(1);
    }
    me = FM_nodeid();
    nodes = FM_numnodes();
}

#endif
