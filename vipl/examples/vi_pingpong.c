/*
 * vi_pingpong - send/receive ping-pong between two processes over a VI.
 *
 *   vipl-run -n 2 vi_pingpong [-s bytes] [-n iterations] [-w warmup] [-l u|rd|rr]
 *
 * Rank 0 sends a message, rank 1 answers with one of the same size; each round
 * trip is timed, and after the warm-up rounds the median is printed as
 *   RTT/2 = <median> ns
 * For scale, the same two processes then ping-pong one cache line in shared
 * memory (/dev/shm/viastack-<job>-rawpp), the floor any shared-memory transport
 * pays per message:
 *   raw cache-line RTT/2 = <median> ns
 *
 * VI concepts shown: registered memory holding both data and descriptors, a
 * receive posted before the connection exists (so the peer can never find the
 * queue empty), polling completion with VipRecvDone/VipSendDone.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vi_example.h"

static void usage(void) {
    fprintf(stderr,
            "usage: vipl-run -n 2 vi_pingpong [-s bytes] [-n iterations] [-w warmup] "
            "[-l u|rd|rr]\n");
    exit(2);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spin until a descriptor completes on the send (or receive) queue. */
static VIP_DESCRIPTOR *poll_send(VIP_VI_HANDLE vi) {
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc;
    while ((rc = VipSendDone(vi, &d)) == VIP_NOT_DONE) cpu_relax();
    if (rc != VIP_SUCCESS) die_rc("VipSendDone", rc);
    check_status(d, "send");
    return d;
}

/* Waits for a receive and, while waiting, retires the last send if it is still
 * outstanding (*send_pending): its completion then costs nothing on the round
 * trip, as a latency-minded VI program would arrange. */
static VIP_DESCRIPTOR *poll_recv_reaping(VIP_VI_HANDLE vi, int *send_pending) {
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc;
    while ((rc = VipRecvDone(vi, &d)) == VIP_NOT_DONE) {
        if (*send_pending) {
            VIP_RETURN src = VipSendDone(vi, &d);
            if (src == VIP_SUCCESS) {
                check_status(d, "send");
                *send_pending = 0;
            } else if (src != VIP_NOT_DONE) {
                die_rc("VipSendDone", src);
            }
        } else {
            cpu_relax();
        }
    }
    if (rc != VIP_SUCCESS) die_rc("VipRecvDone", rc);
    check_status(d, "receive");
    return d;
}

/* One data segment descriptor (send or receive) over buf. */
static void prepare(VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh, VIP_UINT32 len) {
    memset(&d->CS, 0, sizeof d->CS);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = 1;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = buf;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = len;
}

/* ---- raw shared-memory cache-line ping-pong ----------------------------------- */
struct shared_line {
    _Alignas(64) _Atomic uint64_t seq; /* odd: rank 0 pinged; even: rank 1 answered */
};

static void raw_pingpong(int iters, int warmup, uint64_t *samples) {
    char path[256];
    snprintf(path, sizeof path, "/dev/shm/viastack-%s-rawpp", vipl_boot_job());
    int rank = vipl_boot_rank();
    int fd = -1;
    if (rank == 0) {
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, 4096) != 0) {
            perror(path);
            vipl_boot_abort(1, "cannot create the raw ping-pong file");
        }
    }
    vipl_boot_barrier();
    if (rank == 1 && (fd = open(path, O_RDWR)) < 0) {
        perror(path);
        vipl_boot_abort(1, "cannot open the raw ping-pong file");
    }
    struct shared_line *line = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (line == MAP_FAILED) {
        perror("mmap");
        vipl_boot_abort(1, "mmap of the raw ping-pong file failed");
    }
    close(fd);
    vipl_boot_barrier();

    for (int i = 0; i < warmup + iters; i++) {
        uint64_t ping = 2 * (uint64_t)i + 1, pong = ping + 1;
        if (rank == 0) {
            uint64_t t0 = now_ns();
            atomic_store_explicit(&line->seq, ping, memory_order_release);
            while (atomic_load_explicit(&line->seq, memory_order_acquire) != pong) cpu_relax();
            if (i >= warmup) samples[i - warmup] = now_ns() - t0;
        } else {
            while (atomic_load_explicit(&line->seq, memory_order_acquire) != ping) cpu_relax();
            atomic_store_explicit(&line->seq, pong, memory_order_release);
        }
    }
    vipl_boot_barrier();
    munmap(line, 4096);
    if (rank == 0) unlink(path);
}

int main(int argc, char **argv) {
    size_t size = 16;
    int iters = 10000, warmup = 1000, opt;
    VIP_RELIABILITY_LEVEL level = 0;
    while ((opt = getopt(argc, argv, "s:n:w:l:h")) != -1) {
        switch (opt) {
        case 's': size = strtoul(optarg, NULL, 0); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'l': level = parse_level(optarg); break;
        default: usage();
        }
    }
    if (iters < 1 || warmup < 0) usage();
    int rank = join_pair("vi_pingpong");

    /* NIC, protection tag, and one registered region: [send buf | recv buf | descriptors] */
    VIP_NIC_HANDLE nic;
    VIP_NIC_ATTRIBUTES attr;
    CHECK(VipOpenNic(NULL, &nic));
    CHECK(VipQueryNic(nic, &attr));
    if (size > attr.MaxTransferSize) {
        fprintf(stderr, "message size %zu exceeds the NIC's MaxTransferSize %lu\n", size,
                (unsigned long)attr.MaxTransferSize);
        return 1;
    }
    if (!level) level = best_level(&attr);
    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));
    size_t buf_bytes = (size + 63) & ~(size_t)63;
    size_t region_len = 2 * buf_bytes + 3 * sizeof(VIP_DESCRIPTOR) + 64;
    uint8_t *region = alloc_pages(region_len);
    VIP_MEM_ATTRIBUTES mattr = {ptag, VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE mh;
    CHECK(VipRegisterMem(nic, region, region_len, &mattr, &mh));
    uint8_t *send_buf = region, *recv_buf = region + buf_bytes;
    VIP_DESCRIPTOR *send_desc = (VIP_DESCRIPTOR *)(region + 2 * buf_bytes);
    VIP_DESCRIPTOR *recv_desc = send_desc + 1; /* sizeof(VIP_DESCRIPTOR) is 64; two receives */
    memset(send_buf, 'a' + rank, size);

    /* VI, two receives posted before connecting: a spare stays posted while the
     * other is reposted, so reposting never sits between a receive and the reply. */
    VIP_VI_ATTRIBUTES vattr = {level, attr.MaxTransferSize, NULL, ptag, VIP_FALSE, VIP_FALSE};
    VIP_VI_HANDLE vi;
    CHECK(VipCreateVi(nic, &vattr, NULL, NULL, &vi));
    for (int k = 0; k < 2; k++) {
        prepare(&recv_desc[k], recv_buf, mh, (VIP_UINT32)size);
        CHECK(VipPostRecv(vi, &recv_desc[k], mh));
    }
    struct nic_address *addrs = gather_nic_addresses(&attr);
    connect_pair(nic, vi, &attr, &addrs[1 - rank], "vi_pingpong");

    /* ping-pong over the VI */
    uint64_t *vi_samples = calloc((size_t)iters, sizeof *vi_samples);
    uint64_t *raw_samples = calloc((size_t)iters, sizeof *raw_samples);
    vipl_boot_barrier();
    int send_pending = 0; /* a send posted and not yet retired */
    for (int i = 0; i < warmup + iters; i++) {
        if (rank == 0) {
            uint64_t t0 = now_ns();
            if (send_pending) { /* rare: it is usually retired while the reply is awaited */
                poll_send(vi);
                send_pending = 0;
            }
            prepare(send_desc, send_buf, mh, (VIP_UINT32)size);
            CHECK(VipPostSend(vi, send_desc, mh));
            send_pending = 1;
            VIP_DESCRIPTOR *r = poll_recv_reaping(vi, &send_pending);
            prepare(r, recv_buf, mh, (VIP_UINT32)size);
            CHECK(VipPostRecv(vi, r, mh));
            if (i >= warmup) vi_samples[i - warmup] = now_ns() - t0;
        } else {
            VIP_DESCRIPTOR *r = poll_recv_reaping(vi, &send_pending);
            if (r->CS.Length != size) {
                fprintf(stderr, "rank 1: received %u bytes, expected %zu\n", r->CS.Length, size);
                vipl_boot_abort(1, "wrong message length");
            }
            if (send_pending) { /* the send descriptor is about to be reused */
                poll_send(vi);
                send_pending = 0;
            }
            prepare(send_desc, send_buf, mh, (VIP_UINT32)size);
            CHECK(VipPostSend(vi, send_desc, mh)); /* reply first, then repost */
            send_pending = 1;
            prepare(r, recv_buf, mh, (VIP_UINT32)size);
            CHECK(VipPostRecv(vi, r, mh));
        }
    }
    if (send_pending) poll_send(vi);
    if (size && recv_buf[0] != 'a' + (1 - rank)) {
        fprintf(stderr, "rank %d: received wrong data\n", rank);
        return 1;
    }
    vipl_boot_barrier(); /* both done before either disconnects */

    raw_pingpong(iters, warmup, raw_samples);

    if (rank == 0) {
        uint64_t vi_half = median_u64(vi_samples, (size_t)iters) / 2;
        uint64_t raw_half = median_u64(raw_samples, (size_t)iters) / 2;
        printf("vi_pingpong: %zu-byte messages, %d iterations after %d warm-up, NIC %s\n", size, iters, warmup,
               attr.Name);
        printf("RTT/2 = %llu ns\n", (unsigned long long)vi_half);
        printf("raw cache-line RTT/2 = %llu ns\n", (unsigned long long)raw_half);
        printf("ratio VI/raw = %.1f\n", raw_half ? (double)vi_half / (double)raw_half : 0.0);
        fflush(stdout);
    }

    teardown_vi(vi);
    VipDeregisterMem(nic, region, mh);
    VipDestroyPtag(nic, ptag);
    VipCloseNic(nic);
    free(region);
    free(vi_samples);
    free(raw_samples);
    free(addrs);
    vipl_boot_finalize();
    return 0;
}
