// fm_pingpong - FM short-message ping-pong between nodes 0 and 1.
//
//   vipl-run -n 2 fm_pingpong [iterations] [warmup] [send4|stream|bulk [bytes]]
//
//   send4   (default) FM 1.x FM_send_4 each way, the reply sent from the
//           handler: the message AM's am_pingpong sends (AM_Request4/AM_Reply4)
//   stream  the same 16 bytes as an FM 2.x message (FM_begin_message,
//           FM_send_piece, FM_end_message; the handler FM_receive's them)
//   bulk    node 0 sends `iterations` messages of `bytes` (default 1 MB) in
//           one piece each; node 1's handler FM_receive's each into one
//           buffer (RDMA-written into it unless VIASTACK_FM_RDMA_MIN=0) and
//           acknowledges the last; node 0 prints "bandwidth = <MB/s>", node 1
//           the bytes it received in place
//
// Node 0 prints the median half round trip ("RTT/2 = <ns> ns"), the 10th and
// 90th percentiles, and the cost of a glibc swapcontext pair (FM's handler
// suspend + resume before its own x86-64 switch; docs/fm.md "Cost").
// Every reply's words are checked; a mismatch prints ERROR.
#include <ucontext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fm.h"

namespace {

volatile int g_pongs = 0;
int g_bad = 0;
int g_expect = 0;

void pong4(void *buf, unsigned size, unsigned) {
    int w[4];
    std::memcpy(w, buf, sizeof w);
    if (size != 16 || w[0] != g_expect || w[1] != 2 || w[2] != 3 || w[3] != 4) g_bad++;
    g_pongs = g_pongs + 1;
}
void ping4(void *buf, unsigned size, unsigned sender) {
    int w[4];
    std::memcpy(w, buf, sizeof w);
    if (size != 16 || FM_send_4(sender, pong4, w[0], w[1] + 1, w[2] + 1, w[3] + 1) != FM_OK) g_bad++;
}

int pong_stream(FM_stream *s, unsigned) {
    int w[4];
    if (FM_receive(w, s, sizeof w) != FM_OK || w[0] != g_expect || w[1] != 2 || w[2] != 3 || w[3] != 4) g_bad++;
    g_pongs = g_pongs + 1;
    return FM_CONTINUE;
}
int ping_stream(FM_stream *s, unsigned sender) {
    int w[4];
    if (FM_receive(w, s, sizeof w) != FM_OK) g_bad++;
    w[1]++, w[2]++, w[3]++;
    FM_stream *o = FM_begin_message(sender, sizeof w, pong_stream);
    if (!o || FM_send_piece(o, w, sizeof w) != FM_OK || FM_end_message(o) != FM_OK) g_bad++;
    return FM_CONTINUE;
}

// ---- bulk ----
std::vector<uint8_t> g_sink;
long g_bulk_left = 0;
void bulk_ack(void *, unsigned, unsigned) { g_pongs = g_pongs + 1; }
int bulk_handler(FM_stream *s, unsigned sender) {
    if (FM_receive(g_sink.data(), s, unsigned(g_sink.size())) != FM_OK) g_bad++;
    if (--g_bulk_left == 0 && FM_send_4(sender, bulk_ack, 0, 0, 0, 0) != FM_OK) g_bad++;
    return FM_CONTINUE;
}

double now_ns() {
    return double(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

// A glibc swapcontext pair (to a context and back), on a context of its
// own: what FM's suspend + resume cost before its x86-64 switch without the
// signal-mask system call (fm_coroutine.cpp; other architectures and
// ThreadSanitizer builds still use swapcontext).
ucontext_t g_main, g_co;
void bounce() {
    for (;;) swapcontext(&g_co, &g_main);
}
double context_pair_ns() {
    std::vector<char> stack(64 * 1024);
    getcontext(&g_co);
    g_co.uc_stack.ss_sp = stack.data();
    g_co.uc_stack.ss_size = stack.size();
    g_co.uc_link = nullptr;
    makecontext(&g_co, bounce, 0);
    const int n = 200000;
    swapcontext(&g_main, &g_co);
    double t0 = now_ns();
    for (int i = 0; i < n; i++) swapcontext(&g_main, &g_co);
    return (now_ns() - t0) / n;
}

} // namespace

int main(int argc, char **argv) {
    long iters = argc > 1 ? std::atol(argv[1]) : 20000;
    long warm = argc > 2 ? std::atol(argv[2]) : 2000;
    bool stream = argc > 3 && !std::strcmp(argv[3], "stream");
    bool bulk = argc > 3 && !std::strcmp(argv[3], "bulk");
    size_t bulk_bytes = argc > 4 ? size_t(std::atol(argv[4])) : size_t(1) << 20;
    FM_set_buffer_handler(1, ping4);
    FM_set_buffer_handler(2, pong4);
    FM_set_handler(3, ping_stream);
    FM_set_handler(4, pong_stream);
    FM_set_handler(5, bulk_handler);
    FM_set_buffer_handler(6, bulk_ack);
    if (FM_initialize() != FM_OK) {
        std::fprintf(stderr, "ERROR: FM_initialize failed\n");
        return 1;
    }
    if (FM_numnodes() < 2) {
        std::fprintf(stderr, "ERROR: run with vipl-run -n 2\n");
        FM_finalize();
        return 1;
    }
    std::vector<double> rtt;
    if (bulk) {
        g_sink.assign(bulk_bytes, 0);
        g_bulk_left = iters;
        if (FM_nodeid() == 0) {
            std::vector<uint8_t> src(bulk_bytes, 0x42);
            double t0 = now_ns();
            for (long i = 0; i < iters; i++) {
                FM_stream *o = FM_begin_message(1, unsigned(bulk_bytes), bulk_handler);
                if (!o || FM_send_piece(o, src.data(), unsigned(bulk_bytes)) != FM_OK || FM_end_message(o) != FM_OK) {
                    std::printf("ERROR: send failed: %s\n", FM_error_name(FM_last_error()));
                    break;
                }
            }
            while (g_pongs == 0) FM_extract(FM_EXTRACT_ALL);
            double secs = (now_ns() - t0) / 1e9;
            std::printf("fm_pingpong bulk: %ld messages of %zu bytes\n", iters, bulk_bytes);
            std::printf("bandwidth = %.0f MB/s\n", double(iters) * double(bulk_bytes) / secs / 1e6);
        }
        FM_finalize(); // node 1 handles every message in here
        unsigned long long placed = FM_rdma_bytes();
        if (FM_nodeid() == 1) std::printf("node 1: %llu bytes written in place by RDMA\n", placed);
        if (g_bad) std::printf("ERROR: %d bad transfers\n", g_bad);
        return g_bad ? 1 : 0;
    }
    if (FM_nodeid() == 0) {
        rtt.reserve(size_t(iters));
        for (long i = 0; i < warm + iters; i++) {
            g_expect = int(i);
            int before = g_pongs;
            double t0 = now_ns();
            int rc;
            if (stream) {
                const int w[4] = {int(i), 1, 2, 3};
                FM_stream *o = FM_begin_message(1, sizeof w, ping_stream);
                rc = o ? FM_send_piece(o, w, sizeof w) : FM_last_error();
                if (rc == FM_OK) rc = FM_end_message(o);
            } else {
                rc = FM_send_4(1, ping4, int(i), 1, 2, 3);
            }
            if (rc != FM_OK) {
                std::printf("ERROR: send failed: %s\n", FM_error_name(rc));
                break;
            }
            while (g_pongs == before) FM_extract(FM_EXTRACT_ALL);
            if (i >= warm) rtt.push_back((now_ns() - t0) / 2);
        }
    }
    // Node 1 serves pings until node 0's goodbye (inside FM_finalize).
    FM_finalize();
    if (!rtt.empty()) {
        std::sort(rtt.begin(), rtt.end());
        auto pct = [&](double p) { return rtt[size_t(p * double(rtt.size() - 1))]; };
        std::printf("fm_pingpong %s: %zu round trips\n", stream ? "stream" : "send4", rtt.size());
        std::printf("RTT/2 = %.0f ns (p10 %.0f, p90 %.0f)\n", pct(0.5), pct(0.1), pct(0.9));
        std::printf("glibc swapcontext pair (FM's switch off x86-64) = %.0f ns\n", context_pair_ns());
    }
    if (g_bad) std::printf("ERROR: %d bad replies\n", g_bad);
    return g_bad ? 1 : 0;
}
