/* outside_bundles.c - several endpoints in one bundle and in two bundles, the
 * translation table, tags per endpoint, and AM_Poll on a bundle with no
 * endpoints (AM-2 spec sections "Endpoints and bundles", "Translation
 * table", "Tags", "Message interrogation").  Two processes.
 *
 * Each process makes bundle A with endpoints a0 and a1 and bundle B with b0,
 * each endpoint with its own tag, and maps all three of the peer's endpoints
 * at translation indices 0, 1, 2 of each of its own.  Every endpoint sends a
 * request to every peer endpoint; handlers check AM_GetDestEndpoint,
 * AM_GetSourceEndpoint and AM_GetMsgTag.  A message for B must not be run by
 * polling A; AM_WaitSema(B) wakes for it. */
#include <stdlib.h>

#include "outside_common.h"

#define NEP 3
#define H_PING 10
#define H_PONG 11

static ep_t eps[NEP];
static en_t my_names[NEP], peer_names[NEP];
static tag_t my_tags[NEP], peer_tags[NEP];
static volatile int pings[NEP], pongs[NEP];
static volatile int pings_total, pongs_total;

static int local_index(ep_t ep) {
    int i;
    for (i = 0; i < NEP; i++)
        if (eps[i] == ep) return i;
    return -1;
}

/* a0 = sender's endpoint index, a1 = the index it used (the peer endpoint) */
static void ping(void *token, int32_t from, int32_t to, int32_t magic) {
    ep_t dest = NULL;
    en_t src;
    tag_t tag = 0;
    int d;
    EXPECT_RC(AM_GetDestEndpoint(token, &dest), AM_OK);
    EXPECT_RC(AM_GetSourceEndpoint(token, &src), AM_OK);
    EXPECT_RC(AM_GetMsgTag(token, &tag), AM_OK);
    d = local_index(dest);
    EXPECT(d == to);
    EXPECT(from >= 0 && from < NEP && outside_same_name(&src, &peer_names[from]));
    EXPECT(d >= 0 && tag == my_tags[d]);
    EXPECT(magic == 0x5eed + from * 10 + to);
    if (d >= 0) pings[d]++;
    pings_total++;
    /* reply to the sender: the reply goes back to the endpoint that sent */
    EXPECT_RC(AM_Reply2(token, H_PONG, to, from), AM_OK);
}

static void pong(void *token, int32_t from, int32_t to) {
    ep_t dest = NULL;
    en_t src;
    EXPECT_RC(AM_GetDestEndpoint(token, &dest), AM_OK);
    EXPECT_RC(AM_GetSourceEndpoint(token, &src), AM_OK);
    EXPECT(local_index(dest) == to);
    EXPECT(from >= 0 && from < NEP && outside_same_name(&src, &peer_names[from]));
    if (local_index(dest) >= 0) pongs[local_index(dest)]++;
    pongs_total++;
}

int main(int argc, char **argv) {
    eb_t eb0, A, B, empty, c_bundle;
    ep_t ep0, c;
    en_t name;
    en_t all_names[2 * NEP];
    tag_t all_tags[2 * NEP];
    int me, np, i, j, n, idx, mask;
    tag_t t;

    if (AM_SPMDStartup(&argc, &argv, &eb0, &ep0) != AM_OK) return 1;
    me = outside_rank = AM_SPMDMyProc();
    np = AM_SPMDNumProcs();
    if (np != 2) {
        if (me == 0) printf("outside_bundles: needs 2 processes\n");
        AM_SPMDExit(1);
    }

    /* A bundle with no endpoints: polling it is fine and does nothing. */
    EXPECT_RC(AM_AllocateBundle(AM_SEQ, &empty), AM_OK);
    EXPECT_RC(AM_Poll(empty), AM_OK);
    EXPECT_RC(AM_GetEventMask(empty, &mask), AM_OK);
    EXPECT(mask == AM_NOEVENTS);
    EXPECT_RC(AM_SetEventMask(empty, AM_NOTEMPTY), AM_OK);
    EXPECT_RC(AM_SetEventMask(empty, AM_NUMEVENTMASKS), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_FreeBundle(empty), AM_OK);
    EXPECT_RC(AM_Poll(empty), AM_ERR_BAD_ARG); /* stale handle */
    EXPECT_RC(AM_FreeBundle(empty), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_AllocateBundle(AM_NUM_BUNDLE_MODES, &empty), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_AllocateBundle(AM_SEQ, NULL), AM_ERR_BAD_ARG);

    EXPECT_RC(AM_AllocateBundle(AM_SEQ, &A), AM_OK);
    EXPECT_RC(AM_AllocateBundle(AM_SEQ, &B), AM_OK);
    EXPECT_RC(AM_AllocateEndpoint(A, &eps[0], &my_names[0]), AM_OK);
    EXPECT_RC(AM_AllocateEndpoint(A, &eps[1], &my_names[1]), AM_OK);
    EXPECT_RC(AM_AllocateEndpoint(B, &eps[2], &my_names[2]), AM_OK);
    EXPECT_RC(AM_AllocateEndpoint(NULL, &c, &name), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_AllocateEndpoint(A, NULL, &name), AM_ERR_BAD_ARG);
    EXPECT(!outside_same_name(&my_names[0], &my_names[1]));

    for (i = 0; i < NEP; i++) {
        /* a new endpoint's tag is AM_NONE (refuses everything) */
        EXPECT_RC(AM_GetTag(eps[i], &t), AM_OK);
        EXPECT(t == AM_NONE);
        my_tags[i] = 0x7a60000000ull + (tag_t)me * 16 + (tag_t)i;
        EXPECT_RC(AM_SetTag(eps[i], my_tags[i]), AM_OK);
        EXPECT_RC(AM_GetTag(eps[i], &t), AM_OK);
        EXPECT(t == my_tags[i]);
        EXPECT_RC(AM_SetHandler(eps[i], H_PING, ping), AM_OK);
        EXPECT_RC(AM_SetHandler(eps[i], H_PONG, pong), AM_OK);
    }

    AM_SPMDAllGather(my_names, all_names, sizeof my_names);
    AM_SPMDAllGather(my_tags, all_tags, sizeof my_tags);
    for (i = 0; i < NEP; i++) {
        peer_names[i] = all_names[(1 - me) * NEP + i];
        peer_tags[i] = all_tags[(1 - me) * NEP + i];
    }

    /* ---- translation table ---- */
    EXPECT_RC(AM_GetNumTranslations(eps[0], &n), AM_OK);
    EXPECT(n == AMVIA_MAX_NUMTRANSLATIONS);
    EXPECT_RC(AM_GetTranslationInuse(eps[0], 5), AM_ERR_RESOURCE);
    EXPECT_RC(AM_SetExpectedResources(eps[0], NEP, 4), AM_OK);
    for (i = 0; i < NEP; i++)
        for (j = 0; j < NEP; j++) EXPECT_RC(AM_Map(eps[i], j, peer_names[j], peer_tags[j]), AM_OK);
    for (j = 0; j < NEP; j++) {
        EXPECT_RC(AM_GetTranslationInuse(eps[1], j), AM_OK);
        EXPECT_RC(AM_GetTranslationTag(eps[1], j, &t), AM_OK);
        EXPECT(t == peer_tags[j]);
        EXPECT_RC(AM_GetTranslationName(eps[1], j, &name), AM_OK);
        EXPECT(outside_same_name(&name, &peer_names[j]));
    }
    EXPECT_RC(AM_GetTranslationTag(eps[1], 7, &t), AM_ERR_RESOURCE);            /* unused entry */
    EXPECT_RC(AM_Map(eps[0], 0, peer_names[1], peer_tags[1]), AM_ERR_RESOURCE); /* in use */
    EXPECT_RC(AM_Map(eps[0], -1, peer_names[1], peer_tags[1]), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_Map(eps[0], n, peer_names[1], peer_tags[1]), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_GetTranslationInuse(eps[0], n), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_UnMap(eps[0], -1), AM_ERR_BAD_ARG);
    /* AM_MapAny: a second index naming the same peer endpoint */
    idx = -1;
    EXPECT_RC(AM_MapAny(eps[0], &idx, peer_names[0], peer_tags[0]), AM_OK);
    EXPECT(idx >= NEP && idx < n);
    EXPECT_RC(AM_GetTranslationInuse(eps[0], idx), AM_OK);
    EXPECT_RC(AM_MapAny(eps[0], NULL, peer_names[0], peer_tags[0]), AM_ERR_BAD_ARG);
    /* a larger table, an entry near its end, and no shrinking below it */
    EXPECT_RC(AM_SetNumTranslations(eps[1], 300), AM_OK);
    EXPECT_RC(AM_GetNumTranslations(eps[1], &n), AM_OK);
    EXPECT(n == 300);
    EXPECT_RC(AM_Map(eps[1], 299, peer_names[2], peer_tags[2]), AM_OK);
    EXPECT(AM_SetNumTranslations(eps[1], 100) != AM_OK);
    /* over AM_MaxNumTranslations: refused (AMUDP says RESOURCE, viastack BAD_ARG) */
    EXPECT(AM_SetNumTranslations(eps[1], AMVIA_MAX_TRANSLATIONS_LIMIT + 1) != AM_OK);

    AM_SPMDBarrier();

    /* ---- every endpoint to every peer endpoint; the extra indices too ---- */
    for (i = 0; i < NEP; i++)
        for (j = 0; j < NEP; j++) EXPECT_RC(AM_Request3(eps[i], j, H_PING, i, j, 0x5eed + i * 10 + j), AM_OK);
    EXPECT_RC(AM_Request3(eps[0], idx, H_PING, 0, 0, 0x5eed), AM_OK);
    EXPECT_RC(AM_Request3(eps[1], 299, H_PING, 1, 2, 0x5eed + 12), AM_OK);
    outside_poll_until(A, B, &pongs_total, NEP * NEP + 2, "pongs");
    outside_poll_until(A, B, &pings_total, NEP * NEP + 2, "pings");
    EXPECT(pings[0] == 4 && pings[1] == 3 && pings[2] == 4);
    EXPECT(pongs[0] == 4 && pongs[1] == 4 && pongs[2] == 3);

    /* unmapping the extra entries leaves the links of the others working */
    EXPECT_RC(AM_UnMap(eps[0], idx), AM_OK);
    EXPECT_RC(AM_GetTranslationInuse(eps[0], idx), AM_ERR_RESOURCE);
    EXPECT(AM_UnMap(eps[0], idx) != AM_OK);
    EXPECT_RC(AM_UnMap(eps[1], 299), AM_OK);
    EXPECT_RC(AM_SetNumTranslations(eps[1], 100), AM_OK);

    AM_SPMDBarrier();

    /* ---- bundle isolation: a message for B waits until B is polled ---- */
    if (me == 0) {
        EXPECT_RC(AM_Request3(eps[0], 2, H_PING, 0, 2, 0x5eed + 2), AM_OK);
        outside_poll_until(A, NULL, &pongs_total, NEP * NEP + 3, "pong from b0");
    } else {
        int before = pings[2];
        outside_poll_for(A, 200);
        EXPECT(pings[2] == before); /* polling A must not run B's handlers */
        EXPECT_RC(AM_SetEventMask(B, AM_NOTEMPTY), AM_OK);
        EXPECT_RC(AM_WaitSema(B), AM_OK);
        EXPECT_RC(AM_GetEventMask(B, &mask), AM_OK);
        EXPECT(mask == AM_NOEVENTS); /* one-shot */
        outside_poll_until(B, NULL, &pings[2], before + 1, "ping for b0");
        EXPECT_RC(AM_WaitSema(B), AM_ERR_BAD_ARG); /* no event set: would wait forever */
    }

    AM_SPMDBarrier();

    /* ---- moving an endpoint between bundles ---- */
    EXPECT_RC(AM_AllocateBundle(AM_SEQ, &c_bundle), AM_OK);
    EXPECT_RC(AM_AllocateEndpoint(A, &c, &name), AM_OK);
    EXPECT_RC(AM_MoveEndpoint(c, A, c_bundle), AM_OK);
    EXPECT(AM_MoveEndpoint(c, A, c_bundle) != AM_OK);          /* c is no longer in A */
    EXPECT_RC(AM_MoveEndpoint(eps[0], A, B), AM_ERR_RESOURCE); /* has MAP connections */
    EXPECT_RC(AM_FreeEndpoint(c), AM_OK);
    EXPECT_RC(AM_FreeEndpoint(c), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_FreeBundle(c_bundle), AM_OK);

    AM_SPMDBarrier();

    /* ---- tear down: an endpoint, then a bundle holding one ---- */
    EXPECT_RC(AM_FreeEndpoint(eps[1]), AM_OK);
    EXPECT_RC(AM_SetTag(eps[1], 5), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_Poll(A), AM_OK);
    EXPECT_RC(AM_FreeBundle(B), AM_OK);
    EXPECT_RC(AM_GetTag(eps[2], &t), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_Poll(B), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_FreeBundle(A), AM_OK);

    outside_finish("outside_bundles");
    return 0;
}
