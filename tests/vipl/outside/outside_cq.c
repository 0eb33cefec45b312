/*
 * outside_cq.c - one completion queue shared by the send and receive queues of
 * several VIs (VI spec 1.0, "Completion Queues"):
 *   - three VIs per process, connected peer to peer (VipConnectPeerRequest /
 *     VipConnectPeerWait) under three discriminators, all bound to one CQ;
 *   - every message gathered from three data segments, scattered into three,
 *     with immediate data naming the VI;
 *   - VipCQWait names the VI and queue of each completion, whose descriptor is
 *     then taken with VipSendDone / VipRecvDone (round 1); VipCQDone polling
 *     does the same (round 2);
 *   - an empty CQ: VipCQDone returns VIP_NOT_DONE, VipCQWait VIP_TIMEOUT;
 *   - VipDestroyCQ while VIs are bound to it returns VIP_INVALID_STATE.
 */
#include "outside.h"

#define NVI 3
#define ROUNDS 2
static const VIP_UINT32 gather_len[3] = {1000, 7, 2000}; /* 3007 bytes */
static const VIP_UINT32 scatter_len[3] = {5, 3000, 100}; /* room for 3105 */
#define TOTAL 3007u

int main(void) {
    int rank = outside_join("outside_cq");
    int peer = 1 - rank;
    VIP_NIC_HANDLE nic;
    CHECK(VipOpenNic(NULL, &nic));
    VIP_NIC_ATTRIBUTES na;
    CHECK(VipQueryNic(nic, &na));
    if (na.MaxSegmentsPerDesc < 3) FAIL("MaxSegmentsPerDesc %lu < 3", (unsigned long)na.MaxSegmentsPerDesc);

    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));
    VIP_MEM_ATTRIBUTES ma = {ptag, VIP_FALSE, VIP_FALSE};
    struct arena ar;
    arena_init(&ar, nic, 1 << 20, &ma);

    VIP_CQ_HANDLE cq;
    CHECK(VipCreateCQ(nic, 4 * NVI * ROUNDS, &cq));

    VIP_VI_ATTRIBUTES attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    attrs.MaxTransferSize = 8192;
    attrs.Ptag = ptag;
    VIP_VI_HANDLE vi[NVI];
    for (int i = 0; i < NVI; i++) CHECK(VipCreateVi(nic, &attrs, cq, cq, &vi[i]));
    EXPECT_RC(VipDestroyCQ(cq), VIP_INVALID_STATE);

    VIP_DESCRIPTOR *rd[NVI][ROUNDS], *sd[NVI][ROUNDS];
    char *rseg[NVI][ROUNDS][3], *sseg[NVI][ROUNDS][3];
    for (int i = 0; i < NVI; i++)
        for (int r = 0; r < ROUNDS; r++) {
            rd[i][r] = arena_desc(&ar, 3);
            sd[i][r] = arena_desc(&ar, 3);
            for (int s = 0; s < 3; s++) {
                rseg[i][r][s] = arena_get(&ar, scatter_len[s]);
                sseg[i][r][s] = arena_get(&ar, gather_len[s]);
            }
        }

    /* Post every receive before connecting. */
    for (int i = 0; i < NVI; i++)
        for (int r = 0; r < ROUNDS; r++) {
            VIP_DESCRIPTOR *d = rd[i][r];
            d->CS.SegCount = 3;
            d->CS.Length = 0;
            for (int s = 0; s < 3; s++) set_seg(d, s, rseg[i][r][s], scatter_len[s], ar.mh);
            CHECK(VipPostRecv(vi[i], d, ar.mh));
        }

    for (int i = 0; i < NVI; i++) {
        char disc[32];
        snprintf(disc, sizeof disc, "outside-cq-%d", i);
        VIP_NET_ADDRESS *l = local_addr(nic, disc), *p = peer_addr(nic, peer, disc);
        CHECK(VipConnectPeerRequest(vi[i], l, p, 10000));
        free(l);
        free(p);
    }
    for (int i = 0; i < NVI; i++) {
        VIP_VI_ATTRIBUTES ra;
        CHECK(VipConnectPeerWait(vi[i], &ra));
    }

    int nrecv[NVI] = {0};
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < NVI; i++) {
            VIP_DESCRIPTOR *d = sd[i][r];
            memset(d, 0, sizeof(VIP_CONTROL_SEGMENT));
            d->CS.SegCount = 3;
            d->CS.Control = VIP_CONTROL_OP_SENDRECV | VIP_CONTROL_IMMEDIATE;
            d->CS.ImmediateData = 0xC0DE0000u | (unsigned)(rank << 8) | (unsigned)(i << 4) | (unsigned)r;
            d->CS.Length = TOTAL;
            size_t off = 0;
            for (int s = 0; s < 3; s++) {
                /* one byte pattern over the whole message, split over the segments */
                unsigned char *b = (unsigned char *)sseg[i][r][s];
                unsigned char tmp[TOTAL];
                fill(tmp, TOTAL, (unsigned)(rank * 100 + i * 10 + r));
                memcpy(b, tmp + off, gather_len[s]);
                off += gather_len[s];
                set_seg(d, s, b, gather_len[s], ar.mh);
            }
            CHECK(VipPostSend(vi[i], d, ar.mh));
        }

        /* The peer may be a round ahead: its next message can complete here
         * before this round's sends do, so receives are counted per VI. */
        int sends = 0;
        double deadline = now_ms() + 10000;
        for (;;) {
            int behind = 0;
            for (int k = 0; k < NVI; k++) behind += nrecv[k] <= r;
            if (sends == NVI && !behind) break;
            VIP_VI_HANDLE who;
            VIP_BOOLEAN is_recv;
            if (r == 0) {
                CHECK(VipCQWait(cq, 10000, &who, &is_recv));
            } else {
                VIP_RETURN rc = VipCQDone(cq, &who, &is_recv);
                if (rc == VIP_NOT_DONE) {
                    if (now_ms() > deadline) FAIL("VipCQDone: no completion in 10 s (round %d: %d sends)", r, sends);
                    continue;
                }
                if (rc != VIP_SUCCESS) FAIL("VipCQDone returned %s", VipxReturnString(rc));
            }
            int i = -1;
            for (int k = 0; k < NVI; k++)
                if (vi[k] == who) i = k;
            if (i < 0) FAIL("CQ names a VI handle that is not ours");
            VIP_DESCRIPTOR *d;
            if (is_recv) {
                int rr = nrecv[i]++;
                if (rr >= ROUNDS) FAIL("VI %d: more receive completions than messages", i);
                CHECK(VipRecvDone(vi[i], &d));
                if (d != rd[i][rr]) FAIL("VI %d: receive %d completed out of order", i, rr);
                expect_ok(d, VIP_STATUS_OP_RECEIVE, "scattered receive");
                if (!(d->CS.Status & VIP_STATUS_IMMEDIATE))
                    FAIL("receive lacks VIP_STATUS_IMMEDIATE: %s", status_str(d->CS.Status));
                VIP_UINT32 want = 0xC0DE0000u | (unsigned)(peer << 8) | (unsigned)(i << 4) | (unsigned)rr;
                if (d->CS.ImmediateData != want) FAIL("immediate 0x%x, expected 0x%x", d->CS.ImmediateData, want);
                if (d->CS.Length != TOTAL) FAIL("received length %u, expected %u", d->CS.Length, TOTAL);
                size_t off = 0;
                for (int s = 0; s < 3 && off < TOTAL; s++) {
                    size_t n = TOTAL - off < scatter_len[s] ? TOTAL - off : scatter_len[s];
                    if (!check_fill(rseg[i][rr][s], n, (unsigned)(peer * 100 + i * 10 + rr), off))
                        FAIL("VI %d receive %d: segment %d data wrong", i, rr, s);
                    off += n;
                }
            } else {
                CHECK(VipSendDone(vi[i], &d));
                if (d != sd[i][r]) FAIL("VI %d round %d: wrong send descriptor", i, r);
                expect_ok(d, VIP_STATUS_OP_SEND, "gathered send");
                sends++;
            }
        }
    }

    VIP_VI_HANDLE who;
    VIP_BOOLEAN is_recv;
    EXPECT_RC(VipCQDone(cq, &who, &is_recv), VIP_NOT_DONE);
    EXPECT_RC(VipCQWait(cq, 20, &who, &is_recv), VIP_TIMEOUT);

    barrier();
    for (int i = 0; i < NVI; i++) {
        CHECK(VipDisconnect(vi[i]));
        CHECK(VipDestroyVi(vi[i]));
    }
    CHECK(VipDestroyCQ(cq));
    arena_free(&ar);
    CHECK(VipDestroyPtag(nic, ptag));
    CHECK(VipCloseNic(nic));
    printf("outside_cq: rank %d: %d VIs x %d rounds on one CQ ok\n", rank, NVI, ROUNDS);
    vipl_boot_finalize();
    return 0;
}
