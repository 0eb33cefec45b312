// am_allpairs - all-pairs AM ping: every rank, at the same time, sends
// `iterations` AM_Request2 pings to each other rank in turn (one outstanding,
// each waited for with AM_Poll), while serving the pings aimed at it.  It
// measures what oversubscription does to the waiting policy (VIASTACK_WAIT,
// docs/am.md "Waiting"): run it with 1 rank per core and 2 ranks per core.
//
//   vipl-run -n N am_allpairs [iterations] [warmup]
//
// Rank 0 prints
//   allpairs: N ranks, <cpus> cpus, wait <mode>, <iterations> pings per pair
//   per request = <ns> ns (slowest rank: elapsed / requests it sent)
// and "ERROR" if a reply came back wrong.  Exit code 0 on success.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include <sched.h>

#include "am.h"
#include "am_spmd.h"
#include "vipl_wait.h"

namespace {

constexpr handler_t kPing = 1, kPong = 2;
volatile int g_pongs = 0;
int g_bad = 0;
int32_t g_expect = 0;

void ping_handler(void *token, int32_t a0, int32_t a1) { AM_Reply2(token, kPong, a0, a1 + 1); }

void pong_handler(void *, int32_t a0, int32_t a1) {
    if (a0 != g_expect || a1 != a0 + 2) g_bad++;
    g_pongs = g_pongs + 1;
}

double now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// One ping to `peer`, waited for.
int ping(eb_t eb, ep_t ep, int peer, int32_t i) {
    int before = g_pongs;
    g_expect = i;
    if (AM_Request2(ep, peer, kPing, i, i + 1) != AM_OK) return 1;
    while (g_pongs == before)
        if (AM_Poll(eb) != AM_OK) return 1;
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    eb_t eb;
    ep_t ep;
    if (AM_SPMDStartup(&argc, &argv, &eb, &ep) != AM_OK) {
        std::fprintf(stderr, "am_allpairs: AM_SPMDStartup failed\n");
        return 1;
    }
    long iters = argc > 1 ? std::atol(argv[1]) : 2000;
    long warm = argc > 2 ? std::atol(argv[2]) : 200;
    if (iters < 1) iters = 1;
    if (warm < 0) warm = 0;
    int me = AM_SPMDMyProc(), n = AM_SPMDNumProcs();
    AM_SetHandler(ep, kPing, ping_handler);
    AM_SetHandler(ep, kPong, pong_handler);
    AM_SetTag(ep, AM_ALL);
    AM_SPMDBarrier();

    int err = 0;
    for (int k = 1; k < n && !err; k++)
        for (long i = 0; i < warm && !err; i++) err |= ping(eb, ep, (me + k) % n, int32_t(i));
    AM_SPMDBarrier();
    double t0 = now_ns();
    for (int k = 1; k < n && !err; k++)
        for (long i = 0; i < iters && !err; i++) err |= ping(eb, ep, (me + k) % n, int32_t(i));
    double elapsed = now_ns() - t0;
    long sent = iters * (n - 1);
    double per = n > 1 ? elapsed / double(sent) : 0.0;

    // Others may still be pinging us: serve them (AM_SPMDBarrier polls)
    // before the all-gathers, which do not.
    AM_SPMDBarrier();
    std::vector<double> all(size_t(n), 0.0);
    AM_SPMDAllGather(&per, all.data(), sizeof per);
    std::vector<int> bad(size_t(n), 0);
    int mybad = g_bad + err;
    AM_SPMDAllGather(&mybad, bad.data(), sizeof mybad);
    if (me == 0) {
        vipl_wait::Mode mode;
        vipl_wait::mode_from_env(&mode);
        int nbad = 0;
        for (int b : bad) nbad += b;
        std::printf("allpairs: %d ranks, %d cpus, wait %s, %ld pings per pair\n", n, vipl_wait::usable_cpus(),
                    vipl_wait::mode_name(mode), iters);
        std::printf("per request = %.0f ns (slowest rank: elapsed / requests it sent)\n",
                    *std::max_element(all.begin(), all.end()));
        if (nbad) std::printf("ERROR: %d bad or failed replies\n", nbad);
        std::fflush(stdout);
    }
    AM_SPMDExit(0);
    return 0;
}
