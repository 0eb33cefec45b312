/*
 * outside_errors.c - bad input as the VI spec 1.0 names it, each answered with
 * the spec's return code or descriptor status, never a crash or a hang:
 *   - VipCreateVi with attributes the NIC cannot give (MTU, ptag, RDMA read on
 *     an unreliable VI), VipRegisterMem/VipQueryMem with bad arguments;
 *   - a send posted on a VI in the Idle state;
 *   - receives posted on an Idle VI, then VipDestroyVi;
 *   - on a connected (unreliable) VI: a data segment with the wrong memory
 *     handle or outside registered memory (PROTECTION_ERROR), too many
 *     segments and a Length that is not the sum of the segments
 *     (FORMAT_ERROR), a descriptor posted with a memory handle that does not
 *     cover it, a send longer than the VI's MaxTransferSize; none of them
 *     reaches the peer, and the VI still works afterwards;
 *   - a receive whose buffer is deregistered while it is posted.
 * Rank 0 posts the bad sends; rank 1 receives.
 */
#include <stdatomic.h>

#include "outside.h"

static atomic_int async_errors;
static VIP_ERROR_CODE last_async;

static void on_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e) {
    (void)ctx;
    last_async = e->ErrorCode;
    atomic_fetch_add(&async_errors, 1);
}

/* A send that must complete with one of the `want` error bits (or be refused
 * at post with VIP_INVALID_PARAMETER / VIP_DESCRIPTOR_ERROR when refusing is
 * allowed). */
static void bad_send(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE dmh, VIP_UINT32 want, int may_refuse,
                     const char *what) {
    VIP_RETURN rc = VipPostSend(vi, d, dmh);
    if (rc != VIP_SUCCESS) {
        if (may_refuse && (rc == VIP_INVALID_PARAMETER || rc == VIP_DESCRIPTOR_ERROR)) {
            printf("outside_errors: %s: refused at post (%s)\n", what, VipxReturnString(rc));
            return;
        }
        FAIL("%s: VipPostSend returned %s", what, VipxReturnString(rc));
    }
    VIP_DESCRIPTOR *done = NULL;
    rc = VipSendWait(vi, 5000, &done);
    if (rc != VIP_SUCCESS) FAIL("%s: VipSendWait returned %s (descriptor never completed)", what, VipxReturnString(rc));
    if (done != d) FAIL("%s: another descriptor came back", what);
    if (!(d->CS.Status & VIP_STATUS_DONE) || !(d->CS.Status & want))
        FAIL("%s: status %s", what, status_str(d->CS.Status));
    printf("outside_errors: %s: %s\n", what, status_str(d->CS.Status));
}

static void good_send_desc(VIP_DESCRIPTOR *d, char *buf, VIP_UINT32 len, VIP_MEM_HANDLE mh) {
    memset(d, 0, sizeof(VIP_CONTROL_SEGMENT));
    d->CS.SegCount = 1;
    d->CS.Length = len;
    set_seg(d, 0, buf, len, mh);
}

int main(void) {
    int rank = outside_join("outside_errors");
    int peer = 1 - rank;
    VIP_NIC_HANDLE nic;
    CHECK(VipOpenNic(NULL, &nic));
    CHECK(VipErrorCallback(nic, NULL, on_error));
    VIP_NIC_ATTRIBUTES na;
    CHECK(VipQueryNic(nic, &na));

    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));
    VIP_MEM_ATTRIBUTES ma = {ptag, VIP_FALSE, VIP_FALSE};
    struct arena ar, other;
    arena_init(&ar, nic, 1 << 16, &ma);
    arena_init(&other, nic, 1 << 14, &ma);

    /* ---- attributes and arguments ---------------------------------------- */
    VIP_VI_ATTRIBUTES attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
    attrs.MaxTransferSize = 1024;
    attrs.Ptag = ptag;
    VIP_VI_HANDLE vi;
    VIP_VI_ATTRIBUTES bad = attrs;
    bad.MaxTransferSize = na.MaxTransferSize + 1;
    EXPECT_RC(VipCreateVi(nic, &bad, NULL, NULL, &vi), VIP_INVALID_MTU);
    bad = attrs;
    bad.Ptag = (VIP_PROTECTION_HANDLE)(uintptr_t)0x12345678;
    EXPECT_RC(VipCreateVi(nic, &bad, NULL, NULL, &vi), VIP_INVALID_PTAG);
    bad = attrs;
    bad.EnableRdmaRead = VIP_TRUE; /* RDMA read needs a reliable service */
    if (!(na.RDMAReadSupport & VIP_SERVICE_UNRELIABLE))
        EXPECT_RC(VipCreateVi(nic, &bad, NULL, NULL, &vi), VIP_INVALID_RDMAREAD);
    bad = attrs;
    bad.ReliabilityLevel = 0x40; /* no such level */
    EXPECT_RC(VipCreateVi(nic, &bad, NULL, NULL, &vi), VIP_INVALID_RELIABILITY_LEVEL);
    VIP_MEM_HANDLE mh;
    EXPECT_RC(VipRegisterMem(nic, ar.base, 0, &ma, &mh), VIP_INVALID_PARAMETER);
    VIP_MEM_ATTRIBUTES mq;
    EXPECT_RC(VipQueryMem(nic, ar.base, other.mh, &mq), VIP_INVALID_PARAMETER);
    {
        char longdisc[VIP_MAX_DISCRIMINATOR_LEN + 2];
        memset(longdisc, 'x', sizeof longdisc - 1);
        longdisc[sizeof longdisc - 1] = 0;
        VIP_NET_ADDRESS *l = new_addr();
        VIP_NIC_ATTRIBUTES q;
        CHECK(VipQueryNic(nic, &q));
        l->HostAddressLen = q.NicAddressLen;
        memcpy(l->HostAddress, q.LocalNicAddress, q.NicAddressLen);
        l->DiscriminatorLen = (VIP_UINT16)(q.MaxDiscriminatorLen + 1);
        memset(l->HostAddress + l->HostAddressLen, 'x', l->DiscriminatorLen);
        VIP_NET_ADDRESS *r = new_addr();
        VIP_VI_ATTRIBUTES ra;
        VIP_CONN_HANDLE c;
        EXPECT_RC(VipConnectWait(nic, l, 10, r, &ra, &c), VIP_INVALID_PARAMETER);
        free(l);
        free(r);
    }

    /* ---- Idle VI ----------------------------------------------------------- */
    CHECK(VipCreateVi(nic, &attrs, NULL, NULL, &vi));
    VIP_DESCRIPTOR *sd = arena_desc(&ar, 8), *rd[4];
    char *sbuf = arena_get(&ar, 4096), *rbuf[4];
    for (int i = 0; i < 4; i++) {
        rd[i] = arena_desc(&ar, 1);
        rbuf[i] = arena_get(&ar, 1024);
    }
    strcpy(sbuf, "idle");
    good_send_desc(sd, sbuf, 5, ar.mh);
    {
        VIP_RETURN rc = VipPostSend(vi, sd, ar.mh);
        if (rc == VIP_SUCCESS) {
            VIP_DESCRIPTOR *d;
            rc = VipSendWait(vi, 5000, &d);
            if (rc != VIP_SUCCESS || d != sd || !(sd->CS.Status & VIP_STATUS_ERROR_MASK))
                FAIL("send posted on an Idle VI: %s, status %s", VipxReturnString(rc), status_str(sd->CS.Status));
            printf("outside_errors: send on an Idle VI: %s\n", status_str(sd->CS.Status));
        } else if (rc != VIP_INVALID_STATE) {
            FAIL("send posted on an Idle VI: VipPostSend returned %s", VipxReturnString(rc));
        }
    }
    {
        /* A second Idle VI with a receive posted, destroyed. */
        VIP_VI_HANDLE vi2;
        CHECK(VipCreateVi(nic, &attrs, NULL, NULL, &vi2));
        good_send_desc(rd[0], rbuf[0], 1024, ar.mh);
        CHECK(VipPostRecv(vi2, rd[0], ar.mh));
        VIP_RETURN rc = VipDestroyVi(vi2);
        printf("outside_errors: VipDestroyVi with a receive posted: %s\n", VipxReturnString(rc));
        if (rc != VIP_SUCCESS && rc != VIP_INVALID_STATE)
            FAIL("VipDestroyVi with a receive posted returned %s", VipxReturnString(rc));
        if (rc == VIP_INVALID_STATE) {
            /* M-VIA's answer too: VipDisconnect flushes the queues of an Idle
             * VI, the descriptor comes back, then the VI can go. */
            VIP_DESCRIPTOR *d;
            CHECK(VipDisconnect(vi2));
            CHECK(VipRecvDone(vi2, &d));
            if (d != rd[0] || !(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR))
                FAIL("receive flushed from an Idle VI: %s", status_str(d->CS.Status));
            EXPECT_RC(VipRecvDone(vi2, &d), VIP_NOT_DONE);
            CHECK(VipDestroyVi(vi2));
        }
    }

    /* ---- connected, unreliable -------------------------------------------- */
    if (rank == 1) {
        for (int i = 0; i < 2; i++) {
            good_send_desc(rd[i], rbuf[i], 1024, ar.mh);
            CHECK(VipPostRecv(vi, rd[i], ar.mh));
        }
    }
    VIP_NET_ADDRESS *l = local_addr(nic, "outside-err"), *p = peer_addr(nic, peer, "outside-err");
    CHECK(VipConnectPeerRequest(vi, l, p, 10000));
    VIP_VI_ATTRIBUTES ra;
    CHECK(VipConnectPeerWait(vi, &ra));

    char *outside = aligned_alloc(4096, 4096); /* never registered */
    if (rank == 0) {
        /* Data segment handle of another region. */
        strcpy(sbuf, "wrong handle");
        good_send_desc(sd, sbuf, 13, other.mh);
        sd->DS[0].Local.Handle = other.mh;
        bad_send(vi, sd, ar.mh, VIP_STATUS_PROTECTION_ERROR, 0, "data segment with another region's handle");
        /* Data segment in memory nobody registered. */
        strcpy(outside, "unregistered");
        good_send_desc(sd, outside, 13, ar.mh);
        bad_send(vi, sd, ar.mh, VIP_STATUS_PROTECTION_ERROR, 0, "data segment outside registered memory");
        /* More segments than the NIC allows. */
        VIP_ULONG n = na.MaxSegmentsPerDesc + 1;
        VIP_DESCRIPTOR *big = arena_desc(&ar, (int)n);
        memset(big, 0, sizeof(VIP_CONTROL_SEGMENT));
        big->CS.SegCount = (VIP_UINT16)n;
        big->CS.Length = (VIP_UINT32)n;
        for (VIP_ULONG i = 0; i < n; i++) set_seg(big, (int)i, sbuf + i, 1, ar.mh);
        bad_send(vi, big, ar.mh, VIP_STATUS_FORMAT_ERROR, 1, "SegCount over MaxSegmentsPerDesc");
        /* Length is not the sum of the segments. */
        good_send_desc(sd, sbuf, 10, ar.mh);
        sd->CS.Length = 20;
        bad_send(vi, sd, ar.mh, VIP_STATUS_FORMAT_ERROR, 0, "Length != sum of segment lengths");
        /* Longer than the VI's MaxTransferSize (1024). */
        good_send_desc(sd, sbuf, 2048, ar.mh);
        bad_send(vi, sd, ar.mh, VIP_STATUS_FORMAT_ERROR | VIP_STATUS_LENGTH_ERROR, 1, "send over MaxTransferSize");
        /* The descriptor itself outside the region its handle names. */
        good_send_desc(sd, sbuf, 5, ar.mh);
        {
            VIP_RETURN rc = VipPostSend(vi, sd, other.mh);
            if (rc == VIP_SUCCESS) {
                VIP_DESCRIPTOR *d;
                rc = VipSendWait(vi, 2000, &d);
                if (rc == VIP_SUCCESS && (sd->CS.Status & VIP_STATUS_ERROR_MASK))
                    printf("outside_errors: descriptor outside its region: %s\n", status_str(sd->CS.Status));
                else if (atomic_load(&async_errors) && last_async == VIP_ERROR_POST_DESC)
                    printf("outside_errors: descriptor outside its region: VIP_ERROR_POST_DESC\n");
                else
                    FAIL("descriptor posted with a handle that does not cover it: wait %s, status %s, "
                         "%d async errors",
                         VipxReturnString(rc), status_str(sd->CS.Status), atomic_load(&async_errors));
            } else if (rc != VIP_INVALID_PARAMETER) {
                FAIL("descriptor posted with a handle that does not cover it: %s", VipxReturnString(rc));
            } else {
                printf("outside_errors: descriptor outside its region: refused at post (%s)\n", VipxReturnString(rc));
            }
        }
        /* None reached the peer: its first receive gets this one. */
        strcpy(sbuf, "good after bad");
        good_send_desc(sd, sbuf, 15, ar.mh);
        CHECK(VipPostSend(vi, sd, ar.mh));
        VIP_DESCRIPTOR *d;
        CHECK(VipSendWait(vi, 5000, &d));
        expect_ok(sd, VIP_STATUS_OP_SEND, "good send after bad ones");
        barrier(); /* B1: rank 1 deregistered the buffer of its third receive */
        const char *msgs[2] = {"second", "into deregistered memory"};
        for (int i = 0; i < 2; i++) {
            strcpy(sbuf, msgs[i]);
            good_send_desc(sd, sbuf, (VIP_UINT32)strlen(msgs[i]) + 1, ar.mh);
            CHECK(VipPostSend(vi, sd, ar.mh));
            CHECK(VipSendWait(vi, 5000, &d));
            /* unreliable: the sender does not learn of the receiver's error */
            expect_ok(sd, VIP_STATUS_OP_SEND, msgs[i]);
        }
        barrier(); /* B2 */
    } else {
        VIP_DESCRIPTOR *d;
        CHECK(VipRecvWait(vi, 10000, &d));
        if (d != rd[0]) FAIL("first receive back is not the first posted");
        expect_ok(d, VIP_STATUS_OP_RECEIVE, "receive after the bad sends");
        if (d->CS.Length != 15 || strcmp(rbuf[0], "good after bad"))
            FAIL("first message: %u bytes '%.20s' (a bad send reached us?)", d->CS.Length, rbuf[0]);
        /* A receive into a region of its own, posted after rd[1]; then the
         * region is deregistered while the receive is still posted. */
        char *own = aligned_alloc(4096, 4096);
        memset(own, 0, 4096);
        VIP_MEM_HANDLE own_mh;
        CHECK(VipRegisterMem(nic, own, 4096, &ma, &own_mh));
        good_send_desc(rd[3], own, 1024, own_mh);
        CHECK(VipPostRecv(vi, rd[3], ar.mh));
        VIP_RETURN rc = VipDeregisterMem(nic, own, own_mh);
        printf("outside_errors: VipDeregisterMem of a region a posted receive uses: %s\n", VipxReturnString(rc));
        if (rc != VIP_SUCCESS && rc != VIP_INVALID_STATE)
            FAIL("VipDeregisterMem of memory in use returned %s", VipxReturnString(rc));
        barrier(); /* B1 */
        /* rd[1] (posted first) takes the next message, rd[3] the one after. */
        CHECK(VipRecvWait(vi, 10000, &d));
        if (d != rd[1]) FAIL("second receive back is not rd[1]");
        expect_ok(d, VIP_STATUS_OP_RECEIVE, "second message");
        if (strcmp(rbuf[1], "second")) FAIL("second message '%.20s'", rbuf[1]);
        CHECK(VipRecvWait(vi, 10000, &d));
        if (d != rd[3]) FAIL("third receive back is not rd[3]");
        if (rc == VIP_SUCCESS) {
            /* Its memory handle is gone: the NIC may not write there. */
            if (!(d->CS.Status & VIP_STATUS_DONE) || !(d->CS.Status & VIP_STATUS_PROTECTION_ERROR))
                FAIL("receive into deregistered memory: %s", status_str(d->CS.Status));
            if (own[0] != 0) FAIL("the NIC wrote into deregistered memory ('%.20s')", own);
            printf("outside_errors: receive into deregistered memory: %s\n", status_str(d->CS.Status));
        } else {
            expect_ok(d, VIP_STATUS_OP_RECEIVE, "receive into a region still registered");
            CHECK(VipDeregisterMem(nic, own, own_mh));
        }
        barrier(); /* B2 */
        free(own);
    }

    barrier();
    CHECK(VipDisconnect(vi));
    /* Receives still posted come back flushed. */
    VIP_DESCRIPTOR *d;
    while (VipRecvDone(vi, &d) == VIP_SUCCESS)
        if (!(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR))
            FAIL("receive left at VipDisconnect: %s", status_str(d->CS.Status));
    CHECK(VipDestroyVi(vi));
    arena_free(&other);
    arena_free(&ar);
    CHECK(VipDestroyPtag(nic, ptag));
    CHECK(VipCloseNic(nic));
    free(outside);
    free(l);
    free(p);
    printf("outside_errors: rank %d ok (%d asynchronous errors, last code %d)\n", rank, atomic_load(&async_errors),
           atomic_load(&async_errors) ? (int)last_async : -1);
    vipl_boot_finalize();
    return 0;
}
