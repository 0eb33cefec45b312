// layering_vi.cpp - the raw VI bandwidth the layers above are measured
// against (layering.hpp), on a VI of its own between ranks 0 and 1:
//   vi-send  sends into receive descriptors rank 1 keeps posted (2W of
//            them), with a window of 2W messages and an acknowledgement
//            every W: the credit scheme of any layer that uses sends, with
//            nothing else (no header, no copy, no matching)
//   vi-rdma  RDMA writes of the message into one registered buffer, up to
//            2W descriptors in flight, messages longer than the NIC's
//            MaxTransferSize in several writes; the last write carries
//            immediate data and rank 1 acknowledges it
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "layering.hpp"
#include "vipl.h"
#include "vipl_boot.h"

namespace layering {
namespace {

constexpr int W = 16;    // acknowledgement every W messages; 2W posted
constexpr int kAcks = 8; // receive descriptors rank 0 keeps for acknowledgements

struct Peer {
    uint16_t addr_len;
    uint8_t addr[64];
    uint64_t target; // rank 1's RDMA target buffer
    uint32_t target_mh;
};

struct Vi {
    VIP_NIC_HANDLE nic = nullptr;
    VIP_PROTECTION_HANDLE ptag = nullptr;
    VIP_VI_HANDLE vi = nullptr;
    VIP_MEM_HANDLE dmh = 0, smh = 0, rmh = 0, tmh = 0;
    VIP_DESCRIPTOR *sd = nullptr, *rd = nullptr; // 2W send, 2W + kAcks receive descriptors
    uint8_t *sbuf = nullptr, *rbuf = nullptr, *target = nullptr;
    size_t slot = 0; // bytes per receive buffer
    uint32_t max_transfer = 0;
    int sent_out = 0, next_sd = 0, reaped_sd = 0; // send descriptors in flight (ring)
};

void *alloc(size_t n) {
    void *p = std::aligned_alloc(4096, (n + 4095) & ~size_t(4095));
    std::memset(p, 0, n);
    return p;
}

bool reg(Vi &v, void *p, size_t n, bool rdma, VIP_MEM_HANDLE *mh) {
    VIP_MEM_ATTRIBUTES ma{v.ptag, rdma ? VIP_TRUE : VIP_FALSE, VIP_FALSE};
    return VipRegisterMem(v.nic, p, VIP_ULONG(n), &ma, mh) == VIP_SUCCESS;
}

void post_recv(Vi &v, int i, uint32_t len) {
    VIP_DESCRIPTOR *d = &v.rd[i];
    std::memset(d, 0, sizeof *d);
    d->CS.SegCount = 1;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = v.rbuf + v.slot * size_t(i);
    d->DS[0].Local.Handle = v.rmh;
    d->DS[0].Local.Length = len;
    VipPostRecv(v.vi, d, v.dmh);
}

int index_of(Vi &v, VIP_DESCRIPTOR *d) { return int(d - v.rd); }

VIP_DESCRIPTOR *recv_one(Vi &v) {
    VIP_DESCRIPTOR *d;
    Idle idle;
    while (VipRecvDone(v.vi, &d) != VIP_SUCCESS) idle();
    return d;
}

// A free send descriptor (reaping in order when all 2W are out).
VIP_DESCRIPTOR *send_desc(Vi &v) {
    Idle idle;
    while (v.sent_out == 2 * W) {
        VIP_DESCRIPTOR *d;
        if (VipSendDone(v.vi, &d) == VIP_SUCCESS) --v.sent_out;
        else idle();
    }
    VIP_DESCRIPTOR *d = &v.sd[v.next_sd];
    v.next_sd = (v.next_sd + 1) % (2 * W);
    ++v.sent_out;
    std::memset(d, 0, sizeof *d);
    return d;
}

void send_msg(Vi &v, uint32_t len) {
    VIP_DESCRIPTOR *d = send_desc(v);
    d->CS.SegCount = 1;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = v.sbuf;
    d->DS[0].Local.Handle = v.smh;
    d->DS[0].Local.Length = len;
    VipPostSend(v.vi, d, v.dmh);
}

void write_msg(Vi &v, const Peer &p, uint32_t off, uint32_t len, bool imm) {
    VIP_DESCRIPTOR *d = send_desc(v);
    d->CS.Control = VIP_CONTROL_OP_RDMAWRITE | (imm ? VIP_CONTROL_IMMEDIATE : 0);
    d->CS.SegCount = 2;
    d->CS.Length = len;
    d->DS[0].Remote.Data.AddressBits = p.target + off;
    d->DS[0].Remote.Handle = p.target_mh;
    d->DS[1].Local.Data.Address = v.sbuf + off;
    d->DS[1].Local.Handle = v.smh;
    d->DS[1].Local.Length = len;
    VipPostSend(v.vi, d, v.dmh);
}

void drain_sends(Vi &v) {
    Idle idle;
    while (v.sent_out) {
        VIP_DESCRIPTOR *d;
        if (VipSendDone(v.vi, &d) == VIP_SUCCESS) --v.sent_out;
        else idle();
    }
}

} // namespace

int run_vi(const Options &o) {
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() != 2) {
        std::fprintf(stderr, "layering_bw vi: needs exactly 2 ranks (vipl-run -n 2)\n");
        return 2;
    }
    const int me = vipl_boot_rank();
    Vi v;
    VIP_NIC_ATTRIBUTES attr;
    if (VipOpenNic(nullptr, &v.nic) != VIP_SUCCESS || VipQueryNic(v.nic, &attr) != VIP_SUCCESS ||
        VipCreatePtag(v.nic, &v.ptag) != VIP_SUCCESS)
        return 2;
    v.max_transfer = uint32_t(std::min<VIP_ULONG>(attr.MaxTransferSize ? attr.MaxTransferSize : 65536, 65536));
    const size_t maxsz = *std::max_element(o.sizes.begin(), o.sizes.end());
    v.slot = std::min<size_t>(maxsz, v.max_transfer);
    const int nrd = 2 * W + kAcks;
    v.sd = static_cast<VIP_DESCRIPTOR *>(alloc(sizeof(VIP_DESCRIPTOR) * (2 * W + nrd)));
    v.rd = v.sd + 2 * W;
    v.sbuf = static_cast<uint8_t *>(alloc(maxsz));
    v.rbuf = static_cast<uint8_t *>(alloc(v.slot * nrd));
    v.target = static_cast<uint8_t *>(alloc(maxsz));
    if (!reg(v, v.sd, sizeof(VIP_DESCRIPTOR) * (2 * W + nrd), false, &v.dmh) || !reg(v, v.sbuf, maxsz, false, &v.smh) ||
        !reg(v, v.rbuf, v.slot * nrd, false, &v.rmh) || !reg(v, v.target, maxsz, true, &v.tmh))
        return 2;
    VIP_VI_ATTRIBUTES va{VIP_SERVICE_RELIABLE_DELIVERY, v.max_transfer, nullptr, v.ptag, VIP_TRUE, VIP_FALSE};
    if (VipCreateVi(v.nic, &va, nullptr, nullptr, &v.vi) != VIP_SUCCESS) return 2;
    Peer mine{}, all[2];
    mine.addr_len = attr.NicAddressLen;
    std::memcpy(mine.addr, attr.LocalNicAddress, attr.NicAddressLen);
    mine.target = reinterpret_cast<uint64_t>(v.target);
    mine.target_mh = uint32_t(v.tmh);
    if (vipl_boot_allgather(&mine, sizeof mine, all) != VIPL_BOOT_OK) return 2;
    const Peer &peer = all[1 - me];
    // Posted before connecting, reposted as they are consumed: rank 1 keeps
    // 2W receive buffers (full size) for messages and the write's immediate
    // data, rank 0 kAcks for acknowledgements.
    if (me == 0)
        for (int i = 0; i < kAcks; i++) post_recv(v, 2 * W + i, 0);
    else
        for (int i = 0; i < 2 * W; i++) post_recv(v, i, uint32_t(v.slot));
    alignas(8) uint8_t lb[128], rb[128];
    auto *la = reinterpret_cast<VIP_NET_ADDRESS *>(lb);
    auto *ra = reinterpret_cast<VIP_NET_ADDRESS *>(rb);
    la->HostAddressLen = mine.addr_len;
    std::memcpy(la->HostAddress, mine.addr, mine.addr_len);
    la->DiscriminatorLen = 4;
    std::memcpy(la->HostAddress + mine.addr_len, "LAYR", 4);
    ra->HostAddressLen = peer.addr_len;
    std::memcpy(ra->HostAddress, peer.addr, peer.addr_len);
    ra->DiscriminatorLen = 4;
    std::memcpy(ra->HostAddress + peer.addr_len, "LAYR", 4);
    VIP_VI_ATTRIBUTES rattr;
    VIP_RETURN crc = VipConnectPeerRequest(v.vi, la, ra, 60000);
    if (crc != VIP_SUCCESS && crc != VIP_NOT_DONE) return 2;
    if (VipConnectPeerWait(v.vi, &rattr) != VIP_SUCCESS) {
        std::fprintf(stderr, "layering_bw vi: connection failed\n");
        return 2;
    }
    // Rank 0 takes an acknowledgement (a 0-byte send) and reposts its descriptor.
    Idle idle;
    auto take_ack = [&] {
        VIP_DESCRIPTOR *d;
        if (VipRecvDone(v.vi, &d) != VIP_SUCCESS) {
            idle();
            return false;
        }
        post_recv(v, index_of(v, d), 0);
        return true;
    };
    for (size_t n : o.sizes) {
        const int count = messages_for(n);
        for (int round = 0; round < o.rounds; round++)
            for (int kind = 0; kind < 2; kind++) {
                if (kind == 0 && n > v.max_transfer) continue; // one send is one message
                if (me == 1) {
                    send_msg(v, 0); // go
                    if (kind == 0) {
                        for (int i = 0; i < count; i++) {
                            VIP_DESCRIPTOR *d = recv_one(v);
                            if (d->CS.Length != n)
                                std::printf("ERROR: vi-send got %u bytes, not %zu\n", d->CS.Length, n);
                            post_recv(v, index_of(v, d), uint32_t(v.slot));
                            if ((i + 1) % W == 0 || i + 1 == count) send_msg(v, 0);
                        }
                    } else {
                        VIP_DESCRIPTOR *d = recv_one(v); // the immediate data of the last write
                        post_recv(v, index_of(v, d), uint32_t(v.slot));
                        send_msg(v, 0);
                    }
                    drain_sends(v);
                } else {
                    while (!take_ack()) {}
                    const double t0 = now_ns();
                    if (kind == 0) {
                        int acks = 0;
                        const int want = (count + W - 1) / W;
                        for (int i = 0; i < count; i++) {
                            while (i >= 2 * W + W * acks) acks += take_ack();
                            send_msg(v, uint32_t(n));
                        }
                        while (acks < want) acks += take_ack();
                    } else {
                        for (int i = 0; i < count; i++)
                            for (size_t off = 0; off < n; off += v.max_transfer) {
                                const uint32_t c = uint32_t(std::min<size_t>(v.max_transfer, n - off));
                                write_msg(v, peer, uint32_t(off), c, i + 1 == count && off + c == n);
                            }
                        while (!take_ack()) {}
                    }
                    print_row(kind == 0 ? "vi-send" : "vi-rdma", n, round, count, now_ns() - t0);
                    drain_sends(v);
                }
                vipl_boot_barrier();
            }
    }
    vipl_boot_barrier();
    VipDisconnect(v.vi);
    return 0;
}

} // namespace layering
