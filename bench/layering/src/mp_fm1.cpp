// mp_fm1.cpp - the tagged layer as an FM 1.x client (mp.hpp): whole-message
// sends from a contiguous buffer the layer assembles (a copy of the
// payload behind the header), the whole message handed to the layer in a
// staging buffer and copied from there into the posted receive.
#include <vector>

#include <sched.h>

#include "fm.h"
#include "mp.hpp"

namespace mp {
namespace {

Matcher g_m;
std::vector<uint8_t> g_tx, g_rx; // the send assembly and the receive staging buffers

// The layer's part once the whole message is in one buffer.
void deliver(const uint8_t *msg, unsigned size) {
    Header h;
    std::memcpy(&h, msg, sizeof h);
    Matcher::Request *r = g_m.match(h.tag);
    if (r) Matcher::complete(*r, msg + sizeof h, h.len); // the staging copy
    else std::memcpy(g_m.stage(h.tag, h.len), msg + sizeof h, h.len);
}

// Short messages: FM 1.x's own buffer handler (FM's packet buffer is the staging buffer).
void buffer_handler(void *buf, unsigned size, unsigned) { deliver(static_cast<const uint8_t *>(buf), size); }

// Longer ones: FM 1.x hands the handler the whole message in a buffer;
// FM_receive of the whole message into the layer's staging buffer is that.
int stream_handler(FM_stream *s, unsigned) {
    Header h;
    FM_receive(&h, s, sizeof h);
    if (g_rx.size() < sizeof h + h.len) g_rx.resize(sizeof h + h.len);
    std::memcpy(g_rx.data(), &h, sizeof h);
    FM_receive(g_rx.data() + sizeof h, s, h.len);
    deliver(g_rx.data(), unsigned(sizeof h + h.len));
    return FM_CONTINUE;
}

int send(unsigned dest, int tag, const void *buf, unsigned len) {
    const unsigned total = unsigned(sizeof(Header)) + len;
    if (g_tx.size() < total) g_tx.resize(total);
    const Header h{tag, len};
    std::memcpy(g_tx.data(), &h, sizeof h);
    std::memcpy(g_tx.data() + sizeof h, buf, len); // assembling the message: a copy
    if (total <= FM_max_buffer_message()) return FM_send(dest, buffer_handler, g_tx.data(), total);
    FM_stream *s = FM_begin_message(dest, total, stream_handler);
    if (!s) return FM_last_error();
    int rc = FM_send_piece(s, g_tx.data(), total);
    int rc2 = FM_end_message(s);
    return rc != FM_OK ? rc : rc2;
}

int irecv(int tag, void *buf, unsigned maxlen) { return g_m.post(tag, buf, maxlen); }

unsigned wait(int req) {
    Matcher::Request &r = g_m.request(req);
    unsigned idle = 0;
    while (!r.done)
        if (FM_extract(FM_EXTRACT_ALL) == 0 && ++idle % 256 == 0) sched_yield(); // as layering.hpp's Idle
    const unsigned len = r.len;
    g_m.release(req);
    return len;
}

const Layer kLayer = {"mp-fm1", send, irecv, wait};

} // namespace

const Layer &fm1() { return kLayer; }

void register_fm1_handlers() {
    FM_set_buffer_handler(40, buffer_handler);
    FM_set_handler(41, stream_handler);
}

} // namespace mp
