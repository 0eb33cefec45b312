/* outside_tags.c - tags, returned messages and the handler rules (AM-2 spec
 * sections "Tags", "Error model: returned messages", "Handlers").  Two
 * processes, rank 0 the sender, rank 1 the receiver whose endpoint tag
 * changes.
 *
 *  - a request to an endpoint whose tag does not match comes back to the
 *    sender's handler 0 with EBADTAG and the request's opcode (short, medium,
 *    long), first through the default handler 0 (which reports and goes on),
 *    then through the program's own; AM_GetMsgTag/AM_GetDestEndpoint work on
 *    the returned message's token; the receiver's handler never runs;
 *  - AM_ALL accepts any tag, AM_NONE refuses every tag;
 *  - a request for an unset handler: EBADHANDLER, AM_REQUEST_M; a reply for
 *    an unset handler: the requester's handler 0, EBADHANDLER, AM_REPLY_M;
 *  - inside a handler: AM_Request is refused (the spec forbids requests from
 *    handlers), a second reply is refused, a reply handler cannot reply, a
 *    token kept after its handler returned is refused. */
#include "outside_common.h"

#define H_REQ 20    /* short request, replies with H_REP */
#define H_MED 21    /* medium request */
#define H_LONG 22   /* long request */
#define H_REP 23    /* reply handler: checks that replying from it is refused */
#define H_RULES 24  /* request handler that tries the forbidden things */
#define H_BADREP 25 /* request handler replying to a handler unset at the requester */
#define H_UNSET 77  /* never set anywhere */

static ep_t ep;
static eb_t eb;
static tag_t job_tag;
static volatile int served, replies, returned_count;
static int last_status, last_opcode;
static tag_t last_tag;
static void *kept_token;
static char seg[4096];

static void returned(int status, op_t opcode, void *token) {
    ep_t dest = NULL;
    last_status = status;
    last_opcode = opcode;
    last_tag = 0;
    EXPECT_RC(AM_GetMsgTag(token, &last_tag), AM_OK);
    EXPECT_RC(AM_GetDestEndpoint(token, &dest), AM_OK);
    EXPECT(dest == ep);
    /* a returned message cannot be replied to */
    EXPECT(AM_Reply0(token, H_REP) != AM_OK);
    returned_count++;
}

static void req(void *token, int32_t x) {
    tag_t t = 0;
    EXPECT_RC(AM_GetMsgTag(token, &t), AM_OK);
    EXPECT(t == job_tag);
    served++;
    EXPECT_RC(AM_Reply1(token, H_REP, x + 1), AM_OK);
}
static void med(void *token, void *buf, size_t nbytes, int32_t x) {
    (void)buf;
    (void)nbytes;
    (void)x;
    (void)token;
    served++;
}
static void lng(void *token, void *buf, size_t nbytes, int32_t x) {
    (void)buf;
    (void)nbytes;
    (void)x;
    (void)token;
    served++;
}
static void rep(void *token, int32_t x) {
    (void)x;
    EXPECT_RC(AM_Reply0(token, H_REP), AM_ERR_BAD_ARG); /* replies cannot reply */
    replies++;
}
static void rules(void *token, int32_t x) {
    int rc;
    (void)x;
    /* the spec: a handler may not issue requests */
    rc = AM_Request1(ep, 0, H_REQ, 99);
    EXPECT(rc != AM_OK);
    if (rc == AM_OK) fprintf(stderr, "rank 1: AM_Request1 inside a handler returned AM_OK\n");
    EXPECT(AM_RequestI1(ep, 0, H_MED, seg, 8, 1) != AM_OK);
    EXPECT(AM_RequestXfer1(ep, 0, 0, H_LONG, seg, 8, 1) != AM_OK);
    EXPECT_RC(AM_Reply1(token, H_REP, 7), AM_OK);
    EXPECT_RC(AM_Reply1(token, H_REP, 8), AM_ERR_BAD_ARG); /* at most one reply */
    kept_token = token;
    served++;
}
static void badrep(void *token, int32_t x) {
    (void)x;
    EXPECT_RC(AM_Reply0(token, H_UNSET), AM_OK); /* checked at the requester */
    served++;
}

/* Rank 0 sends one short, one medium and one long request to rank 1 and
 * expects them all back at handler 0 with status. */
static void expect_all_returned(int status) {
    int base = returned_count;
    EXPECT_RC(AM_Request1(ep, 1, H_REQ, 1), AM_OK);
    outside_poll_until(eb, NULL, &returned_count, base + 1, "returned short");
    EXPECT(last_status == status && last_opcode == AM_REQUEST_M && last_tag == job_tag);
    EXPECT_RC(AM_RequestI1(ep, 1, H_MED, seg, 100, 2), AM_OK);
    outside_poll_until(eb, NULL, &returned_count, base + 2, "returned medium");
    EXPECT(last_status == status && last_opcode == AM_REQUEST_IM && last_tag == job_tag);
    EXPECT_RC(AM_RequestXfer1(ep, 1, 64, H_LONG, seg, 100, 3), AM_OK);
    outside_poll_until(eb, NULL, &returned_count, base + 3, "returned long");
    EXPECT(last_status == status && last_opcode == AM_REQUEST_XFER_M && last_tag == job_tag);
}

int main(int argc, char **argv) {
    int me, base;
    tag_t t;

    if (AM_SPMDStartup(&argc, &argv, &eb, &ep) != AM_OK) return 1;
    me = outside_rank = AM_SPMDMyProc();
    if (AM_SPMDNumProcs() != 2) {
        if (me == 0) printf("outside_tags: needs 2 processes\n");
        AM_SPMDExit(1);
    }
    job_tag = AM_SPMDGetTag();
    EXPECT_RC(AM_GetTag(ep, &t), AM_OK);
    EXPECT(t == job_tag);
    EXPECT_RC(AM_SetSeg(ep, seg, sizeof seg), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_REQ, req), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_MED, med), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_LONG, lng), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_REP, rep), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_RULES, rules), AM_OK);
    EXPECT_RC(AM_SetHandler(ep, H_BADREP, badrep), AM_OK);
    AM_SPMDBarrier();

    /* ---- a mismatched tag, through the default handler 0 ---- */
    if (me == 1) EXPECT_RC(AM_SetTag(ep, job_tag ^ 0xbad), AM_OK);
    AM_SPMDBarrier();
    if (me == 0) {
        int r = replies;
        EXPECT_RC(AM_Request1(ep, 1, H_REQ, 1), AM_OK);
        outside_poll_for(eb, 300); /* the default handler reports it; nothing else happens */
        EXPECT(replies == r);
    }
    AM_SPMDBarrier();
    EXPECT(served == 0);

    /* ---- the same with our own handler 0 ---- */
    EXPECT_RC(AM_SetHandler(ep, 0, returned), AM_OK);
    AM_SPMDBarrier();
    if (me == 0) expect_all_returned(EBADTAG);
    AM_SPMDBarrier();
    EXPECT(served == 0);

    /* ---- AM_NONE refuses, AM_ALL accepts ---- */
    if (me == 1) EXPECT_RC(AM_SetTag(ep, AM_NONE), AM_OK);
    AM_SPMDBarrier();
    if (me == 0) expect_all_returned(EBADTAG);
    AM_SPMDBarrier();
    if (me == 1) EXPECT_RC(AM_SetTag(ep, AM_ALL), AM_OK);
    AM_SPMDBarrier();
    if (me == 0) {
        base = replies;
        EXPECT_RC(AM_Request1(ep, 1, H_REQ, 41), AM_OK);
        outside_poll_until(eb, NULL, &replies, base + 1, "reply through AM_ALL");
    }
    AM_SPMDBarrier();
    if (me == 1) {
        EXPECT(served == 1);
        EXPECT_RC(AM_SetTag(ep, job_tag), AM_OK);
    }
    AM_SPMDBarrier();

    /* ---- unset handlers ---- */
    if (me == 0) {
        base = returned_count;
        EXPECT_RC(AM_Request1(ep, 1, H_UNSET, 5), AM_OK);
        outside_poll_until(eb, NULL, &returned_count, base + 1, "EBADHANDLER request");
        EXPECT(last_status == EBADHANDLER && last_opcode == AM_REQUEST_M);
        EXPECT_RC(AM_Request1(ep, 1, H_BADREP, 5), AM_OK);
        outside_poll_until(eb, NULL, &returned_count, base + 2, "EBADHANDLER reply");
        EXPECT(last_status == EBADHANDLER && last_opcode == AM_REPLY_M);
    }
    AM_SPMDBarrier();

    /* ---- the rules inside handlers ---- */
    if (me == 0) {
        base = replies;
        EXPECT_RC(AM_Request1(ep, 1, H_RULES, 0), AM_OK);
        outside_poll_until(eb, NULL, &replies, base + 1, "reply from H_RULES");
        outside_poll_for(eb, 100);
        EXPECT(replies == base + 1); /* exactly one reply */
    }
    AM_SPMDBarrier();
    if (me == 1) {
        en_t n;
        ep_t d;
        EXPECT(kept_token != NULL);
        EXPECT_RC(AM_Reply1(kept_token, H_REP, 9), AM_ERR_BAD_ARG); /* handler returned */
        EXPECT_RC(AM_GetSourceEndpoint(kept_token, &n), AM_ERR_BAD_ARG);
        EXPECT_RC(AM_GetDestEndpoint(NULL, &d), AM_ERR_BAD_ARG);
        EXPECT_RC(AM_Reply0(NULL, H_REP), AM_ERR_BAD_ARG);
    }
    /* the requests refused inside H_RULES went nowhere: rank 0 served nothing */
    AM_SPMDBarrier();
    if (me == 0) EXPECT(served == 0);

    /* ---- handler table bounds ---- */
    EXPECT_RC(AM_SetHandler(NULL, 5, req), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_SetTag(NULL, 5), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_GetTag(ep, NULL), AM_ERR_BAD_ARG);
    {
        handler_t h = 0;
        EXPECT_RC(AM_SetHandlerAny(ep, &h, req), AM_OK);
        EXPECT(h != 0 && h != H_REQ && h != H_REP);
    }

    outside_finish("outside_tags");
    return 0;
}
