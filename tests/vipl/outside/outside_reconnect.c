/*
 * outside_reconnect.c - several connections through one server discriminator,
 * and VIs used again after a disconnect (VI spec 1.0, connection management):
 *   - the client asks for two connections at once (two threads, two VIs, the
 *     same server discriminator, its own discriminators "cli-0" / "cli-1");
 *   - the server waits for both, tells them apart by the discriminator in
 *     RemoteAddr, and accepts them in the opposite order; each server VI then
 *     talks to the client VI it accepted, not the other one;
 *   - both sides disconnect, then the same VIs connect again, crosswise and
 *     peer to peer, and exchange messages: nothing of the first connections
 *     shows up on the second.
 */
#include <pthread.h>

#include "outside.h"

#define MSG 64
#define NMSG 8

static VIP_NIC_HANDLE g_nic;
static struct arena g_ar;
static VIP_VI_HANDLE g_vi[2];
static VIP_DESCRIPTOR *g_rd[2][NMSG];
static char *g_rbuf[2][NMSG];
static VIP_DESCRIPTOR *g_sd;
static char *g_sbuf;

static void post_receives(int v) {
    for (int i = 0; i < NMSG; i++) {
        memset(g_rd[v][i], 0, sizeof(VIP_CONTROL_SEGMENT));
        g_rd[v][i]->CS.SegCount = 1;
        g_rd[v][i]->CS.Length = MSG;
        memset(g_rbuf[v][i], 0, MSG);
        set_seg(g_rd[v][i], 0, g_rbuf[v][i], MSG, g_ar.mh);
        CHECK(VipPostRecv(g_vi[v], g_rd[v][i], g_ar.mh));
    }
}

static void send_msg(int v, const char *text) {
    strcpy(g_sbuf, text);
    memset(g_sd, 0, sizeof(VIP_CONTROL_SEGMENT));
    g_sd->CS.SegCount = 1;
    g_sd->CS.Length = (VIP_UINT32)strlen(text) + 1;
    set_seg(g_sd, 0, g_sbuf, g_sd->CS.Length, g_ar.mh);
    CHECK(VipPostSend(g_vi[v], g_sd, g_ar.mh));
    VIP_DESCRIPTOR *d;
    CHECK(VipSendWait(g_vi[v], 10000, &d));
    expect_ok(g_sd, VIP_STATUS_OP_SEND, text);
}

static void expect_msg(int v, int i, const char *text) {
    VIP_DESCRIPTOR *d;
    CHECK(VipRecvWait(g_vi[v], 10000, &d));
    if (d != g_rd[v][i]) FAIL("VI %d: receive %d came back out of order", v, i);
    expect_ok(d, VIP_STATUS_OP_RECEIVE, text);
    if (strcmp(g_rbuf[v][i], text)) FAIL("VI %d receive %d: got '%.*s', expected '%s'", v, i, MSG, g_rbuf[v][i], text);
}

/* Disconnect and take back every receive still posted (flushed). */
static void disconnect_and_drain(int v) {
    CHECK(VipDisconnect(g_vi[v]));
    VIP_DESCRIPTOR *d;
    while (VipRecvDone(g_vi[v], &d) == VIP_SUCCESS)
        if (!(d->CS.Status & VIP_STATUS_ERROR_MASK))
            FAIL("VI %d: a receive completed without error at disconnect: '%.*s'", v, MSG,
                 (char *)d->DS[0].Local.Data.Address);
}

static void *request_thread(void *arg) {
    VIP_VI_ATTRIBUTES ra;
    VIP_NET_ADDRESS *l = local_addr(g_nic, "cli-0"), *srv = peer_addr(g_nic, 0, "outside-multi");
    VIP_RETURN rc = VipConnectRequest(g_vi[0], l, srv, 10000, &ra);
    free(l);
    free(srv);
    *(VIP_RETURN *)arg = rc;
    return NULL;
}

int main(void) {
    int rank = outside_join("outside_reconnect");
    int peer = 1 - rank;
    CHECK(VipOpenNic(NULL, &g_nic));
    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(g_nic, &ptag));
    VIP_MEM_ATTRIBUTES ma = {ptag, VIP_FALSE, VIP_FALSE};
    arena_init(&g_ar, g_nic, 1 << 16, &ma);
    g_sd = arena_desc(&g_ar, 1);
    g_sbuf = arena_get(&g_ar, MSG);
    for (int v = 0; v < 2; v++)
        for (int i = 0; i < NMSG; i++) {
            g_rd[v][i] = arena_desc(&g_ar, 1);
            g_rbuf[v][i] = arena_get(&g_ar, MSG);
        }
    VIP_VI_ATTRIBUTES attrs, ra;
    memset(&attrs, 0, sizeof attrs);
    attrs.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    attrs.MaxTransferSize = 4096;
    attrs.Ptag = ptag;
    for (int v = 0; v < 2; v++) {
        CHECK(VipCreateVi(g_nic, &attrs, NULL, NULL, &g_vi[v]));
        post_receives(v);
    }

    /* ---- two requests, one server discriminator ---------------------------- */
    char text[MSG];
    if (rank == 0) {
        VIP_NET_ADDRESS *l = local_addr(g_nic, "outside-multi"), *from = new_addr();
        VIP_CONN_HANDLE conn[2];
        int client_vi[2];
        for (int k = 0; k < 2; k++) {
            CHECK(VipConnectWait(g_nic, l, 10000, from, &ra, &conn[k]));
            const char *disc = (const char *)from->HostAddress + from->HostAddressLen;
            if (from->DiscriminatorLen != 5 || (memcmp(disc, "cli-0", 5) && memcmp(disc, "cli-1", 5)))
                FAIL("RemoteAddr discriminator '%.*s' is not the client's", from->DiscriminatorLen, disc);
            client_vi[k] = disc[4] - '0';
        }
        if (client_vi[0] == client_vi[1]) FAIL("both requests name client VI %d", client_vi[0]);
        /* Server VI v takes client VI 1-v: accept in the opposite order of arrival. */
        for (int k = 1; k >= 0; k--) CHECK(VipConnectAccept(conn[k], g_vi[1 - client_vi[k]]));
        for (int v = 0; v < 2; v++) {
            snprintf(text, sizeof text, "server VI %d to client VI %d", v, 1 - v);
            send_msg(v, text);
        }
        for (int v = 0; v < 2; v++) {
            snprintf(text, sizeof text, "client VI %d to server VI %d", 1 - v, v);
            expect_msg(v, 0, text);
        }
        free(l);
        free(from);
    } else {
        VIP_RETURN rc0 = VIP_NOT_DONE;
        pthread_t t;
        if (pthread_create(&t, NULL, request_thread, &rc0)) FAIL("pthread_create");
        VIP_NET_ADDRESS *l = local_addr(g_nic, "cli-1"), *srv = peer_addr(g_nic, 0, "outside-multi");
        CHECK(VipConnectRequest(g_vi[1], l, srv, 10000, &ra));
        pthread_join(t, NULL);
        if (rc0 != VIP_SUCCESS) FAIL("the first request (thread) returned %s", VipxReturnString(rc0));
        free(l);
        free(srv);
        /* client VI c is connected to server VI 1-c */
        for (int c = 0; c < 2; c++) {
            snprintf(text, sizeof text, "server VI %d to client VI %d", 1 - c, c);
            expect_msg(c, 0, text);
        }
        for (int c = 0; c < 2; c++) {
            snprintf(text, sizeof text, "client VI %d to server VI %d", c, 1 - c);
            send_msg(c, text);
        }
    }
    barrier();
    /* Each VI received one message; its other receives come back flushed. */
    for (int v = 0; v < 2; v++) disconnect_and_drain(v);
    barrier();

    /* ---- the same VIs again, crosswise, peer to peer ----------------------- */
    for (int v = 0; v < 2; v++) {
        VIP_VI_STATE st;
        VIP_BOOLEAN s, r;
        CHECK(VipQueryVi(g_vi[v], &st, &ra, &s, &r));
        if (st != VIP_STATE_IDLE || !s || !r)
            FAIL("VI %d after disconnect: state %d, queues empty %d/%d", v, (int)st, s, r);
        post_receives(v);
    }
    for (int v = 0; v < 2; v++) {
        /* this rank's VI v meets the peer's VI v this time */
        char mine[32], theirs[32];
        snprintf(mine, sizeof mine, "again-%d-%d", rank, v);
        snprintf(theirs, sizeof theirs, "again-%d-%d", peer, v);
        VIP_NET_ADDRESS *l = local_addr(g_nic, mine), *p = peer_addr(g_nic, peer, theirs);
        CHECK(VipConnectPeerRequest(g_vi[v], l, p, 10000));
        free(l);
        free(p);
    }
    for (int v = 0; v < 2; v++) CHECK(VipConnectPeerWait(g_vi[v], &ra));
    for (int i = 0; i < NMSG; i++)
        for (int v = 0; v < 2; v++) {
            snprintf(text, sizeof text, "again %d from rank %d VI %d", i, rank, v);
            send_msg(v, text);
        }
    for (int i = 0; i < NMSG; i++)
        for (int v = 0; v < 2; v++) {
            snprintf(text, sizeof text, "again %d from rank %d VI %d", i, peer, v);
            expect_msg(v, i, text);
        }
    barrier();
    for (int v = 0; v < 2; v++) {
        disconnect_and_drain(v);
        CHECK(VipDestroyVi(g_vi[v]));
    }
    arena_free(&g_ar);
    CHECK(VipDestroyPtag(g_nic, ptag));
    CHECK(VipCloseNic(g_nic));
    printf("outside_reconnect: rank %d ok\n", rank);
    vipl_boot_finalize();
    return 0;
}
