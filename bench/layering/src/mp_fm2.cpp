// mp_fm2.cpp - the tagged layer with FM 2.x's features (mp.hpp): the header
// is its own piece (no assembly copy at the sender); the handler reads the
// header, finds the posted receive and FM_receive's the payload straight
// into the user's buffer (no staging copy; FM writes large payloads there by
// RDMA).  Only a message with no receive posted is staged.
#include <sched.h>

#include "fm.h"
#include "mp.hpp"

namespace mp {
namespace {

Matcher g_m;

int handler(FM_stream *s, unsigned) {
    Header h;
    FM_receive(&h, s, sizeof h);
    Matcher::Request *r = g_m.match(h.tag);
    if (!r) {
        FM_receive(g_m.stage(h.tag, h.len), s, h.len);
        return FM_CONTINUE;
    }
    r->len = h.len < r->maxlen ? h.len : r->maxlen;
    FM_receive(r->buf, s, r->len); // into the posted buffer
    r->done = true;
    return FM_CONTINUE;
}

int send(unsigned dest, int tag, const void *buf, unsigned len) {
    const Header h{tag, len};
    FM_stream *s = FM_begin_message(dest, unsigned(sizeof h) + len, handler);
    if (!s) return FM_last_error();
    int rc = FM_send_piece(s, &h, sizeof h); // gather: header, then payload
    if (rc == FM_OK) rc = FM_send_piece(s, buf, len);
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

const Layer kLayer = {"mp-fm2", send, irecv, wait};

} // namespace

const Layer &fm2() { return kLayer; }

void register_fm2_handlers() { FM_set_handler(42, handler); }

void register_fm1_handlers();
void register_handlers() {
    register_fm1_handlers();
    register_fm2_handlers();
}

} // namespace mp
