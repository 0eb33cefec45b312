/*
 * vi_pingpong.c - VIPL: one VI between two processes, a message bounced back
 * and forth with VipPostSend / VipPostRecv, round-trip time printed.
 *
 *   vipl-run -n 2 ./vi_pingpong
 *
 * The concept: register memory, create a VI, pre-post receives, connect
 * (rank 0 waits, rank 1 requests), then every message needs a receive posted
 * on the other side before it is sent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vipl.h>
#include <vipl_boot.h>

#define MSG 64
#define ITERS 1000

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        VIP_RETURN rc_ = (call);                                                                                       \
        if (rc_ != VIP_SUCCESS) {                                                                                      \
            fprintf(stderr, "rank %d: %s: %s\n", vipl_boot_rank(), #call, VipxReturnString(rc_));                      \
            vipl_boot_abort(1, #call);                                                                                 \
        }                                                                                                              \
    } while (0)

/* A VIP_NET_ADDRESS: host address bytes, then the discriminator. */
static VIP_NET_ADDRESS *address(const VIP_UINT8 *host, VIP_UINT16 len, const char *disc) {
    VIP_NET_ADDRESS *a = calloc(1, VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN));
    a->HostAddressLen = len;
    a->DiscriminatorLen = (VIP_UINT16)strlen(disc);
    memcpy(a->HostAddress, host, len);
    memcpy(a->HostAddress + len, disc, strlen(disc));
    return a;
}

static void prepare(VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh) {
    memset(&d->CS, 0, sizeof d->CS);
    d->CS.SegCount = 1;
    d->CS.Length = MSG;
    d->DS[0].Local.Data.Address = buf;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = MSG;
}

int main(void) {
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() != 2) {
        fprintf(stderr, "run with two processes: vipl-run -n 2 vi_pingpong\n");
        return 1;
    }
    int rank = vipl_boot_rank();

    VIP_NIC_HANDLE nic;
    VIP_NIC_ATTRIBUTES attr;
    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipOpenNic(NULL, &nic)); /* $VIPL_PROVIDER's default device (nicfw0) */
    CHECK(VipQueryNic(nic, &attr));
    CHECK(VipCreatePtag(nic, &ptag));

    /* One registered page: send buffer, receive buffer, three descriptors. */
    uint8_t *region = aligned_alloc(4096, 4096);
    memset(region, 0, 4096);
    VIP_MEM_ATTRIBUTES mattr = {ptag, VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE mh;
    CHECK(VipRegisterMem(nic, region, 4096, &mattr, &mh));
    uint8_t *sbuf = region, *rbuf = region + MSG;
    VIP_DESCRIPTOR *sd = (VIP_DESCRIPTOR *)(region + 2 * MSG), *rd = sd + 1, *done;

    VIP_VI_ATTRIBUTES vattr = {VIP_SERVICE_RELIABLE_DELIVERY, attr.MaxTransferSize, NULL, ptag, VIP_FALSE, VIP_FALSE};
    if (!(attr.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY))
        vattr.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
    VIP_VI_HANDLE vi;
    CHECK(VipCreateVi(nic, &vattr, NULL, NULL, &vi));
    for (int k = 0; k < 2; k++) { /* two receives: one stays posted while the other is reposted */
        prepare(&rd[k], rbuf, mh);
        CHECK(VipPostRecv(vi, &rd[k], mh));
    }

    /* Exchange NIC addresses with the job bootstrap, then connect. */
    struct {
        VIP_UINT16 len;
        VIP_UINT8 bytes[VIP_MAX_HOST_ADDRESS_LEN];
    } mine = {0}, all[2];
    mine.len = attr.NicAddressLen;
    memcpy(mine.bytes, attr.LocalNicAddress, attr.NicAddressLen);
    vipl_boot_allgather(&mine, sizeof mine, all);
    VIP_VI_ATTRIBUTES peer_attr;
    if (rank == 0) {
        VIP_NET_ADDRESS *local = address(attr.LocalNicAddress, attr.NicAddressLen, "pingpong");
        VIP_NET_ADDRESS *any = address(all[1].bytes, 0, "");
        VIP_CONN_HANDLE conn;
        CHECK(VipConnectWait(nic, local, 10000, any, &peer_attr, &conn));
        CHECK(VipConnectAccept(conn, vi));
        free(local);
        free(any);
    } else {
        VIP_NET_ADDRESS *local = address(attr.LocalNicAddress, attr.NicAddressLen, "client");
        VIP_NET_ADDRESS *server = address(all[0].bytes, all[0].len, "pingpong");
        VIP_RETURN rc;
        int tries = 0;
        do /* the server may not be waiting yet */
            rc = VipConnectRequest(vi, local, server, 200, &peer_attr);
        while ((rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) && ++tries < 50);
        CHECK(rc);
        free(local);
        free(server);
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < ITERS; i++) {
        if (rank == 0) { /* ping, then wait for the pong */
            sbuf[0] = (uint8_t)i;
            prepare(sd, sbuf, mh);
            CHECK(VipPostSend(vi, sd, mh));
            CHECK(VipSendWait(vi, VIP_INFINITE, &done));
        }
        CHECK(VipRecvWait(vi, VIP_INFINITE, &done));
        if (rbuf[0] != (uint8_t)i) {
            fprintf(stderr, "rank %d: message %d carried %d\n", rank, i, rbuf[0]);
            vipl_boot_abort(1, "wrong payload");
        }
        prepare(done, rbuf, mh);
        CHECK(VipPostRecv(vi, done, mh));
        if (rank == 1) { /* pong */
            sbuf[0] = (uint8_t)i;
            prepare(sd, sbuf, mh);
            CHECK(VipPostSend(vi, sd, mh));
            CHECK(VipSendWait(vi, VIP_INFINITE, &done));
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / ITERS;
    if (rank == 0) printf("vi_pingpong: %d round trips of %d bytes, RTT/2 = %.2f us\n", ITERS, MSG, us / 2);

    vipl_boot_barrier();
    VipDisconnect(vi);
    while (VipRecvDone(vi, &done) == VIP_SUCCESS) /* the flushed receives */
        ;
    VipDestroyVi(vi);
    VipDeregisterMem(nic, region, mh);
    VipDestroyPtag(nic, ptag);
    VipCloseNic(nic);
    free(region);
    vipl_boot_finalize();
    return 0;
}
