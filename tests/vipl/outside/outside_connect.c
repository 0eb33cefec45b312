/*
 * outside_connect.c - client/server connection management as the VI spec 1.0
 * describes it (VipConnectWait / Accept / Reject / Request / Disconnect):
 *   - VipConnectWait with a timeout and no client returns VIP_TIMEOUT;
 *   - a request for a discriminator nobody waits on is not matched to a
 *     server waiting on another one (VIP_TIMEOUT or VIP_NO_MATCH at the client);
 *   - a rejected request returns VIP_REJECT at the client, and the rejected
 *     connection handle is no longer valid at the server;
 *   - VipConnectAccept with a VI of another reliability level fails with
 *     VIP_INVALID_RELIABILITY_LEVEL and the request can still be accepted;
 *   - receives may be posted on a VI in the Idle state before it connects;
 *   - VipQueryVi reports Idle / Connected and the queue states;
 *   - VipDisconnect flushes the disconnecting side's posted receives, returns
 *     its VI to Idle, and the peer sees its posted receive complete in error.
 * Rank 0 is the server, rank 1 the client.
 */
#include "outside.h"

#define MSG 64

static VIP_VI_ATTRIBUTES vi_attrs(VIP_PROTECTION_HANDLE ptag) {
    VIP_VI_ATTRIBUTES a;
    memset(&a, 0, sizeof a);
    a.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    a.MaxTransferSize = 4096;
    a.Ptag = ptag;
    return a;
}

static void expect_state(VIP_VI_HANDLE vi, VIP_VI_STATE want, int sq_empty, int rq_empty) {
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES at;
    VIP_BOOLEAN sqe, rqe;
    CHECK(VipQueryVi(vi, &st, &at, &sqe, &rqe));
    if (st != want) FAIL("VipQueryVi state %d, expected %d", (int)st, (int)want);
    if (sq_empty >= 0 && !!sqe != sq_empty) FAIL("VipQueryVi SendQEmpty %d, expected %d", (int)sqe, sq_empty);
    if (rq_empty >= 0 && !!rqe != rq_empty) FAIL("VipQueryVi RecvQEmpty %d, expected %d", (int)rqe, rq_empty);
}

int main(void) {
    int rank = outside_join("outside_connect");
    VIP_NIC_HANDLE nic;
    CHECK(VipOpenNic(NULL, &nic));
    VIP_NIC_ATTRIBUTES na;
    CHECK(VipQueryNic(nic, &na));
    if (!(na.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY)) FAIL("NIC lacks reliable delivery");

    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));
    VIP_MEM_ATTRIBUTES ma = {ptag, VIP_FALSE, VIP_FALSE};
    struct arena ar;
    arena_init(&ar, nic, 1 << 16, &ma);
    VIP_DESCRIPTOR *rd = arena_desc(&ar, 1), *rd2 = arena_desc(&ar, 1), *sd = arena_desc(&ar, 1);
    char *rbuf = arena_get(&ar, MSG), *rbuf2 = arena_get(&ar, MSG), *sbuf = arena_get(&ar, MSG);

    VIP_VI_ATTRIBUTES attrs = vi_attrs(ptag), remote_attrs;
    VIP_VI_HANDLE vi;
    CHECK(VipCreateVi(nic, &attrs, NULL, NULL, &vi));
    expect_state(vi, VIP_STATE_IDLE, 1, 1);

    /* Receives may be posted before the VI is connected (spec: Idle state). */
    memset(rd, 0, sizeof *rd);
    rd->CS.SegCount = 1;
    rd->CS.Length = MSG;
    set_seg(rd, 0, rbuf, MSG, ar.mh);
    CHECK(VipPostRecv(vi, rd, ar.mh));
    expect_state(vi, VIP_STATE_IDLE, 1, 0);

    VIP_NET_ADDRESS *remote = new_addr();
    if (rank == 0) {
        VIP_NET_ADDRESS *local = local_addr(nic, "outside-svc");
        VIP_CONN_HANDLE conn;
        /* Nobody connects yet: the wait times out. */
        double t0 = now_ms();
        EXPECT_RC(VipConnectWait(nic, local, 50, remote, &remote_attrs, &conn), VIP_TIMEOUT);
        if (now_ms() - t0 < 40) FAIL("VipConnectWait(50 ms) returned after %.1f ms", now_ms() - t0);
        barrier(); /* B1: the client's unmatched request is over */
        barrier(); /* B2 */

        /* First request: reject it. */
        CHECK(VipConnectWait(nic, local, 10000, remote, &remote_attrs, &conn));
        if (remote_attrs.ReliabilityLevel != VIP_SERVICE_RELIABLE_DELIVERY)
            FAIL("remote attributes: reliability %d", remote_attrs.ReliabilityLevel);
        VIP_NET_ADDRESS *client = peer_addr(nic, 1, "");
        if (remote->HostAddressLen != client->HostAddressLen ||
            memcmp(remote->HostAddress, client->HostAddress, client->HostAddressLen))
            FAIL("VipConnectWait's RemoteAddr is not the client's NIC address");
        CHECK(VipConnectReject(conn));
        /* The handle is consumed by the reject. */
        EXPECT_RC(VipConnectAccept(conn, vi), VIP_INVALID_PARAMETER);
        expect_state(vi, VIP_STATE_IDLE, 1, 0);

        /* Second request: first offered a VI of another reliability level,
         * which the spec refuses, leaving the request to accept again. */
        CHECK(VipConnectWait(nic, local, 10000, remote, &remote_attrs, &conn));
        VIP_VI_ATTRIBUTES other = attrs;
        other.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
        VIP_VI_HANDLE wrong;
        CHECK(VipCreateVi(nic, &other, NULL, NULL, &wrong));
        EXPECT_RC(VipConnectAccept(conn, wrong), VIP_INVALID_RELIABILITY_LEVEL);
        expect_state(wrong, VIP_STATE_IDLE, 1, 1);
        CHECK(VipDestroyVi(wrong));
        CHECK(VipConnectAccept(conn, vi));
        expect_state(vi, VIP_STATE_CONNECTED, 1, 0);

        VIP_DESCRIPTOR *done;
        CHECK(VipRecvWait(vi, 10000, &done));
        if (done != rd) FAIL("VipRecvWait returned %p, posted %p", (void *)done, (void *)rd);
        expect_ok(rd, VIP_STATUS_OP_RECEIVE, "receive posted before the connection");
        if (rd->CS.Length != 6 || strcmp(rbuf, "hello")) FAIL("got %u bytes '%.*s'", rd->CS.Length, MSG, rbuf);

        memset(rd2, 0, sizeof *rd2);
        rd2->CS.SegCount = 1;
        rd2->CS.Length = MSG;
        set_seg(rd2, 0, rbuf2, MSG, ar.mh);
        CHECK(VipPostRecv(vi, rd2, ar.mh));

        strcpy(sbuf, "welcome");
        memset(sd, 0, sizeof *sd);
        sd->CS.SegCount = 1;
        sd->CS.Length = 8;
        set_seg(sd, 0, sbuf, 8, ar.mh);
        CHECK(VipPostSend(vi, sd, ar.mh));
        CHECK(VipSendWait(vi, 10000, &done));
        expect_ok(sd, VIP_STATUS_OP_SEND, "reply");
        /* B3: a send still unacknowledged when the peer disconnects may be
         * flushed (its outcome is unknown), so the client waits for this. */
        barrier();

        /* The client disconnects: our posted receive comes back in error. */
        CHECK(VipRecvWait(vi, 10000, &done));
        if (done != rd2) FAIL("wrong descriptor back after the peer's disconnect");
        if (!(rd2->CS.Status & VIP_STATUS_DONE) || !(rd2->CS.Status & VIP_STATUS_ERROR_MASK))
            FAIL("receive pending at the peer's disconnect: status %s", status_str(rd2->CS.Status));
        VIP_VI_STATE st;
        VIP_BOOLEAN e1, e2;
        CHECK(VipQueryVi(vi, &st, &remote_attrs, &e1, &e2));
        if (st != VIP_STATE_ERROR && st != VIP_STATE_IDLE)
            FAIL("after the peer's disconnect the VI is in state %d", (int)st);
        CHECK(VipDisconnect(vi));
        expect_state(vi, VIP_STATE_IDLE, 1, 1);
        free(client);
        free(local);
        printf("outside_connect: server ok (reply %s)\n", "welcome");
    } else {
        VIP_NET_ADDRESS *local = local_addr(nic, "outside-cli");
        /* A discriminator the server never waits on. */
        VIP_NET_ADDRESS *wrong = peer_addr(nic, 0, "outside-nobody");
        VIP_RETURN rc = VipConnectRequest(vi, local, wrong, 200, &remote_attrs);
        if (rc != VIP_TIMEOUT && rc != VIP_NO_MATCH)
            FAIL("request for an unknown discriminator returned %s", VipxReturnString(rc));
        expect_state(vi, VIP_STATE_IDLE, 1, 0);
        barrier(); /* B1 */
        barrier(); /* B2 */

        VIP_NET_ADDRESS *server = peer_addr(nic, 0, "outside-svc");
        EXPECT_RC(VipConnectRequest(vi, local, server, 10000, &remote_attrs), VIP_REJECT);
        expect_state(vi, VIP_STATE_IDLE, 1, 0);
        CHECK(VipConnectRequest(vi, local, server, 10000, &remote_attrs));
        if (remote_attrs.ReliabilityLevel != VIP_SERVICE_RELIABLE_DELIVERY)
            FAIL("remote attributes: reliability %d", remote_attrs.ReliabilityLevel);
        expect_state(vi, VIP_STATE_CONNECTED, 1, 0);

        strcpy(sbuf, "hello");
        memset(sd, 0, sizeof *sd);
        sd->CS.SegCount = 1;
        sd->CS.Length = 6;
        set_seg(sd, 0, sbuf, 6, ar.mh);
        CHECK(VipPostSend(vi, sd, ar.mh));
        VIP_DESCRIPTOR *done;
        CHECK(VipSendWait(vi, 10000, &done));
        expect_ok(sd, VIP_STATUS_OP_SEND, "hello");
        CHECK(VipRecvWait(vi, 10000, &done));
        expect_ok(rd, VIP_STATUS_OP_RECEIVE, "reply");
        if (strcmp(rbuf, "welcome")) FAIL("reply '%.*s'", MSG, rbuf);
        barrier(); /* B3: the server's reply completed */

        /* A receive still posted when we disconnect is flushed back to us. */
        memset(rd2, 0, sizeof *rd2);
        rd2->CS.SegCount = 1;
        rd2->CS.Length = MSG;
        set_seg(rd2, 0, rbuf2, MSG, ar.mh);
        CHECK(VipPostRecv(vi, rd2, ar.mh));
        CHECK(VipDisconnect(vi));
        expect_state(vi, VIP_STATE_IDLE, -1, -1);
        rc = VipRecvDone(vi, &done);
        if (rc != VIP_SUCCESS || done != rd2) FAIL("VipRecvDone after VipDisconnect: %s", VipxReturnString(rc));
        if (!(rd2->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR))
            FAIL("receive flushed by VipDisconnect: status %s", status_str(rd2->CS.Status));
        expect_state(vi, VIP_STATE_IDLE, 1, 1);
        free(server);
        free(wrong);
        free(local);
        printf("outside_connect: client ok\n");
    }
    barrier();
    CHECK(VipDestroyVi(vi));
    arena_free(&ar);
    CHECK(VipDestroyPtag(nic, ptag));
    CHECK(VipCloseNic(nic));
    free(remote);
    vipl_boot_finalize();
    return 0;
}
