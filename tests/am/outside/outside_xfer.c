/* outside_xfer.c - the size limits and bulk transfers into a peer's segment
 * (AM-2 spec sections "System parameters", "Bulk transfers", "Error model").
 * Two processes; each sends to the other.
 *
 *  - AM_MaxShort()/AM_MaxMedium()/AM_MaxLong() exactly: delivered; one over
 *    (one more argument, one more byte): AM_ERR_BAD_ARG at the sender;
 *  - a medium of 0 bytes (no source needed) and a long of 0 bytes;
 *  - AM_RequestXfer and AM_RequestXferAsync into odd offsets of the peer's
 *    segment: the bytes land there, the bytes around them are untouched, and
 *    the handler gets buf = segment + offset;
 *  - a request handler answering with each reply kind (short, medium, long
 *    into the requester's segment at an offset);
 *  - past the segment's end: EBADLENGTH, offset past it: EBADSEGOFF (returned
 *    to the sender's handler 0, opcode AM_REQUEST_XFER_M);
 *  - bad sources and bad indices: AM_ERR_BAD_ARG. */
#include <stdlib.h>

#include "outside_common.h"

#define H_SHORT 30
#define H_MED 31
#define H_LONG 32
#define H_REP_S 33
#define H_REP_M 34
#define H_REP_L 35

#define SEGLEN (3u << 20)
#define GUARD 0xA5

static ep_t ep;
static eb_t eb;
static int me, peer;
static uint8_t *seg;
static uint8_t *src;
static volatile int got, replies, returned_count;
static int last_status, last_opcode;
static size_t last_nbytes;
static uintptr_t last_offset;

static uint8_t pattern(int from, size_t i) { return (uint8_t)(i * 7u + (size_t)from * 101u + 3u); }

static int check_bytes(const uint8_t *p, size_t n, int from) {
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != pattern(from, i)) return 0;
    return 1;
}

static void returned(int status, op_t opcode, void *token) {
    (void)token;
    last_status = status;
    last_opcode = opcode;
    returned_count++;
}

/* a short request with AM_MaxShort() arguments: a[i] == i * 1000 - 7 */
static void h_short(void *token, int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6,
                    int32_t a7, int32_t a8, int32_t a9, int32_t a10, int32_t a11, int32_t a12, int32_t a13, int32_t a14,
                    int32_t a15) {
    int32_t v[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
    int i;
    for (i = 0; i < 16; i++) EXPECT(v[i] == i * 1000 - 7);
    got++;
    EXPECT_RC(AM_Reply1(token, H_REP_S, 16), AM_OK);
}

/* a medium request: check the payload, answer with a medium echo of its first
 * 100 bytes (or nothing) */
static void h_med(void *token, void *buf, size_t nbytes, int32_t from, int32_t want) {
    EXPECT((size_t)want == nbytes);
    EXPECT(nbytes == 0 || check_bytes((const uint8_t *)buf, nbytes, from));
    got++;
    EXPECT_RC(AM_ReplyI1(token, H_REP_M, buf, nbytes < 100 ? nbytes : 100, (int32_t)nbytes), AM_OK);
}

/* a long request: buf must be segment + offset; answer with a long reply into
 * the requester's segment at reply_off */
static void h_long(void *token, void *buf, size_t nbytes, int32_t from, int32_t off, int32_t want, int32_t reply_off) {
    uint8_t echo[64];
    size_t n = nbytes < sizeof echo ? nbytes : sizeof echo;
    EXPECT((size_t)want == nbytes);
    EXPECT((uint8_t *)buf == seg + off);
    EXPECT(check_bytes((const uint8_t *)buf, nbytes, from));
    EXPECT(off == 0 || seg[off - 1] == GUARD);
    EXPECT((size_t)off + nbytes == SEGLEN || seg[off + nbytes] == GUARD);
    memcpy(echo, buf, n);
    got++;
    EXPECT_RC(AM_ReplyXfer1(token, (uintptr_t)reply_off, H_REP_L, echo, n, (int32_t)n), AM_OK);
}

static void h_rep_s(void *token, int32_t n) {
    (void)token;
    EXPECT(n == 16);
    replies++;
}
static void h_rep_m(void *token, void *buf, size_t nbytes, int32_t total) {
    (void)token;
    EXPECT(nbytes == (size_t)(total < 100 ? total : 100));
    EXPECT(nbytes == 0 || check_bytes((const uint8_t *)buf, nbytes, me));
    replies++;
}
static void h_rep_l(void *token, void *buf, size_t nbytes, int32_t n) {
    (void)token;
    last_offset = (uintptr_t)((uint8_t *)buf - seg);
    last_nbytes = nbytes;
    EXPECT((size_t)n == nbytes);
    EXPECT(check_bytes((const uint8_t *)buf, nbytes, me));
    replies++;
}

static void wait_replies(int n, const char *what) { outside_poll_until(eb, NULL, &replies, n, what); }

/* Retries an asynchronous long while it finds no resources (AM_ERR_IN_USE),
 * polling meanwhile; gives up after 10 s. */
static int xfer_async_retry(uintptr_t off, size_t n, int32_t a1, int32_t a2, int32_t a3) {
    double end = outside_now() + 10.0;
    int rc;
    while ((rc = AM_RequestXferAsync4(ep, peer, off, H_LONG, src, n, me, a1, a2, a3)) == AM_ERR_IN_USE &&
           outside_now() < end)
        AM_Poll(eb);
    return rc;
}

/* One long request from rank sender to the other rank's segment at off, its
 * long reply at reply_off in the sender's segment.  One sender at a time, so
 * each segment holds one message's bytes. */
static void long_at(int sender, int async, uintptr_t off, size_t n, uintptr_t reply_off) {
    int base = replies, rc;
    memset(seg, GUARD, SEGLEN);
    AM_SPMDBarrier(); /* both segments reset */
    if (me != sender) {
        AM_SPMDBarrier(); /* serves the request meanwhile */
        return;
    }
    if (async) {
        rc = xfer_async_retry(off, n, (int32_t)off, (int32_t)n, (int32_t)reply_off);
        EXPECT_RC(rc, AM_OK);
    } else {
        EXPECT_RC(AM_RequestXfer4(ep, peer, off, H_LONG, src, n, me, (int32_t)off, (int32_t)n, (int32_t)reply_off),
                  AM_OK);
    }
    wait_replies(base + 1, "long reply");
    EXPECT(last_offset == reply_off);
    EXPECT(last_nbytes == (n < 64 ? n : 64));
    EXPECT(reply_off == 0 || seg[reply_off - 1] == GUARD);
    EXPECT(seg[reply_off + last_nbytes] == GUARD);
    AM_SPMDBarrier(); /* the peer's handler checks ran before the next reset */
}

int main(int argc, char **argv) {
    uintptr_t maxseg = 0;
    size_t i, maxlong = (size_t)AM_MaxLong(), maxmed = (size_t)AM_MaxMedium();
    int base, sender;
    int32_t args17[17];

    if (AM_SPMDStartup(&argc, &argv, &eb, &ep) != AM_OK) return 1;
    me = outside_rank = AM_SPMDMyProc();
    if (AM_SPMDNumProcs() != 2) {
        if (me == 0) printf("outside_xfer: needs 2 processes\n");
        AM_SPMDExit(1);
    }
    peer = 1 - me;

    EXPECT(AM_MaxShort() >= 8 && AM_MaxShort() == 16);
    EXPECT(AM_MaxMedium() >= 512);
    EXPECT(AM_MaxLong() >= 8192);
    EXPECT_RC(AM_MaxSegLength(&maxseg), AM_OK);
    EXPECT(maxseg >= SEGLEN);

    seg = (uint8_t *)malloc(SEGLEN);
    src = (uint8_t *)malloc(maxlong + 1);
    for (i = 0; i < maxlong + 1; i++) src[i] = pattern(me, i);
    memset(seg, GUARD, SEGLEN);
    EXPECT_RC(AM_SetSeg(ep, seg, SEGLEN), AM_OK);
    {
        void *a;
        uintptr_t l;
        EXPECT_RC(AM_GetSeg(ep, &a, &l), AM_OK);
        EXPECT(a == seg && l == SEGLEN);
    }
    EXPECT_RC(AM_SetHandler(ep, 0, returned), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_SHORT, h_short), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_MED, h_med), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_LONG, h_long), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_REP_S, h_rep_s), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_REP_M, h_rep_m), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_REP_L, h_rep_l), AM_OK);
    AM_SPMDBarrier();

    /* ---- shorts: AM_MaxShort() arguments, and one more ---- */
    EXPECT_RC(AM_Request16(ep, peer, H_SHORT, -7, 993, 1993, 2993, 3993, 4993, 5993, 6993, 7993, 8993, 9993, 10993,
                           11993, 12993, 13993, 14993),
              AM_OK);
    wait_replies(1, "short reply");
    for (i = 0; i < 17; i++) args17[i] = (int32_t)i;
    EXPECT_RC(AMVIA_Request(ep, peer, H_SHORT, AM_MaxShort() + 1, args17), AM_ERR_BAD_ARG);
    EXPECT_RC(AMVIA_Request(ep, peer, H_SHORT, -1, args17), AM_ERR_BAD_ARG);

    /* ---- mediums: 0 bytes, 1, 4096 and 4097 (the inline/RDMA edge), the maximum, one over ---- */
    base = replies;
    EXPECT_RC(AM_RequestI2(ep, peer, H_MED, NULL, 0, me, 0), AM_OK);
    EXPECT_RC(AM_RequestI2(ep, peer, H_MED, src, 1, me, 1), AM_OK);
    EXPECT_RC(AM_RequestI2(ep, peer, H_MED, src, 4096, me, 4096), AM_OK);
    EXPECT_RC(AM_RequestI2(ep, peer, H_MED, src, 4097, me, 4097), AM_OK);
    EXPECT_RC(AM_RequestI2(ep, peer, H_MED, src, maxmed, me, (int32_t)maxmed), AM_OK);
    EXPECT_RC(AM_RequestI2(ep, peer, H_MED, src, maxmed + 1, me, (int32_t)maxmed + 1), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_RequestI2(ep, peer, H_MED, NULL, 10, me, 10), AM_ERR_BAD_ARG);
    wait_replies(base + 5, "medium replies");

    /* ---- longs into offsets of the peer's segment ---- */
    for (sender = 0; sender < 2; sender++) {
        long_at(sender, 0, 0, 1, 0);
        long_at(sender, 0, 12345, 1000, 777);
        long_at(sender, 1, 4097, 5000, 1);
        long_at(sender, 0, SEGLEN - 4096, 4096, SEGLEN - 100); /* up to the last byte */
        long_at(sender, 1, 3, maxlong, 100003);                /* AM_MaxLong() bytes, async */
        long_at(sender, 0, SEGLEN - maxlong, maxlong, 4096);
    }
    EXPECT_RC(AM_RequestXfer4(ep, peer, 0, H_LONG, src, maxlong + 1, me, 0, 0, 0), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_RequestXferAsync4(ep, peer, 0, H_LONG, src, maxlong + 1, me, 0, 0, 0), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_RequestXfer4(ep, peer, 0, H_LONG, NULL, 100, me, 0, 0, 0), AM_ERR_BAD_ARG);

    /* a zero-byte long: the handler runs with buf = segment + offset */
    base = replies;
    AM_SPMDBarrier();
    EXPECT_RC(AM_RequestXfer4(ep, peer, 500, H_LONG, src, 0, me, 500, 0, 10), AM_OK);
    wait_replies(base + 1, "zero-byte long reply");
    AM_SPMDBarrier();

    /* ---- past the end of the peer's segment: returned ---- */
    base = returned_count;
    EXPECT_RC(AM_RequestXfer4(ep, peer, SEGLEN - 10, H_LONG, src, 100, me, 0, 100, 0), AM_OK);
    outside_poll_until(eb, NULL, &returned_count, base + 1, "EBADLENGTH");
    EXPECT(last_status == EBADLENGTH && last_opcode == AM_REQUEST_XFER_M);
    EXPECT_RC(AM_RequestXfer4(ep, peer, SEGLEN + 5, H_LONG, src, 1, me, 0, 1, 0), AM_OK);
    outside_poll_until(eb, NULL, &returned_count, base + 2, "EBADSEGOFF");
    EXPECT(last_status == EBADSEGOFF && last_opcode == AM_REQUEST_XFER_M);
    EXPECT_RC(xfer_async_retry(SEGLEN - 1, 2, 0, 2, 0), AM_OK);
    outside_poll_until(eb, NULL, &returned_count, base + 3, "EBADLENGTH async");
    EXPECT(last_status == EBADLENGTH && last_opcode == AM_REQUEST_XFER_M);

    /* ---- bad destinations ---- */
    EXPECT_RC(AM_Request0(ep, -1, H_SHORT), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_Request0(ep, AMVIA_MAX_NUMTRANSLATIONS, H_SHORT), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_Request0(NULL, peer, H_SHORT), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_Request0(ep, peer, 0), AM_ERR_BAD_ARG); /* handler 0 is not a request target */
    base = returned_count;
    EXPECT_RC(AM_Request0(ep, 17, H_SHORT), AM_ERR_NOT_SENT); /* unmapped entry */
    EXPECT(returned_count == base + 1 && last_status == EBADENTRY);

    AM_SPMDBarrier();
    EXPECT_RC(AM_SetSeg(ep, NULL, 0), AM_OK);
    outside_finish("outside_xfer");
    free(src);
    free(seg);
    return 0;
}
