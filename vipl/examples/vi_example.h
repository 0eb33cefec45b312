/*
 * vi_example.h - the few helpers the VI example programs share: error exits,
 * building a VIP_NET_ADDRESS, connecting a pair of ranks, timing.
 *
 * The examples use only vipl.h (the VI Architecture API) and vipl_boot.h (rank,
 * size, barrier, all-gather for programs started by `vipl-run -n N prog`).
 */
#ifndef VI_EXAMPLE_H
#define VI_EXAMPLE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vipl.h"
#include "vipl_boot.h"

/* Print what failed with the VIP_RETURN name and leave the whole job. */
static inline void die_rc(const char *what, VIP_RETURN rc) {
    fprintf(stderr, "rank %d: %s failed: %s\n", vipl_boot_rank(), what, VipxReturnString(rc));
    vipl_boot_abort(1, what);
}

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        VIP_RETURN rc_ = (call);                                                                                       \
        if (rc_ != VIP_SUCCESS) die_rc(#call, rc_);                                                                    \
    } while (0)

/* A descriptor's Status must say DONE with no error bits. */
/* The start of every two-process example: joins the job, refuses any other
 * size with a message saying how to run `prog`, and returns this rank. */
static inline int join_pair(const char *prog) {
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() != 2) {
        fprintf(stderr, "%s needs exactly two processes: vipl-run -n 2 %s\n", prog, prog);
        exit(1);
    }
    return vipl_boot_rank();
}

static inline void check_status(const VIP_DESCRIPTOR *d, const char *what) {
    if ((d->CS.Status & VIP_STATUS_DONE) && !(d->CS.Status & VIP_STATUS_ERROR_MASK)) return;
    char buf[256];
    fprintf(stderr, "rank %d: %s completed with status %s\n", vipl_boot_rank(), what,
            VipxStatusString(d->CS.Status, buf, sizeof buf));
    vipl_boot_abort(1, what);
}

/* A heap VIP_NET_ADDRESS: host address bytes followed by the discriminator. */
static inline VIP_NET_ADDRESS *make_address(const VIP_UINT8 *host, VIP_UINT16 host_len, const char *disc) {
    size_t dlen = strlen(disc);
    VIP_NET_ADDRESS *a = calloc(1, VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN));
    if (!a || dlen > VIP_MAX_DISCRIMINATOR_LEN || host_len > VIP_MAX_HOST_ADDRESS_LEN) {
        fprintf(stderr, "make_address: bad address (discriminator '%s')\n", disc);
        exit(1);
    }
    a->HostAddressLen = host_len;
    a->DiscriminatorLen = (VIP_UINT16)dlen;
    memcpy(a->HostAddress, host, host_len);
    memcpy(a->HostAddress + host_len, disc, dlen);
    return a;
}

/* Every rank's NIC address, gathered with the job bootstrap (collective). */
struct nic_address {
    VIP_UINT16 len;
    VIP_UINT8 bytes[VIP_MAX_HOST_ADDRESS_LEN];
};

static inline struct nic_address *gather_nic_addresses(const VIP_NIC_ATTRIBUTES *attr) {
    struct nic_address mine;
    struct nic_address *all = calloc((size_t)vipl_boot_size(), sizeof *all);
    memset(&mine, 0, sizeof mine);
    mine.len = attr->NicAddressLen;
    memcpy(mine.bytes, attr->LocalNicAddress, attr->NicAddressLen);
    if (!all || vipl_boot_allgather(&mine, sizeof mine, all) != VIPL_BOOT_OK) {
        fprintf(stderr, "rank %d: vipl_boot_allgather failed\n", vipl_boot_rank());
        exit(1);
    }
    return all;
}

/*
 * Connects vi between rank 0 (server: VipConnectWait + VipConnectAccept) and
 * rank 1 (client: VipConnectRequest).  The client retries while the server is not
 * listening yet.  Receives should be posted before calling this.
 */
static inline void connect_pair(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, const VIP_NIC_ATTRIBUTES *attr,
                                const struct nic_address *peer, const char *disc) {
    VIP_VI_ATTRIBUTES remote_attr;
    if (vipl_boot_rank() == 0) {
        VIP_NET_ADDRESS *local = make_address(attr->LocalNicAddress, attr->NicAddressLen, disc);
        VIP_NET_ADDRESS *remote = make_address(peer->bytes, 0, "");
        VIP_CONN_HANDLE conn;
        CHECK(VipConnectWait(nic, local, 10000, remote, &remote_attr, &conn));
        CHECK(VipConnectAccept(conn, vi));
        free(local);
        free(remote);
    } else {
        VIP_NET_ADDRESS *local = make_address(attr->LocalNicAddress, attr->NicAddressLen, "client");
        VIP_NET_ADDRESS *remote = make_address(peer->bytes, peer->len, disc);
        VIP_RETURN rc;
        int tries = 0;
        do rc = VipConnectRequest(vi, local, remote, 200, &remote_attr);
        while ((rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) && ++tries < 50);
        if (rc != VIP_SUCCESS) die_rc("VipConnectRequest", rc);
        free(local);
        free(remote);
    }
}

/* Disconnects (completing any posted descriptors as flushed), reaps them, destroys. */
static inline void teardown_vi(VIP_VI_HANDLE vi) {
    VIP_DESCRIPTOR *d;
    VIP_VI_STATE state;
    VIP_VI_ATTRIBUTES attr;
    VIP_BOOLEAN send_empty = VIP_TRUE, recv_empty = VIP_TRUE;
    VipDisconnect(vi);
    for (int i = 0; i < 1000; i++) {
        while (VipSendDone(vi, &d) == VIP_SUCCESS || VipRecvDone(vi, &d) == VIP_SUCCESS)
            ;
        if (VipQueryVi(vi, &state, &attr, &send_empty, &recv_empty) != VIP_SUCCESS || (send_empty && recv_empty)) break;
        VipRecvWait(vi, 1, &d); /* let the flush finish */
    }
    VIP_RETURN rc = VipDestroyVi(vi);
    if (rc != VIP_SUCCESS) fprintf(stderr, "rank %d: VipDestroyVi: %s\n", vipl_boot_rank(), VipxReturnString(rc));
}

/* Reliability level from a command-line word: u, rd or rr. */
static inline VIP_RELIABILITY_LEVEL parse_level(const char *s) {
    if (!strcmp(s, "u")) return VIP_SERVICE_UNRELIABLE;
    if (!strcmp(s, "rd")) return VIP_SERVICE_RELIABLE_DELIVERY;
    if (!strcmp(s, "rr")) return VIP_SERVICE_RELIABLE_RECEPTION;
    fprintf(stderr, "unknown reliability level '%s' (use u, rd or rr)\n", s);
    exit(2);
}

/* The most reliable level the NIC supports. */
static inline VIP_RELIABILITY_LEVEL best_level(const VIP_NIC_ATTRIBUTES *attr) {
    if (attr->ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY) return VIP_SERVICE_RELIABLE_DELIVERY;
    if (attr->ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_RECEPTION) return VIP_SERVICE_RELIABLE_RECEPTION;
    return VIP_SERVICE_UNRELIABLE;
}

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median of n samples (sorts them in place). */
static inline uint64_t median_u64(uint64_t *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_u64);
    return n ? v[n / 2] : 0;
}

/* Page-aligned, zeroed memory. */
static inline void *alloc_pages(size_t len) {
    size_t rounded = (len + 4095) & ~(size_t)4095;
    void *p = aligned_alloc(4096, rounded ? rounded : 4096);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", len);
        exit(1);
    }
    memset(p, 0, rounded ? rounded : 4096);
    return p;
}

#endif /* VI_EXAMPLE_H */
