// am_pingpong - AM short-message ping-pong (AM_Request4 / AM_Reply4) between
// ranks 0 and 1, and the same exchange over raw VIPL (one 32-byte send each
// way, the size of an AM_Request4 message) for Δ = AM RTT/2 - VI RTT/2.
//
//   vipl-run -n 2 am_pingpong [iterations] [warmup] [am]
//
// With "am" only the AM round trips run (no raw VI blocks): the same
// structure as fm_pingpong.  The raw VI blocks spin without ever yielding,
// which lets the kernel move a waiting rank to the other CPU (docs/fm.md,
// "The slow mode"): without them AM shows the same scheduling as FM.
//
// Rank 0 prints the median half round trip of each, in ns and TSC cycles:
//   VI RTT/2 = <median> ns ...
//   RTT/2 = <median> ns ...          (the AM number)
//   delta = <AM - VI> ns = <cycles> cycles
// Blocks of VI and AM round trips alternate so both see the same machine state.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "am.h"
#include "am_spmd.h"
#include "vipl.h"
#include "vipl_instr.h"

namespace {

constexpr handler_t kPing = 1, kPong = 2;
constexpr uint32_t kViBytes = 32; // AM header (16) + 4 arguments (16)

volatile int g_pongs = 0;
int g_bad = 0;

void ping_handler(void *token, int32_t a0, int32_t a1, int32_t a2, int32_t a3) {
    AM_Reply4(token, kPong, a0, a1 + 1, a2 + 1, a3 + 1);
}

int32_t g_expect = 0;
void pong_handler(void *, int32_t a0, int32_t a1, int32_t a2, int32_t a3) {
    if (a0 != g_expect || a1 != 2 || a2 != 3 || a3 != 4) g_bad++;
    g_pongs = g_pongs + 1;
}

// Raw-VIPL ping-pong on a VI of its own: no CQ, VipRecvDone polling, the
// minimal "native VI" exchange the AMVIA paper compares against.
struct RawVi {
    VIP_NIC_HANDLE nic;
    VIP_VI_HANDLE vi = nullptr;
    VIP_MEM_HANDLE mh = 0;
    VIP_PROTECTION_HANDLE ptag = nullptr;
    uint8_t *region = nullptr;
    VIP_DESCRIPTOR *send_desc = nullptr;
    VIP_DESCRIPTOR *recv_desc[4] = {};

    bool setup(const en_t &me, const en_t &peer) {
        nic = static_cast<VIP_NIC_HANDLE>(AMVIA_NicHandle());
        if (VipCreatePtag(nic, &ptag) != VIP_SUCCESS) return false;
        region = static_cast<uint8_t *>(std::aligned_alloc(4096, 4096));
        std::memset(region, 0, 4096);
        VIP_MEM_ATTRIBUTES ma{ptag, VIP_FALSE, VIP_FALSE};
        if (VipRegisterMem(nic, region, 4096, &ma, &mh) != VIP_SUCCESS) return false;
        VIP_VI_ATTRIBUTES va{VIP_SERVICE_RELIABLE_DELIVERY, 4096, nullptr, ptag, VIP_FALSE, VIP_FALSE};
        if (VipCreateVi(nic, &va, nullptr, nullptr, &vi) != VIP_SUCCESS) return false;
        auto make = [&](int i) {
            auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(region + 128 * i);
            d->CS.SegCount = 1;
            d->DS[0].Local.Data.Address = region + 2048 + 128 * i;
            d->DS[0].Local.Handle = mh;
            d->DS[0].Local.Length = kViBytes;
            d->CS.Length = kViBytes;
            return d;
        };
        send_desc = make(0);
        for (int i = 0; i < 4; i++) {
            recv_desc[i] = make(1 + i);
            if (VipPostRecv(vi, recv_desc[i], mh) != VIP_SUCCESS) return false;
        }
        alignas(8) uint8_t la_buf[64], ra_buf[64];
        auto *la = reinterpret_cast<VIP_NET_ADDRESS *>(la_buf);
        auto *ra = reinterpret_cast<VIP_NET_ADDRESS *>(ra_buf);
        la->HostAddressLen = me.addr_len;
        std::memcpy(la->HostAddress, me.addr, me.addr_len);
        la->DiscriminatorLen = 4;
        std::memcpy(la->HostAddress + me.addr_len, "ppvi", 4);
        ra->HostAddressLen = peer.addr_len;
        std::memcpy(ra->HostAddress, peer.addr, peer.addr_len);
        ra->DiscriminatorLen = 4;
        std::memcpy(ra->HostAddress + peer.addr_len, "ppvi", 4);
        if (VipConnectPeerRequest(vi, la, ra, 30000) != VIP_SUCCESS) return false;
        VIP_VI_ATTRIBUTES rattr;
        return VipConnectPeerWait(vi, &rattr) == VIP_SUCCESS;
    }
    bool send_pending = false;
    void reap_send() {
        VIP_DESCRIPTOR *d;
        while (send_pending && VipSendDone(vi, &d) != VIP_SUCCESS) {}
        send_pending = false;
    }
    void send() {
        reap_send();
        send_pending = true;
        send_desc->CS.Status = 0;
        send_desc->CS.Length = kViBytes;
        VipPostSend(vi, send_desc, mh);
    }
    void recv() {
        VIP_DESCRIPTOR *d;
        while (VipRecvDone(vi, &d) != VIP_SUCCESS) {}
        d->CS.Status = 0;
        VipPostRecv(vi, d, mh);
    }
    // Disconnect (the receives still posted complete flushed and are taken
    // off the queue), then destroy what setup() made, in reverse.
    void teardown() {
        if (!vi) return;
        VipDisconnect(vi);
        VIP_DESCRIPTOR *d;
        while (VipRecvDone(vi, &d) == VIP_SUCCESS) {}
        VipDestroyVi(vi);
        VipDeregisterMem(nic, region, mh);
        VipDestroyPtag(nic, ptag);
        std::free(region);
        vi = nullptr;
    }
};

// The AM counters of Table 3 of the AMVIA paper, in its order and groups.
const char *const kBreakdown[] = {"am.VipSendDone",
                                  "am.VipPostSend",
                                  "am.VipRecvDone",
                                  "am.VipPostRecv",
                                  "am.Recycle send descriptor",
                                  "am.Recycle receive descriptor",
                                  "am.Build send descriptors",
                                  "am.VipCQDone (Send)",
                                  "am.VipCQDone (Receive)",
                                  "am.Send bookkeeping",
                                  "am.Process received message",
                                  "am.Read data from message",
                                  "am.Act on message"};
constexpr int kNBreakdown = sizeof kBreakdown / sizeof kBreakdown[0];

// With VIASTACK_INSTR=1: both ranks' AM counters, per request-reply, as in Table 3.
void print_breakdown(long round_trips) {
    uint64_t mine[kNBreakdown] = {};
    int cat[kNBreakdown] = {};
    for (int i = 0; i < kNBreakdown; i++) {
        vipl_instr_sample smp;
        if (vipl_instr_find(kBreakdown[i], &smp) == 0) {
            mine[i] = smp.cycles;
            cat[i] = smp.category;
        }
    }
    std::vector<uint64_t> all(size_t(kNBreakdown) * size_t(AM_SPMDNumProcs()));
    AM_SPMDAllGather(mine, all.data(), sizeof mine);
    if (AM_SPMDMyProc() != 0) return;
    double per[kNBreakdown], total = 0;
    for (int i = 0; i < kNBreakdown; i++) {
        per[i] = double(all[size_t(i)] + all[size_t(kNBreakdown + i)]) / double(round_trips);
        total += per[i];
    }
    std::printf("AM overhead breakdown per short request-reply (both ranks, TSC cycles):\n");
    for (int c = 0; c < 4; c++) {
        double sum = 0;
        for (int i = 0; i < kNBreakdown; i++) sum += cat[i] == c ? per[i] : 0;
        std::printf("  %-22s %8.1f  %5.1f%%\n", vipl_instr_category_name(c), sum, 100 * sum / total);
        for (int i = 0; i < kNBreakdown; i++)
            if (cat[i] == c)
                std::printf("      %-30s %8.1f  %5.1f%%\n", kBreakdown[i] + 3, per[i], 100 * per[i] / total);
    }
    std::printf("  %-22s %8.1f cycles\n", "total", total);
}

double median(std::vector<uint64_t> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : double(v[v.size() / 2]);
}

} // namespace

int main(int argc, char **argv) {
    long iters = argc > 1 ? std::atol(argv[1]) : 20000;
    long warmup = argc > 2 ? std::atol(argv[2]) : 2000;
    const bool am_only = argc > 3 && !std::strcmp(argv[3], "am");
    if (iters <= 0 || warmup < 0 || (argc > 3 && !am_only)) {
        std::fprintf(stderr, "usage: vipl-run -n 2 am_pingpong [iterations>0] [warmup>=0] [am]\n");
        return 2;
    }
    eb_t eb;
    ep_t ep;
    if (AM_SPMDStartup(&argc, &argv, &eb, &ep) != AM_OK) return 1;
    int rank = AM_SPMDMyProc(), n = AM_SPMDNumProcs();
    if (n < 2) {
        std::fprintf(stderr, "am_pingpong needs 2 processes: vipl-run -n 2 am_pingpong\n");
        AM_SPMDExit(2);
    }
    AM_SetHandler(ep, kPing, ping_handler);
    AM_SetHandler(ep, kPong, pong_handler);
    RawVi raw;
    if (rank < 2 && !am_only) {
        en_t me, peer;
        AM_GetTranslationName(ep, rank, &me);
        AM_GetTranslationName(ep, 1 - rank, &peer);
        if (!raw.setup(me, peer)) {
            std::fprintf(stderr, "am_pingpong: raw VI set-up failed\n");
            AM_SPMDExit(1);
        }
    }
    AM_SPMDBarrier();
    vipl_instr_reset(); // only the timed blocks count

    const int kBlocks = 5;
    long per_block = (iters + kBlocks - 1) / kBlocks;
    std::vector<uint64_t> am_samples, vi_samples;
    am_samples.reserve(size_t(per_block * kBlocks));
    vi_samples.reserve(size_t(per_block * kBlocks));
    for (int b = 0; b < kBlocks; b++) {
        long w = b == 0 ? warmup : 0;
        // ---- raw VI block
        if (!am_only && rank == 0) {
            for (long i = 0; i < w + per_block; i++) {
                uint64_t t0 = vipl_instr_now();
                raw.send();
                raw.recv();
                uint64_t t1 = vipl_instr_now();
                if (i >= w) vi_samples.push_back(t1 - t0);
            }
        } else if (!am_only && rank == 1) {
            for (long i = 0; i < w + per_block; i++) {
                raw.recv();
                raw.send();
            }
        }
        if (rank < 2 && !am_only) raw.reap_send();
        AM_SPMDBarrier();
        // ---- AM block
        if (rank == 0) {
            for (long i = 0; i < w + per_block; i++) {
                g_expect = int32_t(i);
                int before = g_pongs;
                uint64_t t0 = vipl_instr_now();
                AM_Request4(ep, 1, kPing, int32_t(i), 1, 2, 3);
                while (g_pongs == before) AM_Poll(eb);
                uint64_t t1 = vipl_instr_now();
                if (i >= w) am_samples.push_back(t1 - t0);
            }
        }
        AM_SPMDBarrier();
    }
    if (rank < 2 && !am_only) raw.teardown(); // AM_Terminate closes the NIC only once nothing else is open on it
    if (vipl_instr_enabled()) print_breakdown(per_block * kBlocks + warmup);
    if (rank == 0) {
        double cpn = vipl_instr_cycles_per_ns();
        double vi = median(vi_samples) / 2, am = median(am_samples) / 2;
        if (!am_only)
            std::printf("VI RTT/2 = %.0f ns (%.0f cycles, %zu samples, %u-byte VI message)\n", vi / cpn, vi,
                        vi_samples.size(), kViBytes);
        std::printf("RTT/2 = %.0f ns (%.0f cycles, %zu samples, AM_Request4/AM_Reply4, layout v%d)\n", am / cpn, am,
                    am_samples.size(), AMVIA_GetLayout());
        if (!am_only) std::printf("delta = %.0f ns = %.0f cycles (AM RTT/2 - VI RTT/2)\n", (am - vi) / cpn, am - vi);
        if (g_bad) std::printf("ERROR: %d replies carried wrong arguments\n", g_bad);
        std::fflush(stdout);
    }
    AM_SPMDExit(g_bad ? 1 : 0);
}
