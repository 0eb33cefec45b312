/*
 * outside_edges.c - paths of the VI spec 1.0 a cLAN-era program leans on:
 *   - a server that accepts a request after its client's VipConnectRequest
 *     timed out must not end up connected: VipConnectAccept fails, both VIs
 *     stay Idle, and a fresh request then connects normally;
 *   - a VipRecvNotify handler that re-posts its descriptor and re-arms itself
 *     from inside the handler (the usual receive loop of those programs),
 *     over zero-length sends that carry only immediate data;
 *   - VipConnectPeerRequest that no peer matches: VipConnectPeerWait returns
 *     VIP_TIMEOUT (or VIP_NO_MATCH) and the VI stays Idle;
 *   - a peer request answered after its peer timed out does not leave the
 *     answering VI Connected to the peer's idle VI.
 */
#include <stdatomic.h>
#include <unistd.h>

#include "outside.h"

#define BATCHES 10
#define PER_BATCH 4
#define NRECV PER_BATCH

static VIP_MEM_HANDLE g_mh;
static atomic_int g_got;
static VIP_UINT32 g_imm[BATCHES * PER_BATCH];
static atomic_int g_handler_errors;

static void on_recv(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d) {
    (void)ctx;
    (void)nic;
    int n = atomic_load(&g_got);
    if (!(d->CS.Status & VIP_STATUS_DONE) || (d->CS.Status & VIP_STATUS_ERROR_MASK) ||
        !(d->CS.Status & VIP_STATUS_IMMEDIATE) || d->CS.Length != 0 || n >= BATCHES * PER_BATCH)
        atomic_fetch_add(&g_handler_errors, 1);
    else g_imm[n] = d->CS.ImmediateData;
    /* Re-post the descriptor and re-arm, from inside the handler. */
    memset(d, 0, sizeof(VIP_CONTROL_SEGMENT));
    if (VipPostRecv(vi, d, g_mh) != VIP_SUCCESS) atomic_fetch_add(&g_handler_errors, 1);
    if (n + 1 < BATCHES * PER_BATCH && VipRecvNotify(vi, ctx, on_recv) != VIP_SUCCESS)
        atomic_fetch_add(&g_handler_errors, 1);
    atomic_store(&g_got, n + 1);
}

static VIP_VI_STATE state_of(VIP_VI_HANDLE vi) {
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES a;
    VIP_BOOLEAN s, r;
    CHECK(VipQueryVi(vi, &st, &a, &s, &r));
    return st;
}

int main(void) {
    int rank = outside_join("outside_edges");
    int peer = 1 - rank;
    VIP_NIC_HANDLE nic;
    CHECK(VipOpenNic(NULL, &nic));
    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));
    VIP_MEM_ATTRIBUTES ma = {ptag, VIP_FALSE, VIP_FALSE};
    struct arena ar;
    arena_init(&ar, nic, 1 << 16, &ma);
    g_mh = ar.mh;

    VIP_VI_ATTRIBUTES attrs, ra;
    memset(&attrs, 0, sizeof attrs);
    attrs.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    attrs.MaxTransferSize = 4096;
    attrs.Ptag = ptag;

    /* ---- a peer request matched after its peer gave up ---------------------- */
    /* Rank 0 asks and times out while rank 1 is busy elsewhere (not calling the
     * VIPL: an inline NIC holds rank 0's request and its cancel unread).  Rank 1
     * then asks with the matching discriminators: it must not end up Connected
     * to rank 0's idle VI. */
    VIP_VI_HANDLE late;
    CHECK(VipCreateVi(nic, &attrs, NULL, NULL, &late));
    VIP_NET_ADDRESS *gl = local_addr(nic, "outside-gaveup"), *gp = peer_addr(nic, peer, "outside-gaveup");
    barrier(); /* rank 1 leaves its NIC alone from here (first thing: no notify agent yet) */
    if (rank == 0) {
        CHECK(VipConnectPeerRequest(late, gl, gp, 100));
        EXPECT_RC(VipConnectPeerWait(late, &ra), VIP_TIMEOUT);
        barrier(); /* G1 */
        barrier(); /* G2: rank 1 looked */
        if (state_of(late) != VIP_STATE_IDLE)
            FAIL("the VI whose peer request timed out is in state %d", (int)state_of(late));
    } else {
        barrier(); /* G1: rank 0 timed out; its request and cancel wait unread here */
        CHECK(VipConnectPeerRequest(late, gl, gp, 300));
        VIP_RETURN rc = VipConnectPeerWait(late, &ra);
        printf("outside_edges: peer request matched after the peer gave up: %s\n", VipxReturnString(rc));
        if (rc != VIP_TIMEOUT && rc != VIP_INVALID_STATE && rc != VIP_SUCCESS)
            FAIL("VipConnectPeerWait returned %s", VipxReturnString(rc));
        /* Whatever it returned, the VI may not stay Connected to an idle peer. */
        double deadline = now_ms() + 3000;
        while (state_of(late) == VIP_STATE_CONNECTED) {
            if (now_ms() > deadline) FAIL("VI Connected to a peer VI that is idle (half-open connection)");
            usleep(1000);
        }
        if (rc == VIP_INVALID_STATE && state_of(late) != VIP_STATE_ERROR)
            FAIL("VipConnectPeerWait said VIP_INVALID_STATE, VI in state %d", (int)state_of(late));
        barrier(); /* G2 */
    }
    CHECK(VipDisconnect(late));
    CHECK(VipDestroyVi(late));
    free(gl);
    free(gp);

    /* ---- a late accept ------------------------------------------------------ */
    VIP_VI_HANDLE vi;
    CHECK(VipCreateVi(nic, &attrs, NULL, NULL, &vi));
    if (rank == 0) {
        VIP_NET_ADDRESS *l = local_addr(nic, "outside-late"), *from = new_addr();
        VIP_CONN_HANDLE conn;
        barrier(); /* L0 */
        CHECK(VipConnectWait(nic, l, 10000, from, &ra, &conn));
        barrier();         /* L1: the client's request timed out */
        usleep(50 * 1000); /* (thread mode: its cancel is taken in) */
        VIP_RETURN rc = VipConnectAccept(conn, vi);
        printf("outside_edges: accept after the client timed out: %s\n", VipxReturnString(rc));
        if (rc == VIP_SUCCESS)
            FAIL("VipConnectAccept succeeded for a request its client abandoned (half-open connection)");
        if (state_of(vi) != VIP_STATE_IDLE) FAIL("server VI left in state %d by the failed accept", (int)state_of(vi));
        /* A failed accept leaves the request to the caller: accepting again says
         * the same, rejecting it frees it. */
        EXPECT_RC(VipConnectAccept(conn, vi), rc);
        CHECK(VipConnectReject(conn));
        barrier(); /* B1 */
        CHECK(VipConnectWait(nic, l, 10000, from, &ra, &conn));
        CHECK(VipConnectAccept(conn, vi));
        free(l);
        free(from);
    } else {
        VIP_NET_ADDRESS *l = local_addr(nic, "outside-late-c"), *srv = peer_addr(nic, 0, "outside-late");
        barrier(); /* L0 */
        EXPECT_RC(VipConnectRequest(vi, l, srv, 400, &ra), VIP_TIMEOUT);
        barrier(); /* L1 */
        if (state_of(vi) != VIP_STATE_IDLE)
            FAIL("client VI in state %d after its request timed out", (int)state_of(vi));
        barrier(); /* B1 */
        /* Post the receives the notify loop below uses before connecting. */
        for (int i = 0; i < NRECV; i++) {
            VIP_DESCRIPTOR *d = arena_desc(&ar, 0);
            CHECK(VipPostRecv(vi, d, ar.mh));
        }
        CHECK(VipConnectRequest(vi, l, srv, 10000, &ra));
        free(l);
        free(srv);
    }
    if (state_of(vi) != VIP_STATE_CONNECTED) FAIL("not connected after the second request");

    /* ---- receive loop in a notify handler ------------------------------------ */
    if (rank == 1) CHECK(VipRecvNotify(vi, NULL, on_recv));
    barrier(); /* B2 */
    VIP_DESCRIPTOR *sd = arena_desc(&ar, 0);
    for (int b = 0; b < BATCHES; b++) {
        if (rank == 0) {
            for (int i = 0; i < PER_BATCH; i++) {
                memset(sd, 0, sizeof(VIP_CONTROL_SEGMENT));
                sd->CS.Control = VIP_CONTROL_OP_SENDRECV | VIP_CONTROL_IMMEDIATE;
                sd->CS.ImmediateData = 0xA000u + (VIP_UINT32)(b * PER_BATCH + i);
                CHECK(VipPostSend(vi, sd, ar.mh));
                VIP_DESCRIPTOR *d;
                CHECK(VipSendWait(vi, 10000, &d));
                expect_ok(sd, VIP_STATUS_OP_SEND, "zero-length send with immediate data");
            }
        } else {
            double deadline = now_ms() + 10000;
            while (atomic_load(&g_got) < (b + 1) * PER_BATCH) {
                if (now_ms() > deadline)
                    FAIL("batch %d: handler saw %d of %d messages", b, atomic_load(&g_got), (b + 1) * PER_BATCH);
                usleep(100);
            }
        }
        barrier(); /* the receiver re-posted this batch's descriptors */
    }
    if (rank == 1) {
        if (atomic_load(&g_handler_errors))
            FAIL("%d errors inside the receive handler", atomic_load(&g_handler_errors));
        for (int i = 0; i < BATCHES * PER_BATCH; i++)
            if (g_imm[i] != 0xA000u + (VIP_UINT32)i) FAIL("message %d carried immediate 0x%x", i, g_imm[i]);
        VIP_BOOLEAN s, r;
        VIP_VI_STATE st;
        CHECK(VipQueryVi(vi, &st, &ra, &s, &r));
        if (r) FAIL("the handler's re-posted receives are missing from the queue");
    }
    barrier();
    CHECK(VipDisconnect(vi));
    VIP_DESCRIPTOR *d;
    while (VipRecvDone(vi, &d) == VIP_SUCCESS)
        ;
    CHECK(VipDestroyVi(vi));

    /* ---- a peer request nobody matches -------------------------------------- */
    VIP_VI_HANDLE lonely;
    CHECK(VipCreateVi(nic, &attrs, NULL, NULL, &lonely));
    char mine[32], theirs[32];
    snprintf(mine, sizeof mine, "outside-lonely-%d", rank);
    snprintf(theirs, sizeof theirs, "outside-lonely-%d-x", peer);
    VIP_NET_ADDRESS *l = local_addr(nic, mine), *p = peer_addr(nic, peer, theirs);
    double t0 = now_ms();
    CHECK(VipConnectPeerRequest(lonely, l, p, 150));
    VIP_RETURN rc = VipConnectPeerWait(lonely, &ra);
    double took = now_ms() - t0;
    if (rc != VIP_TIMEOUT && rc != VIP_NO_MATCH)
        FAIL("unmatched peer request: VipConnectPeerWait returned %s", VipxReturnString(rc));
    if (took < 100 || took > 5000) FAIL("unmatched peer request (150 ms timeout) ended after %.0f ms", took);
    if (state_of(lonely) != VIP_STATE_IDLE)
        FAIL("VI in state %d after an unmatched peer request", (int)state_of(lonely));
    CHECK(VipDestroyVi(lonely));
    free(l);
    free(p);

    barrier();
    arena_free(&ar);
    CHECK(VipDestroyPtag(nic, ptag));
    CHECK(VipCloseNic(nic));
    printf("outside_edges: rank %d ok\n", rank);
    vipl_boot_finalize();
    return 0;
}
