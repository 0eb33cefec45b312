/*
 * outside_rdma_notify.c - RDMA and notify handlers (VI spec 1.0):
 *   - VipQueryMem / VipSetMemAttributes report and change a region's RDMA
 *     rights; VipQueryVi / VipSetViAttributes do the same for an Idle VI;
 *   - an RDMA write with immediate data, gathered from two local segments,
 *     lands in the peer's registered memory and consumes one of its posted
 *     receives (status OP_REMOTE_RDMA_WRITE | IMMEDIATE, the immediate data);
 *   - that receive is delivered to a VipRecvNotify handler, the writer's send
 *     completion to a VipSendNotify handler;
 *   - an RDMA read, scattered into two local segments, returns the peer's bytes
 *     (when the NIC offers RDMA read at the VI's reliability level).
 * Rank 0 writes, rank 1 receives the write and reads back.
 */
#include <stdatomic.h>
#include <unistd.h>

#include "outside.h"

#define LEN 4096u
#define SPLIT 3000u

struct target {
    VIP_UINT64 addr;
    VIP_MEM_HANDLE mh;
    VIP_UINT32 pad;
};

struct notified {
    atomic_int calls;
    VIP_DESCRIPTOR *desc;
    VIP_VI_HANDLE vi;
    VIP_NIC_HANDLE nic;
};

static void on_done(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d) {
    struct notified *n = (struct notified *)ctx;
    n->desc = d;
    n->vi = vi;
    n->nic = nic;
    atomic_fetch_add(&n->calls, 1);
}

static void wait_notified(struct notified *n, const char *what) {
    double deadline = now_ms() + 10000;
    while (atomic_load(&n->calls) == 0) {
        if (now_ms() > deadline) FAIL("%s: notify handler not called within 10 s", what);
        usleep(100);
    }
}

static void expect_mem(VIP_NIC_HANDLE nic, void *p, VIP_MEM_HANDLE mh, VIP_PROTECTION_HANDLE ptag, VIP_BOOLEAN w,
                       VIP_BOOLEAN r) {
    VIP_MEM_ATTRIBUTES q;
    memset(&q, 0, sizeof q);
    CHECK(VipQueryMem(nic, p, mh, &q));
    if (q.Ptag != ptag || !!q.EnableRdmaWrite != !!w || !!q.EnableRdmaRead != !!r)
        FAIL("VipQueryMem: ptag %s, write %d, read %d (expected %d, %d)", q.Ptag == ptag ? "ok" : "wrong",
             q.EnableRdmaWrite, q.EnableRdmaRead, w, r);
}

int main(void) {
    int rank = outside_join("outside_rdma_notify");
    int peer = 1 - rank;
    VIP_NIC_HANDLE nic;
    CHECK(VipOpenNic(NULL, &nic));
    VIP_NIC_ATTRIBUTES na;
    CHECK(VipQueryNic(nic, &na));
    VIP_RELIABILITY_LEVEL level = VIP_SERVICE_RELIABLE_DELIVERY;
    VIP_BOOLEAN can_read = (na.RDMAReadSupport & level) ? VIP_TRUE : VIP_FALSE;

    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));
    VIP_MEM_ATTRIBUTES ma = {ptag, VIP_TRUE, can_read};
    struct arena ar;
    arena_init(&ar, nic, 1 << 16, &ma);
    expect_mem(nic, ar.base, ar.mh, ptag, VIP_TRUE, can_read);
    /* Change the rights and back (VipSetMemAttributes). */
    VIP_MEM_ATTRIBUTES none = {ptag, VIP_FALSE, VIP_FALSE};
    CHECK(VipSetMemAttributes(nic, ar.base, ar.mh, &none));
    expect_mem(nic, ar.base + 100, ar.mh, ptag, VIP_FALSE, VIP_FALSE);
    CHECK(VipSetMemAttributes(nic, ar.base, ar.mh, &ma));
    expect_mem(nic, ar.base, ar.mh, ptag, VIP_TRUE, can_read);

    char *area = arena_get(&ar, LEN); /* RDMA target / source */
    char *a = arena_get(&ar, SPLIT), *b = arena_get(&ar, LEN - SPLIT);
    VIP_DESCRIPTOR *sd = arena_desc(&ar, 3), *rd = arena_desc(&ar, 2);

    VIP_VI_ATTRIBUTES attrs, q;
    memset(&attrs, 0, sizeof attrs);
    attrs.ReliabilityLevel = level;
    attrs.MaxTransferSize = 8192;
    attrs.Ptag = ptag;
    attrs.EnableRdmaWrite = VIP_TRUE;
    attrs.EnableRdmaRead = can_read;
    VIP_VI_HANDLE vi;
    CHECK(VipCreateVi(nic, &attrs, NULL, NULL, &vi));
    VIP_VI_STATE st;
    VIP_BOOLEAN sqe, rqe;
    /* VipSetViAttributes on an Idle VI, seen by VipQueryVi. */
    attrs.MaxTransferSize = LEN * 2;
    CHECK(VipSetViAttributes(vi, &attrs));
    CHECK(VipQueryVi(vi, &st, &q, &sqe, &rqe));
    if (st != VIP_STATE_IDLE || q.MaxTransferSize != LEN * 2 || q.Ptag != ptag || q.ReliabilityLevel != level ||
        !q.EnableRdmaWrite || !!q.EnableRdmaRead != !!can_read)
        FAIL("VipQueryVi after VipSetViAttributes: state %d mts %lu rel %d w %d r %d", (int)st,
             (unsigned long)q.MaxTransferSize, q.ReliabilityLevel, q.EnableRdmaWrite, q.EnableRdmaRead);

    struct notified recv_note = {0}, send_note = {0};
    if (rank == 1) {
        /* The receive an RDMA write with immediate data consumes: no data segments. */
        memset(rd, 0, sizeof(VIP_CONTROL_SEGMENT));
        rd->CS.SegCount = 0;
        CHECK(VipPostRecv(vi, rd, ar.mh));
        CHECK(VipRecvNotify(vi, &recv_note, on_done));
    }

    VIP_NET_ADDRESS *l = local_addr(nic, "outside-rdma"), *p = peer_addr(nic, peer, "outside-rdma");
    CHECK(VipConnectPeerRequest(vi, l, p, 10000));
    VIP_VI_ATTRIBUTES ra;
    CHECK(VipConnectPeerWait(vi, &ra));
    if (!ra.EnableRdmaWrite) FAIL("peer's attributes do not show RDMA write enabled");

    struct target mine = {(VIP_UINT64)(uintptr_t)area, ar.mh, 0}, all[2];
    if (vipl_boot_allgather(&mine, sizeof mine, all) != VIPL_BOOT_OK) FAIL("allgather");
    struct target there = all[peer];

    if (rank == 0) {
        fill(a, SPLIT, 7);
        unsigned char tmp[LEN];
        fill(tmp, LEN, 7);
        memcpy(b, tmp + SPLIT, LEN - SPLIT);
        fill(area, LEN, 9); /* what rank 1 reads back */
        barrier();          /* B1: rank 1's receive and handler are in place */
        memset(sd, 0, sizeof(VIP_CONTROL_SEGMENT));
        sd->CS.Control = VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE;
        sd->CS.ImmediateData = 0x5EED1234u;
        sd->CS.SegCount = 3;
        sd->CS.Length = LEN;
        seg(sd, 0)->Remote.Data.AddressBits = there.addr;
        seg(sd, 0)->Remote.Handle = there.mh;
        set_seg(sd, 1, a, SPLIT, ar.mh);
        set_seg(sd, 2, b, LEN - SPLIT, ar.mh);
        CHECK(VipSendNotify(vi, &send_note, on_done));
        CHECK(VipPostSend(vi, sd, ar.mh));
        wait_notified(&send_note, "RDMA write completion");
        if (send_note.desc != sd || send_note.vi != vi || send_note.nic != nic)
            FAIL("send notify handler got the wrong descriptor, VI or NIC");
        expect_ok(sd, VIP_STATUS_OP_RDMA_WRITE, "RDMA write with immediate");
        barrier(); /* B2: rank 1 checked the write */
        barrier(); /* B3: rank 1 read our area */
    } else {
        barrier(); /* B1 */
        wait_notified(&recv_note, "receive consumed by the RDMA write");
        if (recv_note.desc != rd || recv_note.vi != vi || recv_note.nic != nic)
            FAIL("recv notify handler got the wrong descriptor, VI or NIC");
        expect_ok(rd, VIP_STATUS_OP_REMOTE_RDMA_WRITE, "receive consumed by RDMA write");
        if (!(rd->CS.Status & VIP_STATUS_IMMEDIATE) || rd->CS.ImmediateData != 0x5EED1234u)
            FAIL("immediate data 0x%x, status %s", rd->CS.ImmediateData, status_str(rd->CS.Status));
        if (!check_fill(area, LEN, 7, 0)) FAIL("RDMA-written bytes wrong");
        /* The handler took the descriptor off the queue: nothing left to take. */
        VIP_DESCRIPTOR *d;
        EXPECT_RC(VipRecvDone(vi, &d), VIP_NOT_DONE);
        if (atomic_load(&recv_note.calls) != 1) FAIL("recv handler called %d times", atomic_load(&recv_note.calls));
        barrier(); /* B2 */

        if (can_read) {
            memset(a, 0, SPLIT);
            memset(b, 0, LEN - SPLIT);
            memset(sd, 0, sizeof(VIP_CONTROL_SEGMENT));
            sd->CS.Control = VIP_CONTROL_OP_RDMAREAD;
            sd->CS.SegCount = 3;
            sd->CS.Length = LEN;
            seg(sd, 0)->Remote.Data.AddressBits = there.addr;
            seg(sd, 0)->Remote.Handle = there.mh;
            set_seg(sd, 1, a, SPLIT, ar.mh);
            set_seg(sd, 2, b, LEN - SPLIT, ar.mh);
            CHECK(VipPostSend(vi, sd, ar.mh));
            CHECK(VipSendWait(vi, 10000, &d));
            if (d != sd) FAIL("VipSendWait returned another descriptor");
            expect_ok(sd, VIP_STATUS_OP_RDMA_READ, "RDMA read");
            if (!check_fill(a, SPLIT, 9, 0) || !check_fill(b, LEN - SPLIT, 9, SPLIT)) FAIL("RDMA-read bytes wrong");
        }
        barrier(); /* B3 */
    }
    barrier();
    CHECK(VipDisconnect(vi));
    CHECK(VipDestroyVi(vi));
    arena_free(&ar);
    CHECK(VipDestroyPtag(nic, ptag));
    CHECK(VipCloseNic(nic));
    free(l);
    free(p);
    printf("outside_rdma_notify: rank %d ok (RDMA read %s)\n", rank, can_read ? "tested" : "not offered");
    vipl_boot_finalize();
    return 0;
}
