/*
 * vi_msg_rate - send/receive message rate between two processes over a VI.
 *
 *   vipl-run -n 2 vi_msg_rate [-s bytes] [-n messages] [-b burst] [-r rounds]
 *
 * Rank 1 keeps RECVS receives posted and re-posts each one as soon as it
 * completes.  Rank 0 sends `messages` messages of `bytes` bytes in bursts of
 * `burst` (at most RECVS - 16, so a burst never finds the receive queue empty: on
 * a reliable VI that would break the connection); after each burst rank 1
 * answers with a zero-byte send, the burst's flow control.  The send queue is
 * reaped only when SENDS descriptors are outstanding, so in the steady state
 * each message costs one VipPostSend at the sender and one VipRecvDone plus one
 * VipPostRecv at the receiver.  Rank 0 prints, per round, the time per message
 * (the gap g of LogP for this size) and the message rate, then the median.
 *
 * VI concepts shown: pre-posted receives and the reliability levels' rule that
 * a send needs a posted receive, a send ring reaped lazily with VipSendDone,
 * receive polling with VipRecvDone.
 */
#include <unistd.h>

#include "vi_example.h"

#define SENDS 64
#define RECVS 256
#define MAX_BYTES 4096
#define MAX_ROUNDS 100

static VIP_DESCRIPTOR *poll_recv(VIP_VI_HANDLE vi, const char *what) {
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc;
    while ((rc = VipRecvDone(vi, &d)) == VIP_NOT_DONE)
        ;
    if (rc != VIP_SUCCESS) die_rc(what, rc);
    check_status(d, what);
    return d;
}

static void reap_one_send(VIP_VI_HANDLE vi) {
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc;
    while ((rc = VipSendDone(vi, &d)) == VIP_NOT_DONE)
        ;
    if (rc != VIP_SUCCESS) die_rc("VipSendDone", rc);
    check_status(d, "send");
}

static void post_recv(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh) {
    memset(&d->CS, 0, sizeof d->CS);
    d->CS.SegCount = 1;
    d->CS.Length = MAX_BYTES;
    d->DS[0].Local.Data.Address = buf;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = MAX_BYTES;
    CHECK(VipPostRecv(vi, d, mh));
}

static void post_send(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh, VIP_UINT32 len) {
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.Status = 0;
    d->CS.SegCount = len ? 1 : 0;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = buf;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = len;
    CHECK(VipPostSend(vi, d, mh));
}

int main(int argc, char **argv) {
    unsigned long bytes = 16;
    long messages = 1000000;
    int burst = RECVS - 16, rounds = 5, opt;
    while ((opt = getopt(argc, argv, "s:n:b:r:h")) != -1) {
        switch (opt) {
        case 's': bytes = strtoul(optarg, NULL, 0); break;
        case 'n': messages = atol(optarg); break;
        case 'b': burst = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        default:
            fprintf(stderr,
                    "usage: vipl-run -n 2 vi_msg_rate [-s bytes(<=%d)] [-n messages] "
                    "[-b burst(1..%d)] [-r rounds(1..%d)]\n",
                    MAX_BYTES, RECVS - 16, MAX_ROUNDS);
            return 2;
        }
    }
    if (bytes > MAX_BYTES || messages < 1 || burst < 1 || burst > RECVS - 16 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "vi_msg_rate: bad option (sizes up to %d bytes, bursts 1..%d, rounds 1..%d)\n", MAX_BYTES,
                RECVS - 16, MAX_ROUNDS);
        return 2;
    }
    int rank = join_pair("vi_msg_rate");

    VIP_NIC_HANDLE nic;
    VIP_NIC_ATTRIBUTES attr;
    CHECK(VipOpenNic(NULL, &nic));
    CHECK(VipQueryNic(nic, &attr));
    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipCreatePtag(nic, &ptag));

    /* One region: descriptors, then one buffer per receive, then the send buffer. */
    size_t ndesc = SENDS + RECVS + 1;
    size_t len = ndesc * sizeof(VIP_DESCRIPTOR) + (RECVS + 1) * (size_t)MAX_BYTES;
    uint8_t *mem = alloc_pages(len);
    VIP_MEM_ATTRIBUTES mattr = {ptag, VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE mh;
    CHECK(VipRegisterMem(nic, mem, len, &mattr, &mh));
    VIP_DESCRIPTOR *sdesc = (VIP_DESCRIPTOR *)mem, *rdesc = sdesc + SENDS, *ack = rdesc + RECVS;
    uint8_t *rbuf = mem + ndesc * sizeof(VIP_DESCRIPTOR), *sbuf = rbuf + RECVS * (size_t)MAX_BYTES;
    memset(sbuf, 0x5a, MAX_BYTES);

    VIP_VI_ATTRIBUTES vattr = {best_level(&attr), attr.MaxTransferSize, NULL, ptag, VIP_FALSE, VIP_FALSE};
    VIP_VI_HANDLE vi;
    CHECK(VipCreateVi(nic, &vattr, NULL, NULL, &vi));
    for (int i = 0; i < RECVS; i++) post_recv(vi, &rdesc[i], rbuf + (size_t)i * MAX_BYTES, mh);
    struct nic_address *addrs = gather_nic_addresses(&attr);
    connect_pair(nic, vi, &attr, &addrs[1 - rank], "vi_msg_rate");

    long bursts = (messages + burst - 1) / burst;
    uint64_t per_round[MAX_ROUNDS];
    if (rank == 0)
        printf("vi_msg_rate: %lu-byte sends, %ld per round in bursts of %d, NIC %s\n"
               "%6s %12s %14s\n",
               bytes, messages, burst, attr.Name, "round", "ns/message", "messages/s");
    for (int r = 0; r < rounds; r++) {
        if (rank == 0) {
            int outstanding = 0, next = 0;
            uint64_t t0 = now_ns();
            long left = messages;
            for (long b = 0; b < bursts; b++) {
                int n = left < burst ? (int)left : burst;
                for (int i = 0; i < n; i++) {
                    if (outstanding == SENDS) {
                        reap_one_send(vi);
                        outstanding--;
                    }
                    post_send(vi, &sdesc[next], sbuf, mh, (VIP_UINT32)bytes);
                    next = (next + 1) % SENDS;
                    outstanding++;
                }
                left -= n;
                VIP_DESCRIPTOR *d = poll_recv(vi, "burst acknowledgement");
                post_recv(vi, d, rbuf + (size_t)(d - rdesc) * MAX_BYTES, mh);
            }
            uint64_t ns = now_ns() - t0;
            while (outstanding-- > 0) reap_one_send(vi);
            per_round[r] = ns;
            printf("%6d %12.1f %14.0f\n", r, (double)ns / messages, messages / ((double)ns / 1e9));
            fflush(stdout);
        } else {
            long left = messages;
            for (long b = 0; b < bursts; b++) {
                int n = left < burst ? (int)left : burst;
                for (int i = 0; i < n; i++) {
                    VIP_DESCRIPTOR *d = poll_recv(vi, "message");
                    if (d->CS.Length != bytes) {
                        fprintf(stderr, "rank 1: a message of %u bytes, expected %lu\n", d->CS.Length, bytes);
                        vipl_boot_abort(1, "bad message length");
                    }
                    post_recv(vi, d, rbuf + (size_t)(d - rdesc) * MAX_BYTES, mh);
                }
                left -= n;
                post_send(vi, ack, sbuf, mh, 0);
                reap_one_send(vi);
            }
        }
    }
    if (rank == 0) printf("median: %.1f ns/message\n", (double)median_u64(per_round, (size_t)rounds) / messages);

    vipl_boot_barrier();
    teardown_vi(vi);
    VipDeregisterMem(nic, mem, mh);
    VipDestroyPtag(nic, ptag);
    VipCloseNic(nic);
    free(mem);
    free(addrs);
    vipl_boot_finalize();
    return 0;
}
