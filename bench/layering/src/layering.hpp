// layering.hpp - the layering study's benchmark (docs/bip.md, "The layering
// study"): one-way streaming bandwidth by message size of a layer and of the
// layer below it, measured in the same sitting, rows printed as
//   <layer> <bytes> <round> <messages> <MB/s>
// bench/layering/layering.sh runs the pairings, takes the medians over the
// rounds and plots "% of the layer below delivered upward".
#pragma once

#include <sched.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <vector>

namespace layering {

struct Options {
    std::vector<size_t> sizes;
    int rounds = 5;
    double mbytes = 8; // bytes per measurement (in MB): sets the message count
};

inline double now_ns() {
    return double(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

// Every wait loop of the benchmark polls through this: a window of polls,
// then sched_yield (the machine is shared; a peer on the same core must get
// to run), as the layers' own waits do (vipl_wait.h, VIASTACK_WAIT=yield).
struct Idle {
    unsigned n = 0;
    void operator()() {
        if (++n >= 256) {
            sched_yield();
            n = 0;
        }
    }
};

extern Options g_opt;
inline int messages_for(size_t n) {
    const double c = g_opt.mbytes * 1e6 / double(n ? n : 1);
    return c < 100 ? 100 : c > 5000 ? 5000 : int(c);
}

inline void print_row(const char *layer, size_t n, int round, int count, double ns) {
    std::printf("%s %zu %d %d %.3f\n", layer, n, round, count, double(n) * count / (ns / 1e3));
    std::fflush(stdout);
}

int run_fm(const Options &o);  // fm, mp-fm1, mp-fm2
int run_bip(const Options &o); // bip
int run_vi(const Options &o);  // vi-send, vi-rdma
int run_am(const Options &o);  // am-medium, am-long

} // namespace layering
