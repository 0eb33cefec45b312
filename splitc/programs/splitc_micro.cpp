// splitc_micro - the Split-C single-sender microbenchmarks of Begel et al.,
// Figure 2 (methodology of Krishnamurthy et al.): processor 0 repeatedly
// reads, writes, gets, puts and stores an int on processor 1; every other
// processor just serves requests.
//   read, write   synchronous: the time per operation is a round trip
//   get, put      issued back to back, one sync() at the end: the gap
//   store         issued back to back, one all_store_sync() at the end
// --breakdown also times every step of a get with the instrumentation
// counters (Table 4 of Begel et al.), summed over requester and target;
// --bandwidth measures bulk_put/bulk_get from 4 B to 32 KB (Figure 5).
#include <algorithm>
#include <cstdio>
#include <vector>
#include <string>

#include "program_util.hpp"
#include "splitc/splitc.hpp"
#include "vipl_instr.h"

using namespace splitc;
using namespace splitc_programs;

namespace {

const char *kOps[] = {"read", "write", "get", "put", "store"};

// Median microseconds of single synchronous operations, each timed with the
// TSC (the statistic the AM ping-pong reports, so the two compare directly).
double median_op(const std::string &op, global_ptr<int> target, long iters) {
    std::vector<uint64_t> t;
    barrier();
    if (myproc() == 0) {
        t.reserve(size_t(iters));
        int sink = 0;
        for (long i = 0; i < iters; ++i) {
            uint64_t t0 = vipl_instr_now();
            if (op == "read") sink += read(target);
            else write(target, int(i));
            t.push_back(vipl_instr_now() - t0);
        }
        if (sink == 0x7fffffff) std::printf(" ");
    }
    barrier();
    if (t.empty()) return 0;
    std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
    return double(t[t.size() / 2]) / vipl_instr_cycles_per_ns() / 1e3;
}

// Microseconds per operation of `op` (on processor 0; 0 elsewhere).
double time_op(const std::string &op, global_ptr<int> target, long iters, long warmup) {
    int sink = 0;
    auto loop = [&](long n) {
        if (op == "read") {
            for (long i = 0; i < n; ++i) sink += read(target);
        } else if (op == "write") {
            for (long i = 0; i < n; ++i) write(target, int(i));
        } else if (op == "get") {
            for (long i = 0; i < n; ++i) get(sink, target);
            splitc::sync();
        } else if (op == "put") {
            for (long i = 0; i < n; ++i) put(target, int(i));
            splitc::sync();
        } else {
            for (long i = 0; i < n; ++i) store(target, int(i));
        }
    };
    barrier();
    double t = 0;
    if (myproc() == 0) loop(warmup);
    if (op == "store") all_store_sync();
    barrier();
    double t0 = get_seconds();
    if (myproc() == 0) loop(iters);
    if (op == "store") all_store_sync();
    if (myproc() == 0) t = (get_seconds() - t0) / double(iters) * 1e6;
    barrier();
    if (sink == 0x7fffffff) std::printf(" "); // keeps the reads live
    return t;
}

const char *kBreakdown[][2] = {
    {"Base VI", "splitc.VipSendDone"},
    {"Base VI", "splitc.VipPostSend"},
    {"Base VI", "splitc.VipRecvDone"},
    {"Base VI", "splitc.VipPostRecv"},
    {"Base VI", "splitc.Recycle send descriptor"},
    {"Base VI", "splitc.Recycle receive descriptor"},
    {"Base VI", "splitc.Build send descriptors"},
    {"Event Notification", "splitc.VipCQDone (Receive)"},
    {"Event Notification", "splitc.VipCQDone (Send)"},
    {"Flow Control", "splitc.Send bookkeeping"},
    {"Flow Control", "splitc.Push msg on req/rep queue"},
    {"Semantics", "splitc.Read data from message"},
    {"Semantics", "splitc.Act on message"},
};

// Gets with a sync after each (a complete request/reply) under the counters.
void breakdown(global_ptr<int> target, long iters) {
    int sink = 0;
    barrier();
    vipl_instr_reset();
    vipl_instr_enable(1);
    barrier();
    if (myproc() == 0)
        for (long i = 0; i < iters; ++i) {
            get(sink, target);
            splitc::sync();
        }
    // The target serves the gets inside this barrier: keep counting until
    // everyone is out (the barrier's own few messages are noise next to iters).
    barrier();
    vipl_instr_enable(0);
    double ns[sizeof kBreakdown / sizeof kBreakdown[0]];
    double total = 0;
    for (size_t i = 0; i < sizeof kBreakdown / sizeof kBreakdown[0]; ++i) {
        vipl_instr_sample s{};
        double mine = vipl_instr_find(kBreakdown[i][1], &s) == 0 ? s.ns : 0.0;
        ns[i] = all_reduce_to_all_dadd(mine) / double(iters);
        total += ns[i];
    }
    if (on_one()) {
        std::printf("\nSplit-C get breakdown (ns per get, requester + target, %ld gets):\n", iters);
        for (size_t i = 0; i < sizeof kBreakdown / sizeof kBreakdown[0]; ++i)
            std::printf("  %-20s %-32s %8.1f  %5.1f%%\n", kBreakdown[i][0], kBreakdown[i][1], ns[i],
                        total > 0 ? 100 * ns[i] / total : 0.0);
        std::printf("  %-20s %-32s %8.1f\n", "", "total timed", total);
    }
}

// Figure 5 style: bulk_put / bulk_get bandwidth from 4 B to 32 KB, source and
// destination in spread memory (so the data goes by gather descriptors).
void bandwidth(spread_ptr<char> area, size_t max, long iters) {
    char *local = (area + myproc()).local();
    global_ptr<char> remote = (area + 1).to_global();
    if (on_one())
        std::printf("\nSplit-C bulk bandwidth, processor 0 -> 1 (MB/s)\n  %8s %10s %10s\n", "bytes", "bulk_put",
                    "bulk_get");
    for (size_t n = 4; n <= max; n *= 2) {
        double mbs[2] = {0, 0};
        for (int op = 0; op < 2; ++op) {
            barrier();
            double t0 = get_seconds();
            if (myproc() == 0) {
                for (long i = 0; i < iters; ++i) {
                    if (op == 0) bulk_put(remote, local, n);
                    else bulk_get(local, remote, n);
                }
                splitc::sync();
                mbs[op] = double(n) * double(iters) / (get_seconds() - t0) / 1e6;
            }
            barrier();
        }
        if (on_one()) std::printf("  %8zu %10.1f %10.1f\n", n, mbs[0], mbs[1]);
    }
}

} // namespace

int splitc_main(int argc, char **argv) {
    Options opt(argc, argv);
    long iters = opt.num("iters", 20000);
    long warmup = opt.num("warmup", 1000);
    std::string json = opt.str("json", "");
    bool want_breakdown = opt.flag("breakdown");
    bool want_bandwidth = opt.flag("bandwidth");
    if (!opt.all_used("splitc_micro [--iters N] [--warmup W] [--json FILE] [--breakdown] [--bandwidth]")) return 2;
    if (procs() < 2) {
        std::fprintf(stderr, "splitc_micro: needs at least 2 processors (vipl-run -n 2 splitc_micro)\n");
        return 2;
    }
    if (iters < 1 || warmup < 0) {
        std::fprintf(stderr, "splitc_micro: --iters must be positive\n");
        return 2;
    }
    // The target int lives in spread memory on processor 1.
    spread_ptr<int> cells = all_spread_malloc<int>(size_t(procs()));
    global_ptr<int> target = (cells + 1).to_global();

    double us[5];
    for (int i = 0; i < 5; ++i) us[i] = time_op(kOps[i], target, iters, warmup);
    double read_median = median_op("read", target, iters), write_median = median_op("write", target, iters);
    if (on_one()) {
        std::printf("Split-C single sender, int, PROCS=%d, %ld iterations (us per operation)\n", procs(), iters);
        std::printf("  %-6s %8s %8s\n", "op", "mean", "median");
        for (int i = 0; i < 5; ++i)
            std::printf("  %-6s %8.3f %8s\n", kOps[i], us[i],
                        i == 0       ? std::to_string(read_median).substr(0, 5).c_str()
                            : i == 1 ? std::to_string(write_median).substr(0, 5).c_str()
                                     : "-");
        if (!json.empty()) {
            FILE *f = std::fopen(json.c_str(), "w");
            if (!f) {
                std::perror(json.c_str());
            } else {
                std::fprintf(f, "{\"benchmark\": \"splitc_micro\", \"procs\": %d, \"iters\": %ld, \"unit\": \"us\"",
                             procs(), iters);
                for (int i = 0; i < 5; ++i) std::fprintf(f, ", \"%s\": %.4f", kOps[i], us[i]);
                std::fprintf(f, ", \"read_median\": %.4f, \"write_median\": %.4f", read_median, write_median);
                std::fprintf(f, "}\n");
                std::fclose(f);
            }
        }
    }
    if (want_breakdown) breakdown(target, iters < 5000 ? iters : 5000);
    if (want_bandwidth) {
        const size_t kMax = 32768;
        spread_ptr<char> area = all_spread_malloc<char>(size_t(procs()), kMax);
        bandwidth(area, kMax, iters < 2000 ? iters : 2000);
        all_spread_free(area);
    }
    std::fflush(stdout);
    all_spread_free(cells);
    return 0;
}
