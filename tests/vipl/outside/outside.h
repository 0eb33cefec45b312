/*
 * outside.h - helpers of the "outside user" VI programs (tests/vipl/outside):
 * programs written from the VI Architecture Specification 1.0 alone, in the
 * style of the M-VIA and Giganet cLAN examples, against vipl.h and the job
 * bootstrap (vipl_boot.h) only.  Each runs as `vipl-run -n 2 prog`.
 */
#ifndef OUTSIDE_H
#define OUTSIDE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vipl.h"
#include "vipl_boot.h"

static int g_rank = -1;

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__);                                               \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fputc('\n', stderr);                                                                                           \
        vipl_boot_abort(1, "check failed");                                                                            \
    } while (0)

/* A call that must return `want`. */
#define EXPECT_RC(call, want)                                                                                          \
    do {                                                                                                               \
        VIP_RETURN rc_ = (call);                                                                                       \
        if (rc_ != (want))                                                                                             \
            FAIL("%s returned %s, spec expects %s", #call, VipxReturnString(rc_), VipxReturnString(want));             \
    } while (0)
#define CHECK(call) EXPECT_RC(call, VIP_SUCCESS)

static inline int outside_join(const char *prog) {
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() != 2) {
        fprintf(stderr, "%s needs two processes: vipl-run -n 2 %s\n", prog, prog);
        exit(2);
    }
    g_rank = vipl_boot_rank();
    return g_rank;
}

static inline const char *status_str(VIP_UINT32 s) {
    static char buf[256];
    return VipxStatusString(s, buf, sizeof buf);
}

/* Status must be DONE, no error bits, and the given operation. */
static inline void expect_ok(const VIP_DESCRIPTOR *d, VIP_UINT32 op, const char *what) {
    VIP_UINT32 s = d->CS.Status;
    if (!(s & VIP_STATUS_DONE) || (s & VIP_STATUS_ERROR_MASK) || (s & VIP_STATUS_OP_MASK) != op)
        FAIL("%s: status %s", what, status_str(s));
}

/* Registered memory of one process: descriptors and data carved from it. */
struct arena {
    VIP_NIC_HANDLE nic;
    char *base;
    size_t size, used;
    VIP_MEM_HANDLE mh;
};

static inline void arena_init(struct arena *a, VIP_NIC_HANDLE nic, size_t size, VIP_MEM_ATTRIBUTES *attrs) {
    a->nic = nic;
    a->size = size;
    a->used = 0;
    if (posix_memalign((void **)&a->base, 4096, size)) FAIL("out of memory");
    memset(a->base, 0, size);
    CHECK(VipRegisterMem(nic, a->base, size, attrs, &a->mh));
}

static inline void *arena_get(struct arena *a, size_t len) {
    size_t at = (a->used + 63) & ~(size_t)63;
    if (at + len > a->size) FAIL("arena full");
    a->used = at + len;
    return a->base + at;
}

/* A descriptor with room for nseg segments (VIP_DESCRIPTOR declares two). */
static inline VIP_DESCRIPTOR *arena_desc(struct arena *a, int nseg) {
    size_t len = sizeof(VIP_CONTROL_SEGMENT) + (size_t)(nseg < 2 ? 2 : nseg) * sizeof(VIP_DESCRIPTOR_SEGMENT);
    return (VIP_DESCRIPTOR *)arena_get(a, len);
}

static inline void arena_free(struct arena *a) {
    CHECK(VipDeregisterMem(a->nic, a->base, a->mh));
    free(a->base);
}

/* Segment i of a descriptor allocated with room for it (DS is declared [2]:
 * index through a pointer, as -Warray-bounds wants). */
static inline VIP_DESCRIPTOR_SEGMENT *seg(VIP_DESCRIPTOR *d, int i) {
    return (VIP_DESCRIPTOR_SEGMENT *)((char *)d + sizeof(VIP_CONTROL_SEGMENT)) + i;
}

static inline void set_seg(VIP_DESCRIPTOR *d, int i, void *p, VIP_UINT32 len, VIP_MEM_HANDLE h) {
    seg(d, i)->Local.Data.Address = p;
    seg(d, i)->Local.Handle = h;
    seg(d, i)->Local.Length = len;
}

/* Room for any address with a discriminator. */
#define ADDR_BYTES VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN)

static inline VIP_NET_ADDRESS *new_addr(void) {
    VIP_NET_ADDRESS *a = (VIP_NET_ADDRESS *)calloc(1, ADDR_BYTES);
    if (!a) FAIL("out of memory");
    return a;
}

static inline void set_disc(VIP_NET_ADDRESS *a, const char *disc) {
    a->DiscriminatorLen = (VIP_UINT16)strlen(disc);
    memcpy(a->HostAddress + a->HostAddressLen, disc, a->DiscriminatorLen);
}

/* This NIC's address (VipQueryNic) with a discriminator. */
static inline VIP_NET_ADDRESS *local_addr(VIP_NIC_HANDLE nic, const char *disc) {
    VIP_NIC_ATTRIBUTES na;
    CHECK(VipQueryNic(nic, &na));
    VIP_NET_ADDRESS *a = new_addr();
    a->HostAddressLen = na.NicAddressLen;
    memcpy(a->HostAddress, na.LocalNicAddress, na.NicAddressLen);
    set_disc(a, disc);
    return a;
}

/* The peer's address through the name service ("node<r>"), with a discriminator. */
static inline VIP_NET_ADDRESS *peer_addr(VIP_NIC_HANDLE nic, int rank, const char *disc) {
    char name[32];
    snprintf(name, sizeof name, "node%d", rank);
    VIP_NET_ADDRESS *a = new_addr();
    CHECK(VipNSGetHostByName(nic, name, a, 0));
    set_disc(a, disc);
    return a;
}

static inline void fill(void *p, size_t n, unsigned seed) {
    unsigned char *b = (unsigned char *)p;
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

static inline int check_fill(const void *p, size_t n, unsigned seed, size_t from) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) {
        size_t j = from + i;
        if (b[i] != (unsigned char)(seed * 131u + j * 7u + (j >> 8))) return 0;
    }
    return 1;
}

static inline double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void barrier(void) {
    if (vipl_boot_barrier() != VIPL_BOOT_OK) FAIL("barrier failed");
}

#endif
