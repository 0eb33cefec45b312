/*
 * vi_rdma_bw - RDMA-write bandwidth between two processes over a VI.
 *
 *   vipl-run -n 2 vi_rdma_bw [-m max_bytes] [-n writes_per_size] [-d depth] [-l u|rd|rr] [-a] [-s start_bytes]
 *
 * Rank 1 registers a buffer with RDMA write enabled and sends its address and
 * memory handle to rank 0.  For each size 1, 2, 4, ... max_bytes, rank 0 keeps up
 * to `depth` RDMA writes in flight; the last write of a size carries immediate
 * data, which consumes a receive descriptor at rank 1 and so tells it the size is
 * complete.  Rank 1 checks the bytes and answers with a zero-byte send.  Rank 0
 * prints one line per size:  <bytes>  <writes>  <MB/s>  <usec/write>
 *
 * -s starts the sweep at start_bytes (rounded down to a power of two) instead of 1.
 * -a takes both data buffers from VipxAllocMem (the viastack extension for memory
 * the NIC moves cheaply: on nicfw, shared memory the peer's NIC maps, so a large
 * write is one memcpy) instead of the heap (nicfw: cross-memory attach).
 *
 * VI concepts shown: RDMA enables on the VI and on the memory region, descriptors
 * with an address segment (SegCount counts it), RDMA write with immediate data,
 * a send queue kept `depth` deep.
 */
#include <unistd.h>

#include "vi_example.h"

#define MAX_DEPTH 64
#define MAX_SIZES 40

static void usage(void) {
    fprintf(stderr,
            "usage: vipl-run -n 2 vi_rdma_bw [-m max_bytes] [-n writes_per_size] "
            "[-d depth(1..%d)] [-l u|rd|rr] [-a] [-s start_bytes]\n",
            MAX_DEPTH);
    exit(2);
}

/* Byte i of the data written for a given size. */
static uint8_t pattern(size_t i, size_t size) { return (uint8_t)(i * 7 + size); }

struct region_info {
    uint64_t addr;
    VIP_MEM_HANDLE handle;
    uint32_t len;
};

static VIP_DESCRIPTOR *wait_recv(VIP_VI_HANDLE vi, const char *what) {
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc = VipRecvWait(vi, 10000, &d);
    if (rc != VIP_SUCCESS) die_rc(what, rc);
    check_status(d, what);
    return d;
}

static VIP_DESCRIPTOR *wait_send(VIP_VI_HANDLE vi, const char *what) {
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc = VipSendWait(vi, 10000, &d);
    if (rc != VIP_SUCCESS) die_rc(what, rc);
    check_status(d, what);
    return d;
}

static void prepare_sendrecv(VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh, VIP_UINT32 len) {
    memset(&d->CS, 0, sizeof d->CS);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = len ? 1 : 0;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = buf;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = len;
}

/* What both ranks hold once the VI is connected. */
struct bench {
    VIP_VI_HANDLE vi;
    VIP_MEM_HANDLE data_mh, ctl_mh;
    uint8_t *data;
    VIP_DESCRIPTOR *desc; /* control descriptors, then the initiator's ring */
    struct region_info *info;
    size_t first, max_bytes;
    int nsizes, writes, depth;
};

static size_t last_size(const struct bench *b) { return b->first << (b->nsizes - 1); }

/* Target: publish the region, then check each size as its immediate arrives. */
static void run_target(struct bench *b) {
    b->info->addr = (uint64_t)(uintptr_t)b->data;
    b->info->handle = b->data_mh;
    b->info->len = (uint32_t)b->max_bytes;
    VIP_DESCRIPTOR *sd = &b->desc[MAX_SIZES + 2];
    prepare_sendrecv(sd, b->info, b->ctl_mh, sizeof *b->info);
    CHECK(VipPostSend(b->vi, sd, b->ctl_mh));
    wait_send(b->vi, "send of the region info");
    for (size_t size = b->first; size <= last_size(b); size *= 2) {
        VIP_DESCRIPTOR *r = wait_recv(b->vi, "RDMA write with immediate");
        if ((r->CS.Status & VIP_STATUS_OP_MASK) != VIP_STATUS_OP_REMOTE_RDMA_WRITE ||
            !(r->CS.Status & VIP_STATUS_IMMEDIATE) || r->CS.ImmediateData != size) {
            fprintf(stderr, "rank 1: unexpected completion for size %zu (immediate %u)\n", size, r->CS.ImmediateData);
            vipl_boot_abort(1, "bad immediate");
        }
        for (size_t i = 0; i < size; i++)
            if (b->data[i] != pattern(i, size)) {
                fprintf(stderr, "rank 1: size %zu: byte %zu is %u, expected %u\n", size, i, b->data[i],
                        pattern(i, size));
                vipl_boot_abort(1, "RDMA data mismatch");
            }
        prepare_sendrecv(sd, NULL, b->ctl_mh, 0);
        CHECK(VipPostSend(b->vi, sd, b->ctl_mh));
        wait_send(b->vi, "ack");
    }
}

/* One RDMA write of `size` bytes into the target's region; the last of a size
 * carries the size as immediate data. */
static void post_write(const struct bench *b, VIP_DESCRIPTOR *d, size_t size, int last) {
    memset(&d->CS, 0, sizeof d->CS);
    d->CS.Control = VIP_CONTROL_OP_RDMAWRITE | (last ? VIP_CONTROL_IMMEDIATE : 0);
    d->CS.ImmediateData = (VIP_UINT32)size;
    d->CS.SegCount = 2; /* address segment + one data segment */
    d->CS.Length = (VIP_UINT32)size;
    d->DS[0].Remote.Data.AddressBits = b->info->addr;
    d->DS[0].Remote.Handle = b->info->handle;
    d->DS[0].Remote.Reserved = 0;
    d->DS[1].Local.Data.Address = b->data;
    d->DS[1].Local.Handle = b->data_mh;
    d->DS[1].Local.Length = (VIP_UINT32)size;
    CHECK(VipPostSend(b->vi, d, b->ctl_mh));
}

/* Seconds for `writes` writes of one size, kept `depth` deep. */
static double time_size(const struct bench *b, size_t size) {
    VIP_DESCRIPTOR *ring = &b->desc[MAX_SIZES + 4];
    int posted = 0, completed = 0;
    uint64_t t0 = now_ns();
    while (completed < b->writes) {
        while (posted < b->writes && posted - completed < b->depth) {
            post_write(b, &ring[posted % b->depth], size, posted == b->writes - 1);
            posted++;
        }
        VIP_DESCRIPTOR *done;
        VIP_RETURN rc;
        while ((rc = VipSendDone(b->vi, &done)) == VIP_NOT_DONE)
            ;
        if (rc != VIP_SUCCESS) die_rc("VipSendDone", rc);
        check_status(done, "RDMA write");
        completed++;
    }
    return (double)(now_ns() - t0) / 1e9;
}

/* Initiator: learn the region, then one timed line per size. */
static int run_initiator(struct bench *b, const char *nic_name, int nic_mem) {
    wait_recv(b->vi, "region info"); /* desc[0] */
    if (b->info->len < b->max_bytes) {
        fprintf(stderr, "rank 0: target region is only %u bytes\n", b->info->len);
        return 1;
    }
    printf("vi_rdma_bw: RDMA write, %d writes per size, depth %d, NIC %s, %s memory\n", b->writes, b->depth, nic_name,
           nic_mem ? "VipxAllocMem" : "heap");
    printf("%10s %8s %12s %12s\n", "bytes", "writes", "MB/s", "usec/write");
    double best = 0;
    for (size_t size = b->first; size <= last_size(b); size *= 2) {
        for (size_t i = 0; i < size; i++) b->data[i] = pattern(i, size);
        double secs = time_size(b, size);
        double mbs = (double)size * b->writes / secs / 1e6;
        if (mbs > best) best = mbs;
        printf("%10zu %8d %12.1f %12.3f\n", size, b->writes, mbs, secs * 1e6 / b->writes);
        fflush(stdout);
        wait_recv(b->vi, "ack from the target"); /* target checked the bytes */
    }
    printf("peak RDMA write bandwidth = %.1f MB/s\n", best);
    return 0;
}

int main(int argc, char **argv) {
    struct bench b = {.max_bytes = 1 << 20, .writes = 200, .depth = 8};
    size_t start = 1;
    int opt, nic_mem = 0;
    VIP_RELIABILITY_LEVEL level = 0;
    while ((opt = getopt(argc, argv, "m:n:d:l:as:h")) != -1) {
        switch (opt) {
        case 'm': b.max_bytes = strtoul(optarg, NULL, 0); break;
        case 'n': b.writes = atoi(optarg); break;
        case 'd': b.depth = atoi(optarg); break;
        case 'l': level = parse_level(optarg); break;
        case 'a': nic_mem = 1; break;
        case 's': start = strtoul(optarg, NULL, 0); break;
        default: usage();
        }
    }
    if (b.writes < 1 || b.depth < 1 || b.depth > MAX_DEPTH || b.max_bytes < 1 || start < 1) usage();
    int rank = join_pair("vi_rdma_bw");

    VIP_NIC_HANDLE nic;
    VIP_NIC_ATTRIBUTES attr;
    CHECK(VipOpenNic(NULL, &nic));
    CHECK(VipQueryNic(nic, &attr));
    if (b.max_bytes > attr.MaxTransferSize) b.max_bytes = attr.MaxTransferSize;
    if (!level) level = best_level(&attr);
    b.first = 1;
    while (b.first * 2 <= start && b.first * 2 <= b.max_bytes) b.first *= 2;
    for (size_t s = b.first; s <= b.max_bytes && b.nsizes < MAX_SIZES; s *= 2) b.nsizes++;

    /* Data buffer (the RDMA target on rank 1, the source on rank 0), plus a small
     * region for descriptors and control messages, registered separately so that
     * only the data buffer is open to RDMA writes. */
    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));
    if (nic_mem) {
        VIP_PVOID p;
        CHECK(VipxAllocMem(nic, b.max_bytes, &p));
        b.data = p;
    } else {
        b.data = alloc_pages(b.max_bytes);
    }
    VIP_MEM_ATTRIBUTES data_attr = {ptag, rank == 1 ? VIP_TRUE : VIP_FALSE, VIP_FALSE};
    CHECK(VipRegisterMem(nic, b.data, b.max_bytes, &data_attr, &b.data_mh));
    size_t ndesc = MAX_DEPTH + MAX_SIZES + 4;
    size_t ctl_len = ndesc * sizeof(VIP_DESCRIPTOR) + 4096;
    uint8_t *ctl = alloc_pages(ctl_len);
    VIP_MEM_ATTRIBUTES ctl_attr = {ptag, VIP_FALSE, VIP_FALSE};
    CHECK(VipRegisterMem(nic, ctl, ctl_len, &ctl_attr, &b.ctl_mh));
    b.desc = (VIP_DESCRIPTOR *)ctl; /* ndesc descriptors */
    b.info = (struct region_info *)(ctl + ndesc * sizeof(VIP_DESCRIPTOR));

    /* The VI accepts RDMA writes on the target side. */
    VIP_VI_ATTRIBUTES vattr = {level, attr.MaxTransferSize, NULL, ptag, rank == 1 ? VIP_TRUE : VIP_FALSE, VIP_FALSE};
    CHECK(VipCreateVi(nic, &vattr, NULL, NULL, &b.vi));

    /* Receives posted before connecting.  Rank 0: the region info, then one ack per
     * size.  Rank 1: one receive per size for the RDMA write with immediate. */
    if (rank == 0) {
        prepare_sendrecv(&b.desc[0], b.info, b.ctl_mh, sizeof *b.info);
        CHECK(VipPostRecv(b.vi, &b.desc[0], b.ctl_mh));
    }
    for (int i = 0; i < b.nsizes; i++) {
        prepare_sendrecv(&b.desc[1 + i], NULL, b.ctl_mh, 0);
        CHECK(VipPostRecv(b.vi, &b.desc[1 + i], b.ctl_mh));
    }
    struct nic_address *addrs = gather_nic_addresses(&attr);
    connect_pair(nic, b.vi, &attr, &addrs[1 - rank], "vi_rdma_bw");

    if (rank == 1) run_target(&b);
    else if (run_initiator(&b, attr.Name, nic_mem) != 0) return 1;

    vipl_boot_barrier();
    teardown_vi(b.vi);
    VipDeregisterMem(nic, b.data, b.data_mh);
    VipDeregisterMem(nic, ctl, b.ctl_mh);
    VipDestroyPtag(nic, ptag);
    if (nic_mem) VipxFreeMem(nic, b.data);
    else free(b.data);
    VipCloseNic(nic);
    free(ctl);
    free(addrs);
    vipl_boot_finalize();
    return 0;
}
