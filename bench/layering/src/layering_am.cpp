// layering_am.cpp - AM-2's one-way streaming bandwidth (layering.hpp):
// medium messages (AM_RequestI0: the payload lands in a buffer AM hands the
// handler) and long ones (AM_RequestXfer0: written into the receiver's
// segment), up to AM_MaxMedium() / AM_MaxLong().
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "am.h"
#include "am_spmd.h"
#include "layering.hpp"

namespace layering {
namespace {

constexpr handler_t kMedium = 1, kLong = 2, kSignal = 3;
volatile int g_got = 0, g_signal = 0;
std::vector<uint8_t> g_sink;

void medium_handler(void *, void *buf, size_t nbytes) {
    std::memcpy(g_sink.data(), buf, nbytes); // what a layer above does with a medium payload
    g_got = g_got + 1;
}
void long_handler(void *, void *, size_t) { g_got = g_got + 1; }
void signal_handler(void *) { g_signal = g_signal + 1; }

} // namespace

int run_am(const Options &o) {
    const size_t seglen = AM_MaxLong();
    std::vector<uint8_t> seg(seglen);
    eb_t eb;
    ep_t ep;
    if (AM_SPMDStartupSeg(nullptr, nullptr, seg.data(), seglen, &eb, &ep) != AM_OK) return 2;
    AM_SetHandler(ep, kMedium, medium_handler);
    AM_SetHandler(ep, kLong, long_handler);
    AM_SetHandler(ep, kSignal, signal_handler);
    if (AM_SPMDNumProcs() != 2) {
        std::fprintf(stderr, "layering_bw am: needs exactly 2 ranks\n");
        AM_SPMDExit(2);
    }
    AM_SPMDBarrier();
    const int me = AM_SPMDMyProc();
    const size_t maxsz = std::min<size_t>(*std::max_element(o.sizes.begin(), o.sizes.end()), AM_MaxMedium());
    std::vector<uint8_t> src(maxsz, 0x5a);
    g_sink.resize(maxsz);
    int signals = 0;
    for (size_t n : o.sizes) {
        if (n > size_t(AM_MaxMedium()) || n > size_t(AM_MaxLong())) continue;
        const int count = messages_for(n);
        for (int round = 0; round < o.rounds; round++)
            for (int kind = 0; kind < 2; kind++) {
                if (me == 1) {
                    g_got = 0;
                    AM_Request0(ep, 0, kSignal);
                    Idle idle;
                    while (g_got < count) AM_Poll(eb), idle();
                    AM_Request0(ep, 0, kSignal);
                } else {
                    Idle idle;
                    while (g_signal < signals + 1) AM_Poll(eb), idle();
                    ++signals;
                    const double t0 = now_ns();
                    for (int i = 0; i < count; i++) {
                        int rc = kind == 0 ? AM_RequestI0(ep, 1, kMedium, src.data(), n)
                                           : AM_RequestXfer0(ep, 1, 0, kLong, src.data(), n);
                        if (rc != AM_OK) {
                            std::printf("ERROR: AM request of %zu bytes failed (%d)\n", n, rc);
                            AM_SPMDExit(1);
                        }
                    }
                    while (g_signal < signals + 1) AM_Poll(eb), idle();
                    ++signals;
                    print_row(kind == 0 ? "am-medium" : "am-long", n, round, count, now_ns() - t0);
                }
            }
    }
    AM_SPMDExit(0);
    return 0;
}

} // namespace layering
