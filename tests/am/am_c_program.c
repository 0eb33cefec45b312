/* am_c_program.c - an AM-2 program in plain C, written as for the amx
 * headers (AMUDP/AMMPI): checks that am.h compiles as C and that the classic
 * calling sequence works.  One process: the endpoint maps itself. */
#include <stdio.h>
#include <string.h>

#include "am.h"

static int pongs, bad;
static char seg[8192];

static void ping(void *token, int32_t a, int32_t b) { AM_Reply2(token, 2, a + b, a - b); }
static void pong(void *token, int32_t sum, int32_t diff) {
    if (sum != 7 || diff != 3) bad++;
    pongs++;
}
static void put(void *token, void *buf, int nbytes, int32_t tag) { /* int nbytes, as in old amx code */
    if (nbytes != 5 || memcmp(buf, "hello", 5) != 0 || tag != 99) bad++;
    AM_Reply0(token, 4);
}
static void put_done(void *token) { pongs++; }

int main(void) {
    eb_t eb;
    ep_t ep;
    en_t name;
    tag_t tag = 0x5eed;
    int rc = AM_Init();
    if (rc == AM_OK) rc = AM_AllocateBundle(AM_SEQ, &eb);
    if (rc == AM_OK) rc = AM_AllocateEndpoint(eb, &ep, &name);
    if (rc == AM_OK) rc = AM_SetTag(ep, tag);
    if (rc == AM_OK) rc = AM_SetSeg(ep, seg, sizeof seg);
    if (rc == AM_OK) rc = AM_Map(ep, 0, name, tag);
    if (rc == AM_OK) rc = AM_SetHandler(ep, 1, ping);
    if (rc == AM_OK) rc = AM_SetHandler(ep, 2, pong);
    if (rc == AM_OK) rc = AM_SetHandler(ep, 3, put);
    if (rc == AM_OK) rc = AM_SetHandler(ep, 4, put_done);
    if (rc != AM_OK) {
        fprintf(stderr, "set-up failed: %s\n", AMVIA_ErrorName(rc));
        return 1;
    }
    for (int i = 0; i < 100; i++) {
        if (AM_Request2(ep, 0, 1, 5, 2) != AM_OK) return 1;
        while (pongs == i) AM_Poll(eb);
    }
    if (AM_RequestXfer1(ep, 0, 100, 3, "hello", 5, 99) != AM_OK) return 1;
    while (pongs == 100) AM_Poll(eb);
    if (memcmp(seg + 100, "hello", 5) != 0) bad++;
    AM_Terminate();
    printf("%d round trips, %d bad\n", pongs, bad);
    return bad != 0 || pongs != 101;
}
