// fm_pingpong - FM short-message ping-pong between nodes 0 and 1.
//
//   vipl-run -n 2 fm_pingpong [iterations] [warmup] [send4|stream]
//
//   send4   (default) FM 1.x FM_send_4 each way, the reply sent from the
//           handler: the message AM's am_pingpong sends (AM_Request4/AM_Reply4)
//   stream  the same 16 bytes as an FM 2.x message (FM_begin_message,
//           FM_send_piece, FM_end_message; the handler FM_receive's them)
//
// Node 0 prints the median half round trip ("RTT/2 = <ns> ns"), the 10th and
// 90th percentiles, and the cost of one handler suspend + resume (a
// swapcontext pair, the mechanism FM uses when FM_receive must wait).
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

double now_ns() {
    return double(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// A suspend + resume pair, as FM does it (swapcontext to the handler's
// context and back), on a context of its own.
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

}  // namespace

int main(int argc, char **argv) {
    long iters = argc > 1 ? std::atol(argv[1]) : 20000;
    long warm = argc > 2 ? std::atol(argv[2]) : 2000;
    bool stream = argc > 3 && !std::strcmp(argv[3], "stream");
    FM_set_buffer_handler(1, ping4);
    FM_set_buffer_handler(2, pong4);
    FM_set_handler(3, ping_stream);
    FM_set_handler(4, pong_stream);
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
        std::printf("handler suspend+resume (swapcontext pair) = %.0f ns\n", context_pair_ns());
    }
    if (g_bad) std::printf("ERROR: %d bad replies\n", g_bad);
    return g_bad ? 1 : 0;
}
