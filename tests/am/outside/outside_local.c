/* outside_local.c - two endpoints of one process in two bundles talking to
 * each other (AM-2 spec: "Endpoints and bundles" - any endpoint may map any
 * other, whichever bundle or process holds it; a program polls the bundles
 * it owns).  Each rank on its own: endpoint a in bundle A, endpoint b in
 * bundle B, mapped both ways.  The FIRST messages between them are the kinds
 * that need the layer to learn something about the other endpoint (its
 * segment for a long message, its receive ring for a medium above 4096
 * bytes), sent while the program is inside a call on the other bundle:
 *
 *  1. a long request a -> b (the program is in AM_RequestXfer on A);
 *  2. a medium request of AM_MaxMedium() bytes b -> a (in AM_RequestI on B);
 *  3. b's request handler, run by AM_Poll(B), answering a with a medium
 *     reply of 5000 bytes (in a handler of B) - the first reply b sends a.
 *
 * Each used to wait forever: the layer waited for an answer that only the
 * bundle the program was not polling could give. */
#include <stdlib.h>

#include "outside_common.h"

#define H_LONG 50
#define H_MED 51
#define H_REP 52
#define SEGLEN 65536

static ep_t a, b;
static eb_t A, B;
static uint8_t seg_a[SEGLEN], seg_b[SEGLEN];
static volatile int longs, meds, reps;

static void h_long(void *token, void *buf, size_t nbytes, int32_t x) {
    ep_t d = NULL;
    EXPECT_RC(AM_GetDestEndpoint(token, &d), AM_OK);
    EXPECT(d == b && buf == seg_b + 512 && nbytes == 10000 && x == 1);
    EXPECT(((uint8_t *)buf)[9999] == 0x11);
    longs++;
    /* the first reply b sends a: a medium above 4096 bytes, from inside B's handler */
    EXPECT_RC(AM_ReplyI1(token, H_REP, buf, 5000, 3), AM_OK);
}
static void h_med(void *token, void *buf, size_t nbytes, int32_t x) {
    ep_t d = NULL;
    EXPECT_RC(AM_GetDestEndpoint(token, &d), AM_OK);
    EXPECT(d == a && nbytes == (size_t)AM_MaxMedium() && x == 2);
    EXPECT(((uint8_t *)buf)[nbytes - 1] == 0x22);
    meds++;
    EXPECT_RC(AM_Reply1(token, H_REP, 4), AM_OK);
}
static void h_rep(void *token, int32_t x) {
    ep_t d = NULL;
    EXPECT_RC(AM_GetDestEndpoint(token, &d), AM_OK);
    EXPECT((x == 4 && d == b) || (x == 3 && d == a));
    reps++;
}
static void h_rep_m(void *token, void *buf, size_t nbytes, int32_t x) {
    EXPECT(nbytes == 5000 && ((uint8_t *)buf)[4999] == 0x11);
    h_rep(token, x);
}

static void setup(eb_t *bundle, ep_t *ep, en_t *name, void *seg, tag_t tag) {
    EXPECT_RC(AM_AllocateBundle(AM_SEQ, bundle), AM_OK);
    EXPECT_RC(AM_AllocateEndpoint(*bundle, ep, name), AM_OK);
    EXPECT_RC(AM_SetTag(*ep, tag), AM_OK);
    EXPECT_RC(AM_SetSeg(*ep, seg, SEGLEN), AM_OK);
    EXPECT_RC(AM_SetHandler(*ep, H_LONG, h_long), AM_OK);
    EXPECT_RC(AM_SetHandler(*ep, H_MED, h_med), AM_OK);
}

int main(int argc, char **argv) {
    eb_t eb0;
    ep_t ep0;
    en_t na, nb;
    uint8_t *src;

    if (AM_SPMDStartup(&argc, &argv, &eb0, &ep0) != AM_OK) return 1;
    outside_rank = AM_SPMDMyProc();
    setup(&A, &a, &na, seg_a, 0xa);
    setup(&B, &b, &nb, seg_b, 0xb);
    EXPECT_RC(AM_SetHandler(a, H_REP, h_rep_m), AM_OK); /* a gets b's medium reply */
    EXPECT_RC(AM_SetHandler(b, H_REP, h_rep), AM_OK);   /* b gets a's short reply */
    EXPECT_RC(AM_Map(a, 0, nb, 0xb), AM_OK);
    EXPECT_RC(AM_Map(b, 0, na, 0xa), AM_OK);

    src = (uint8_t *)malloc((size_t)AM_MaxMedium());
    memset(src, 0x11, 10000);
    /* 1 and 3: the program is in a call on A; B answers the layer's questions */
    EXPECT_RC(AM_RequestXfer1(a, 0, 512, H_LONG, src, 10000, 1), AM_OK);
    outside_poll_until(B, A, &reps, 1, "b's medium reply");
    EXPECT(longs == 1);
    /* 2: the program is in a call on B */
    memset(src, 0x22, (size_t)AM_MaxMedium());
    EXPECT_RC(AM_RequestI1(b, 0, H_MED, src, (size_t)AM_MaxMedium(), 2), AM_OK);
    outside_poll_until(A, B, &reps, 2, "a's reply");
    EXPECT(meds == 1);
    free(src);

    EXPECT_RC(AM_FreeBundle(A), AM_OK);
    EXPECT_RC(AM_FreeBundle(B), AM_OK);
    outside_finish("outside_local");
    return 0;
}
