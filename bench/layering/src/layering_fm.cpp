// layering_fm.cpp - one-way streaming bandwidth of FM itself and of the two
// tagged layers over it (mp_fm1, mp_fm2), interleaved size by size and
// round by round in one job (layering.hpp).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "fm.h"
#include "layering.hpp"
#include "mp.hpp"

namespace layering {
namespace {

volatile int g_count = 0;  // messages the raw-FM handler consumed
volatile int g_signal = 0; // go / ack signals
unsigned g_len = 0;
std::vector<uint8_t> g_sink;

constexpr int kWindow = 8; // receives the layers keep posted (buffers the messages rotate through)

// FM's own bandwidth: the receiving handler FM_receive's the message into
// the same rotation of buffers the layers' posted receives use (so the two
// move the same bytes to the same places: only the layer differs).
int raw_handler(FM_stream *s, unsigned) {
    FM_receive(g_sink.data() + size_t(g_len) * size_t(g_count % kWindow), s, g_len);
    g_count = g_count + 1;
    return FM_CONTINUE;
}
void signal_handler(void *, unsigned, unsigned) { g_signal = g_signal + 1; }

void wait_signal(int want) {
    Idle idle;
    while (g_signal < want)
        if (FM_extract(FM_EXTRACT_ALL) == 0) idle();
}

} // namespace

int run_fm(const Options &o) {
    mp::register_handlers();
    FM_set_handler(43, raw_handler);
    FM_set_buffer_handler(44, signal_handler);
    if (FM_initialize() != FM_OK) return 2;
    const unsigned me = FM_nodeid();
    if (FM_numnodes() != 2) {
        std::fprintf(stderr, "layering_bw fm: needs exactly 2 ranks\n");
        return 2;
    }
    const size_t maxsz = *std::max_element(o.sizes.begin(), o.sizes.end());
    std::vector<uint8_t> src(maxsz, 0x5a);
    g_sink.resize(maxsz * kWindow);
    std::vector<uint8_t> &dst = g_sink; // the layers' receive buffers: the same rotation
    int signals = 0;
    const mp::Layer *layers[] = {nullptr, &mp::fm1(), &mp::fm2()}; // null: FM itself
    const char *names[] = {"fm", "mp-fm1", "mp-fm2"};
    for (size_t n : o.sizes) {
        const int count = messages_for(n);
        g_len = unsigned(n);
        for (int round = 0; round < o.rounds; round++)
            for (int k = 0; k < 3; k++) {
                // The order rotates round by round: no variant always runs first.
                const int v = (k + round) % 3;
                const mp::Layer *L = layers[v];
                if (me == 1) {
                    // Receiver: post the window, say go, receive, ack.
                    int req[kWindow];
                    g_count = 0;
                    if (L)
                        for (int i = 0; i < std::min(kWindow, count); i++)
                            req[i] = L->irecv(7, dst.data() + n * size_t(i), unsigned(n));
                    FM_send_4(0, signal_handler, 0, 0, 0, 0);
                    if (L) {
                        for (int i = 0; i < count; i++) {
                            const int w = i % kWindow;
                            if (L->wait(req[w]) != n)
                                std::printf("ERROR: %s message of %zu bytes short\n", names[v], n);
                            if (i + kWindow < count) req[w] = L->irecv(7, dst.data() + n * size_t(w), unsigned(n));
                        }
                    } else {
                        Idle idle;
                        while (g_count < count)
                            if (FM_extract(FM_EXTRACT_ALL) == 0) idle();
                    }
                    FM_send_4(0, signal_handler, 0, 0, 0, 0);
                } else {
                    wait_signal(++signals);
                    const double t0 = now_ns();
                    for (int i = 0; i < count; i++) {
                        int rc;
                        if (L) {
                            rc = L->send(1, 7, src.data(), unsigned(n));
                        } else {
                            FM_stream *s = FM_begin_message(1, unsigned(n), raw_handler);
                            rc = s ? FM_send_piece(s, src.data(), unsigned(n)) : FM_last_error();
                            if (s && FM_end_message(s) != FM_OK) rc = -1;
                        }
                        if (rc != FM_OK) {
                            std::printf("ERROR: %s send: %s\n", names[v], FM_error_name(rc));
                            return 1;
                        }
                    }
                    wait_signal(++signals);
                    print_row(names[v], n, round, count, now_ns() - t0);
                }
            }
    }
    return FM_finalize() == FM_OK ? 0 : 1;
}

} // namespace layering
