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

static void usage(void)
{
    fprintf(stderr, "usage: vipl-run -n 2 vi_rdma_bw [-m max_bytes] [-n writes_per_size] "
                    "[-d depth(1..%d)] [-l u|rd|rr] [-a] [-s start_bytes]\n", MAX_DEPTH);
    exit(2);
}

/* Byte i of the data written for a given size. */
static uint8_t pattern(size_t i, size_t size) { return (uint8_t)(i * 7 + size); }

struct region_info {
    uint64_t addr;
    VIP_MEM_HANDLE handle;
    uint32_t len;
};

static VIP_DESCRIPTOR *wait_recv(VIP_VI_HANDLE vi, const char *what)
{
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc = VipRecvWait(vi, 10000, &d);
    if (rc != VIP_SUCCESS)
        die_rc(what, rc);
    check_status(d, what);
    return d;
}

static VIP_DESCRIPTOR *wait_send(VIP_VI_HANDLE vi, const char *what)
{
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc = VipSendWait(vi, 10000, &d);
    if (rc != VIP_SUCCESS)
        die_rc(what, rc);
    check_status(d, what);
    return d;
}

static void prepare_sendrecv(VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh, VIP_UINT32 len)
{
    memset(&d->CS, 0, sizeof d->CS);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = len ? 1 : 0;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = buf;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = len;
}

int main(int argc, char **argv)
{
    size_t max_bytes = 1 << 20, start = 1;
    int writes = 200, depth = 8, opt, nic_mem = 0;
    VIP_RELIABILITY_LEVEL level = 0;
    while ((opt = getopt(argc, argv, "m:n:d:l:as:h")) != -1) {
        switch (opt) {
        case 'm': max_bytes = strtoul(optarg, NULL, 0); break;
        case 'n': writes = atoi(optarg); break;
        case 'd': depth = atoi(optarg); break;
        case 'l': level = parse_level(optarg); break;
        case 'a': nic_mem = 1; break;
        case 's': start = strtoul(optarg, NULL, 0); break;
        default: usage();
        }
    }
    if (writes < 1 || depth < 1 || depth > MAX_DEPTH || max_bytes < 1 || start < 1)
        usage();
    int rank = join_pair("vi_rdma_bw");

    VIP_NIC_HANDLE nic;
    VIP_NIC_ATTRIBUTES attr;
    CHECK(VipOpenNic(NULL, &nic));
    CHECK(VipQueryNic(nic, &attr));
    if (max_bytes > attr.MaxTransferSize)
        max_bytes = attr.MaxTransferSize;
    if (!level)
        level = best_level(&attr);
    size_t first = 1;
    while (first * 2 <= start && first * 2 <= max_bytes)
        first *= 2;
    int nsizes = 0;
    for (size_t s = first; s <= max_bytes && nsizes < MAX_SIZES; s *= 2)
        nsizes++;

    /* Data buffer (the RDMA target on rank 1, the source on rank 0), plus a small
     * region for descriptors and control messages, registered separately so that
     * only the data buffer is open to RDMA writes. */
    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));
    uint8_t *data;
    if (nic_mem) {
        VIP_PVOID p;
        CHECK(VipxAllocMem(nic, max_bytes, &p));
        data = p;
    } else {
        data = alloc_pages(max_bytes);
    }
    VIP_MEM_ATTRIBUTES data_attr = {ptag, rank == 1 ? VIP_TRUE : VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE data_mh;
    CHECK(VipRegisterMem(nic, data, max_bytes, &data_attr, &data_mh));
    size_t ndesc = MAX_DEPTH + MAX_SIZES + 4;
    size_t ctl_len = ndesc * sizeof(VIP_DESCRIPTOR) + 4096;
    uint8_t *ctl = alloc_pages(ctl_len);
    VIP_MEM_ATTRIBUTES ctl_attr = {ptag, VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE ctl_mh;
    CHECK(VipRegisterMem(nic, ctl, ctl_len, &ctl_attr, &ctl_mh));
    VIP_DESCRIPTOR *desc = (VIP_DESCRIPTOR *)ctl;                 /* ndesc descriptors */
    struct region_info *info = (struct region_info *)(ctl + ndesc * sizeof(VIP_DESCRIPTOR));

    /* The VI accepts RDMA writes on the target side. */
    VIP_VI_ATTRIBUTES vattr = {level, attr.MaxTransferSize, NULL, ptag,
                               rank == 1 ? VIP_TRUE : VIP_FALSE, VIP_FALSE};
    VIP_VI_HANDLE vi;
    CHECK(VipCreateVi(nic, &vattr, NULL, NULL, &vi));

    /* Receives posted before connecting.  Rank 0: the region info, then one ack per
     * size.  Rank 1: one receive per size for the RDMA write with immediate. */
    if (rank == 0) {
        prepare_sendrecv(&desc[0], info, ctl_mh, sizeof *info);
        CHECK(VipPostRecv(vi, &desc[0], ctl_mh));
    }
    for (int i = 0; i < nsizes; i++) {
        prepare_sendrecv(&desc[1 + i], NULL, ctl_mh, 0);
        CHECK(VipPostRecv(vi, &desc[1 + i], ctl_mh));
    }
    struct nic_address *addrs = gather_nic_addresses(&attr);
    connect_pair(nic, vi, &attr, &addrs[1 - rank], "vi_rdma_bw");

    if (rank == 1) {
        /* Target: publish the region, then check each size as its immediate arrives. */
        info->addr = (uint64_t)(uintptr_t)data;
        info->handle = data_mh;
        info->len = (uint32_t)max_bytes;
        VIP_DESCRIPTOR *sd = &desc[MAX_SIZES + 2];
        prepare_sendrecv(sd, info, ctl_mh, sizeof *info);
        CHECK(VipPostSend(vi, sd, ctl_mh));
        wait_send(vi, "send of the region info");
        for (size_t size = first; size <= max_bytes && size <= first << (nsizes - 1); size *= 2) {
            VIP_DESCRIPTOR *r = wait_recv(vi, "RDMA write with immediate");
            if ((r->CS.Status & VIP_STATUS_OP_MASK) != VIP_STATUS_OP_REMOTE_RDMA_WRITE ||
                !(r->CS.Status & VIP_STATUS_IMMEDIATE) || r->CS.ImmediateData != size) {
                fprintf(stderr, "rank 1: unexpected completion for size %zu (immediate %u)\n",
                        size, r->CS.ImmediateData);
                vipl_boot_abort(1, "bad immediate");
            }
            for (size_t i = 0; i < size; i++)
                if (data[i] != pattern(i, size)) {
                    fprintf(stderr, "rank 1: size %zu: byte %zu is %u, expected %u\n", size, i,
                            data[i], pattern(i, size));
                    vipl_boot_abort(1, "RDMA data mismatch");
                }
            prepare_sendrecv(sd, NULL, ctl_mh, 0);
            CHECK(VipPostSend(vi, sd, ctl_mh));
            wait_send(vi, "ack");
        }
    } else {
        wait_recv(vi, "region info"); /* desc[0] */
        if (info->len < max_bytes) {
            fprintf(stderr, "rank 0: target region is only %u bytes\n", info->len);
            return 1;
        }
        printf("vi_rdma_bw: RDMA write, %d writes per size, depth %d, NIC %s, %s memory\n", writes, depth,
               attr.Name, nic_mem ? "VipxAllocMem" : "heap");
        printf("%10s %8s %12s %12s\n", "bytes", "writes", "MB/s", "usec/write");
        VIP_DESCRIPTOR *ring = &desc[MAX_SIZES + 4];
        double best = 0;
        for (size_t size = first; size <= first << (nsizes - 1); size *= 2) {
            for (size_t i = 0; i < size; i++)
                data[i] = pattern(i, size);
            int posted = 0, completed = 0;
            uint64_t t0 = now_ns();
            while (completed < writes) {
                while (posted < writes && posted - completed < depth) {
                    VIP_DESCRIPTOR *d = &ring[posted % depth];
                    int last = posted == writes - 1;
                    memset(&d->CS, 0, sizeof d->CS);
                    d->CS.Control = VIP_CONTROL_OP_RDMAWRITE | (last ? VIP_CONTROL_IMMEDIATE : 0);
                    d->CS.ImmediateData = (VIP_UINT32)size;
                    d->CS.SegCount = 2; /* address segment + one data segment */
                    d->CS.Length = (VIP_UINT32)size;
                    d->DS[0].Remote.Data.AddressBits = info->addr;
                    d->DS[0].Remote.Handle = info->handle;
                    d->DS[0].Remote.Reserved = 0;
                    d->DS[1].Local.Data.Address = data;
                    d->DS[1].Local.Handle = data_mh;
                    d->DS[1].Local.Length = (VIP_UINT32)size;
                    CHECK(VipPostSend(vi, d, ctl_mh));
                    posted++;
                }
                VIP_DESCRIPTOR *done;
                VIP_RETURN rc;
                while ((rc = VipSendDone(vi, &done)) == VIP_NOT_DONE)
                    ;
                if (rc != VIP_SUCCESS)
                    die_rc("VipSendDone", rc);
                check_status(done, "RDMA write");
                completed++;
            }
            double secs = (double)(now_ns() - t0) / 1e9;
            double mbs = (double)size * writes / secs / 1e6;
            if (mbs > best)
                best = mbs;
            printf("%10zu %8d %12.1f %12.3f\n", size, writes, mbs, secs * 1e6 / writes);
            fflush(stdout);
            wait_recv(vi, "ack from the target"); /* target checked the bytes */
        }
        printf("peak RDMA write bandwidth = %.1f MB/s\n", best);
    }

    vipl_boot_barrier();
    teardown_vi(vi);
    VipDeregisterMem(nic, data, data_mh);
    VipDeregisterMem(nic, ctl, ctl_mh);
    VipDestroyPtag(nic, ptag);
    if (nic_mem)
        VipxFreeMem(nic, data);
    else
        free(data);
    VipCloseNic(nic);
    free(ctl);
    free(addrs);
    vipl_boot_finalize();
    return 0;
}
