/*
 * outside_bip_ring.c - a BIP program written from [BIP], the BIP user manual's
 * model and bip.h alone.
 *
 * Phase 1, a ring: every rank sends its right neighbour small messages on
 * tags 5, 3, 9, 11, 12 and a long one (above bip_eager_max) on tag 7; the
 * neighbour receives them in another tag order (9, 3, 5, 12, then 11 with
 * bip_irecv/bip_rtest once it has surely arrived), and the long one with the
 * receive posted first (bip_irecv, bip_send, bip_rwait), as bip.h says two
 * ranks sending long messages to each other must.  Three rounds.
 *
 * Phase 2, pairs (0->1, 2->3): a long bip_isend whose receive is posted only
 * after its request has arrived.  The sender checks that the send does not
 * complete before the receiver said it is about to post, and that a second
 * send meanwhile is BIP_ERR_PENDING; the receiver probes with bip_rtest.
 *
 * Run: vipl-run -n 2|4 outside_bip_ring
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outside_bip.h"

#define OK(call)                                                                                                       \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ < 0) FAIL("%s: %d (%s)", #call, rc_, bip_error_name(rc_));                                             \
    } while (0)

static unsigned char pat(int src, int tag, int round, size_t i) {
    return (unsigned char)(src * 17 + tag * 5 + round * 3 + i * 7 + (i >> 9));
}

static void fill(unsigned char *b, size_t len, int src, int tag, int round) {
    for (size_t i = 0; i < len; i++) b[i] = pat(src, tag, round, i);
}

static void check(const unsigned char *b, size_t len, int src, int tag, int round) {
    for (size_t i = 0; i < len; i++)
        if (b[i] != pat(src, tag, round, i))
            FAIL("tag %d round %d from %d: byte %zu is %u, expected %u", tag, round, src, i, b[i],
                 pat(src, tag, round, i));
}

/* Blocking receive on tag that must come from `from` with `len` bytes. */
static void recv_check(int tag, unsigned char *b, size_t maxlen, int from, size_t len, int round) {
    size_t got = 0;
    int src = bip_recv(tag, b, maxlen, &got);
    if (src < 0) FAIL("bip_recv(tag %d): %s", tag, bip_error_name(src));
    if (src != from || got != len) FAIL("tag %d: from %d len %zu, expected %d / %zu", tag, src, got, from, len);
    check(b, len, src, tag, round);
}

int main(void) {
    outside_bip_start();
    int rc;
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long eager = bip_eager_max(right);
    if (eager < 0) FAIL("bip_eager_max: %ld", eager);
    /* Long: well above the switch point and not a multiple of a fragment. */
    size_t long_len = (size_t)eager * 4 + 12345;
    unsigned char *sbuf = malloc(long_len), *rbuf = malloc(long_len + 64);
    if (!sbuf || !rbuf) FAIL("malloc");

    static const struct {
        int tag;
        size_t len;
    } smalls[] = {{5, 1}, {3, 0}, {9, 1000}, {11, 333}, {12, 4}};
    static const int recv_order[] = {9, 3, 5, 12};

    for (int round = 0; round < 3; round++) {
        /* Sends: small messages are buffered by the receiver, so they complete
         * without any receive posted (the receiver keeps 8 per sender). */
        for (unsigned k = 0; k < sizeof smalls / sizeof smalls[0]; k++) {
            size_t len = smalls[k].len;
            if (len > (size_t)eager) FAIL("switch point %ld below %zu", eager, len);
            fill(sbuf, len, me, smalls[k].tag, round);
            OK(bip_send(right, smalls[k].tag, len ? sbuf : NULL, len));
        }
        /* Tags out of order. */
        for (unsigned k = 0; k < 4; k++) {
            int tag = recv_order[k];
            size_t len = 0;
            for (unsigned j = 0; j < sizeof smalls / sizeof smalls[0]; j++)
                if (smalls[j].tag == tag) len = smalls[j].len;
            recv_check(tag, rbuf, long_len + 64, left, len, round);
        }
        /* Tag 11 was sent before tag 12, which has been received: it is here.
         * Post the receive now and probe. */
        OK(bip_irecv(11, rbuf, 1000));
        int src = -1;
        size_t len = 0;
        long polls = 0;
        while ((rc = bip_rtest(&src, &len)) == 0)
            if (++polls > 100000000L) FAIL("bip_rtest never completed");
        if (rc != 1) FAIL("bip_rtest: %s", bip_error_name(rc));
        if (src != left || len != 333) FAIL("tag 11: from %d len %zu", src, len);
        check(rbuf, 333, left, 11, round);
        if (bip_rtest(NULL, NULL) != BIP_ERR_NO_PENDING) FAIL("bip_rtest after completion");

        /* Long messages around the ring: receive posted before the send. */
        fill(sbuf, long_len, me, 7, round);
        OK(bip_irecv(7, rbuf, long_len + 64));
        OK(bip_send(right, 7, sbuf, long_len));
        src = bip_rwait(&len);
        if (src != left || len != long_len) FAIL("long: from %d len %zu", src, len);
        check(rbuf, long_len, left, 7, round);
    }

    /* Phase 2: pairs, the receive posted after the long send's request arrived. */
    if (n % 2 == 0) {
        int peer = me ^ 1;
        long peer_eager = bip_eager_max(peer);
        size_t L = (size_t)peer_eager + 1;
        if (me % 2 == 0) {
            char note[8];
            fill(sbuf, L, me, 13, 9);
            OK(bip_irecv(14, note, sizeof note));
            OK(bip_isend(peer, 13, sbuf, L));
            rc = bip_send(peer, 15, note, 1);
            if (rc != BIP_ERR_PENDING) FAIL("bip_send with an isend pending: %d", rc);
            rc = bip_isend(peer, 15, note, 1);
            if (rc != BIP_ERR_PENDING) FAIL("bip_isend with an isend pending: %d", rc);
            int note_done = 0, nsrc = -1;
            size_t nlen = 0;
            for (;;) {
                rc = bip_stest();
                if (rc < 0) FAIL("bip_stest: %s", bip_error_name(rc));
                if (rc == 1) break;
                if (!note_done) {
                    int r2 = bip_rtest(&nsrc, &nlen);
                    if (r2 < 0) FAIL("bip_rtest(note): %s", bip_error_name(r2));
                    note_done = r2;
                }
            }
            /* The peer's note went out before its receive was posted, on the
             * same connection: it arrived before the send could complete. */
            if (!note_done) {
                rc = bip_rtest(&nsrc, &nlen);
                if (rc != 1) FAIL("long send completed before the receiver's note arrived (%d)", rc);
            }
            if (nsrc != peer || nlen != 4 || memcmp(note, "post", 4) != 0) FAIL("note: from %d len %zu", nsrc, nlen);
            if (bip_stest() != BIP_ERR_NO_PENDING) FAIL("bip_stest after completion");
        } else {
            usleep(20000); /* the request is here by now (or soon: it is queued either way) */
            OK(bip_send(peer, 14, "post", 4));
            memset(rbuf, 0, L);
            OK(bip_irecv(13, rbuf, L + 64));
            int src = -1;
            size_t len = 0;
            while ((rc = bip_rtest(&src, &len)) == 0) {}
            if (rc != 1) FAIL("bip_rtest(long): %s", bip_error_name(rc));
            if (src != peer || len != L) FAIL("long: from %d len %zu", src, len);
            check(rbuf, L, peer, 13, 9);
        }
    }

    rc = bip_finalize();
    if (rc != BIP_OK) FAIL("bip_finalize: %s", bip_error_name(rc));
    if (me == 0) printf("outside_bip_ring: %d ranks, long messages of %zu bytes, ok\n", n, long_len);
    free(sbuf);
    free(rbuf);
    return 0;
}
