// am_stream - AM short-request message rate: rank 0 sends a stream of
// AM_Request1 to rank 1, whose handler only counts them (no reply: the layer
// returns the credits), then rank 1 confirms; g = time / messages.  The
// message-rate figure of docs/logp.md, and the program to run
// under callgrind for instructions per message.  With `reply` the handler
// answers every request with an AM_Reply1 (the paper's workload, [Begel01]
// §7.4: "send requests must be acknowledged by a reply"; docs/cost-model.md).
// With `xfer=BYTES` every message is an AM_RequestXferAsync1 of BYTES from
// AMVIA_AllocMem memory into rank 1's segment, AMVIA_AllocMem memory too
// (AM_STREAM_HEAP_SEG=1: heap) (AM's bulk path, as logp's bandwidth step):
// time per transfer, the bandwidth, and per message the AM_ERR_IN_USE answers
// and the endpoint's credit and send-slot stalls.  With `get=BYTES`
// rank 0 instead streams AM_GetXfer1 of BYTES from rank 1's segment into its
// own (a request rank 1's layer answers with a long reply; docs/am.md, "Get").
//
//   vipl-run -n 2 am_stream [messages>0] [rounds>0] [reply | xfer=BYTES | get=BYTES]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>
#include <vector>

#include "am.h"
#include "am_spmd.h"

namespace {
volatile long g_sunk = 0, g_confirms = 0;
bool g_reply = false;
constexpr handler_t kSink = 1, kConfirm = 2, kAck = 3;
void sink_handler(void *token, int32_t i) {
    g_sunk = g_sunk + 1;
    if (g_reply) AM_Reply1(token, kAck, i);
}
long g_xfer = 0; // bytes per transfer (xfer=BYTES)
volatile long g_bad = 0;
void xfer_handler(void *, void *buf, size_t nbytes, int32_t) {
    const char *b = static_cast<const char *>(buf);
    if (long(nbytes) != g_xfer || b[0] != 'x' || b[nbytes - 1] != 'x') g_bad = g_bad + 1;
    g_sunk = g_sunk + 1;
}
void confirm_handler(void *, int32_t) { g_confirms = g_confirms + 1; }
void ack_handler(void *, int32_t) {}

double now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}
} // namespace

int main(int argc, char **argv) {
    const long n = argc > 1 ? std::atol(argv[1]) : 100000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    g_reply = argc > 3 && std::string_view(argv[3]) == "reply";
    long xfer = 0; // bytes per AM_RequestXferAsync1; 0: short requests
    if (argc > 3 && std::strncmp(argv[3], "xfer=", 5) == 0) xfer = std::atol(argv[3] + 5);
    const bool get = argc > 3 && std::strncmp(argv[3], "get=", 4) == 0;
    if (get) xfer = std::atol(argv[3] + 4);
    g_xfer = xfer;
    if (n <= 0 || rounds <= 0 || (argc > 3 && !g_reply && xfer <= 0)) {
        std::fprintf(stderr,
                     "usage: vipl-run -n 2 am_stream [messages>0] [rounds>0] [reply | xfer=BYTES | get=BYTES]\n");
        return 2;
    }
    eb_t eb;
    ep_t ep;
    if (AM_SPMDStartup(&argc, &argv, &eb, &ep) != AM_OK) return 1;
    const int rank = AM_SPMDMyProc();
    if (AM_SPMDNumProcs() < 2) {
        std::fprintf(stderr, "am_stream needs 2 processes: vipl-run -n 2 am_stream\n");
        AM_SPMDExit(2);
    }
    AM_SetHandler(ep, kSink, reinterpret_cast<amx_handler_fn_t>(sink_handler));
    AM_SetHandler(ep, kConfirm, reinterpret_cast<amx_handler_fn_t>(confirm_handler));
    AM_SetHandler(ep, kAck, reinterpret_cast<amx_handler_fn_t>(ack_handler));
    std::vector<char> heap_seg;
    char *seg = nullptr; // the segment: AMVIA_AllocMem memory (AM_STREAM_HEAP_SEG=1: heap)
    const char *heap_env = std::getenv("AM_STREAM_HEAP_SEG");
    const bool heap = heap_env && std::strcmp(heap_env, "1") == 0;
    char *src = nullptr;
    if (xfer > 0) {
        if (xfer > long(AM_MaxLong())) {
            std::fprintf(stderr, "am_stream: xfer=%ld is above AM_MaxLong() = %zu\n", xfer, size_t(AM_MaxLong()));
            AM_SPMDExit(2);
        }
        AM_SetHandler(ep, kSink, reinterpret_cast<amx_handler_fn_t>(xfer_handler));
        if (!heap) seg = static_cast<char *>(AMVIA_AllocMem(size_t(xfer)));
        if (!seg) {
            heap_seg.assign(size_t(xfer), 0);
            seg = heap_seg.data();
        }
        if (AM_SetSeg(ep, seg, size_t(xfer)) != AM_OK) AM_SPMDExit(1);
        src = static_cast<char *>(AMVIA_AllocMem(size_t(xfer)));
        if (!src) src = static_cast<char *>(std::malloc(size_t(xfer))); // plain memory: cross-memory attach
        std::memset(src, 'x', size_t(xfer));
        if (get && rank == 1) std::memset(seg, 'x', size_t(xfer)); // what rank 0 gets
    }
    AM_SPMDBarrier();
    long in_use = 0; // AM_ERR_IN_USE answers in the current round (xfer=BYTES)
    for (int r = 0; r < rounds; r++) {
        if (rank == 0) {
            const double t0 = now_ns();
            if (get) {
                for (long i = 0; i < n; i++)
                    if (AM_GetXfer1(ep, 1, 0, kSink, 0, size_t(xfer), int32_t(i)) != AM_OK) AM_SPMDExit(1);
                while (g_sunk < long(r + 1) * n) AM_Poll(eb);
                if (g_bad) {
                    std::fprintf(stderr, "am_stream: FAIL: %ld gets arrived with the wrong length or bytes\n",
                                 long(g_bad));
                    AM_SPMDExit(1);
                }
                AM_Request1(ep, 1, kConfirm, 0);
            } else if (xfer > 0) {
                AMVIA_ResetEndpointStatistics(ep);
                for (long i = 0; i < n; i++) {
                    int rc;
                    while ((rc = AM_RequestXferAsync1(ep, 1, 0, kSink, src, size_t(xfer), int32_t(i))) ==
                           AM_ERR_IN_USE) {
                        in_use++;
                        AM_Poll(eb);
                    }
                    if (rc != AM_OK) AM_SPMDExit(1);
                }
            } else {
                for (long i = 0; i < n; i++) AM_Request1(ep, 1, kSink, int32_t(i));
            }
            if (!get)
                while (g_confirms < r + 1) AM_Poll(eb);
            const double ns = (now_ns() - t0) / double(n);
            if (get)
                std::printf("%.1f ns per AM_GetXfer1 of %ld bytes, %.0f MB/s (%ld messages, round %d)\n", ns, xfer,
                            double(xfer) * 1e3 / ns, n, r + 1);
            else if (xfer > 0) {
                amvia_stats_t st;
                AMVIA_GetEndpointStatistics(ep, &st);
                std::printf("%.1f ns per AM_RequestXferAsync1 of %ld bytes, %.0f MB/s (%ld messages, round %d)\n", ns,
                            xfer, double(xfer) * 1e3 / ns, n, r + 1);
                // Events per message (the same on a loaded machine): why the stream waits.
                std::printf("  per message: %.2f AM_ERR_IN_USE retries, %.2f credit stalls, %.2f send-slot stalls\n",
                            double(in_use) / double(n), double(st.CreditStalls) / double(n),
                            double(st.SendSlotStalls) / double(n));
                in_use = 0;
            } else std::printf("g = %.1f ns per AM_Request1 (%ld messages, round %d)\n", ns, n, r + 1);
        } else if (rank == 1 && get) {
            while (g_confirms < r + 1) AM_Poll(eb);
        } else if (rank == 1) {
            while (g_sunk < long(r + 1) * n) AM_Poll(eb);
            if (g_bad) {
                std::fprintf(stderr, "am_stream: FAIL: %ld transfers arrived with the wrong length or bytes\n",
                             long(g_bad));
                AM_SPMDExit(1);
            }
            AM_Request1(ep, 0, kConfirm, 0);
        }
    }
    AM_SPMDBarrier();
    AM_SPMDExit(0);
}
