// fm_send.cpp - the sending side: handler translation, credits and send
// slots (channel.hpp), packetization of FM 2.x streams, FM 1.x FM_send and
// FM_send_4.
#include <algorithm>
#include <cstring>

#include "fm_internal.hpp"

namespace fm {

int handler_id(const void *fn, bool buffer, unsigned *id) {
    if (fn && fn == g.last_fn) {
        *id = g.last_id;
        return FM_OK;
    }
    for (unsigned i : g.registered) {
        const HandlerEntry &e = g.handlers[i];
        const void *p = buffer ? reinterpret_cast<const void *>(e.bfn) : reinterpret_cast<const void *>(e.fn);
        if (p == fn) {
            g.last_fn = fn;
            g.last_id = i;
            *id = i;
            return FM_OK;
        }
    }
    return FM_ERR_UNKNOWN_HANDLER;
}

// The send slot a completed descriptor belongs to: its own descriptor, or
// the gather descriptor of the same index (*posted: the one the NIC
// completed, whose status counts).
chan::Slot *slot_of_send(Link *l, VIP_DESCRIPTOR *d, VIP_DESCRIPTOR **posted) {
    *posted = d;
    const auto a = reinterpret_cast<uintptr_t>(d);
    const auto base = reinterpret_cast<uintptr_t>(l->gather.base());
    if (l->gather.allocated() && a >= base && a < base + l->gather.size())
        return l->ch.send_slot(uint32_t((a - base) / g.gather_stride));
    return chan::slot_of(d);
}

void reap_sends(Link *l) {
    VIP_DESCRIPTOR *d;
    while (l->ch.in_flight() && chan::Channel::send_done(l->ch.vi(), &d, kInstr) == VIP_SUCCESS) {
        VIP_DESCRIPTOR *posted;
        chan::Slot *slot = slot_of_send(l, d, &posted);
        l->ch.recycle_send(slot, kInstr, [l, posted](chan::Slot *) {
            if ((posted->CS.Status & VIP_STATUS_ERROR_MASK) && !l->dead && !g.finalizing) {
                char why[128];
                l->dead = true;
                report("send to node %u failed: %s", l->peer, VipxStatusString(posted->CS.Status, why, sizeof why));
            }
        });
    }
}

// Posts o's packet (flags First/Last as they apply).  A packet need not be
// full: the receiver never sees packet boundaries.
void flush(Outbound *o, bool last) {
    uint8_t flags = uint8_t((o->first ? kFirst : 0) | (last ? kLast : 0));
    // A long message opens with a rendezvous: its first packet asks the
    // receiver where the rest goes, and the sender waits for the answer
    // while the receiver is running, streaming packets when it is not
    // (spin_for_answer).  One per link at a time; the others stream as
    // packets.
    if (o->first && !last && g.rv_min && o->length >= g.rv_min && !o->link->rv_busy) {
        flags |= kRendezvous;
        o->rv_wait = true;
        o->link->rv_busy = true;
    }
    if (o->nseg) post_gather(o, flags);
    else post_packet(o->link, o->slot, o->handler, flags, o->id, o->length, o->fill);
    o->first = false;
    o->slot = nullptr;
    o->fill = 0;
    o->copied = 0;
    o->nseg = 0;
}

namespace {
// An open stream holds a credit for the packet it is filling.  Before
// waiting for a credit, the partly filled packets of the other open streams
// to the same node go out: otherwise open streams could hold every credit
// and wait for each other forever.
void flush_partials(Link *l) {
    for (Outbound &o : g.out)
        if (o.open && o.link == l && o.slot && o.fill) flush(&o, false);
}
} // namespace

chan::Slot *acquire(Link *l) {
    bool flushed = false;
    while (!l->ch.has_credit() || !l->ch.has_free_send()) {
        if (l->dead) return nullptr;
        if (!flushed) {
            flush_partials(l);
            flushed = true;
        }
        if (!l->ch.has_free_send()) reap_sends(l);
        if (!l->ch.has_credit() || !l->ch.has_free_send()) progress_wait();
    }
    l->ch.take_credit();
    return l->ch.take_send();
}

namespace {
void write_header(Link *l, chan::Slot *s, uint16_t handler, uint8_t flags, uint8_t stream, uint32_t msg_len,
                  uint32_t len) {
    auto *h = reinterpret_cast<PacketHeader *>(s->buf);
    h->handler = handler;
    h->flags = flags;
    h->stream = stream;
    // Piggy-back whatever this side owes the peer.
    h->credits = l->ch.take_owed();
    if (l->credit_due) {
        l->credit_due = false;
        --g.credit_due_links;
    }
    h->msg_len = msg_len;
    h->len = len;
}
} // namespace

void post_packet(Link *l, chan::Slot *s, uint16_t handler, uint8_t flags, uint8_t stream, uint32_t msg_len,
                 uint32_t len, uint32_t payload) {
    write_header(l, s, handler, flags, stream, msg_len, len);
    chan::Channel::set_message(s, uint32_t(sizeof(PacketHeader)) + payload);
    VIP_RETURN rc = l->ch.post_send(s, kInstr);
    if (rc != VIP_SUCCESS) {
        report("VipPostSend to node %u: %s", l->peer, VipxReturnString(rc));
        l->dead = true;
        l->ch.untake_send(s);
    }
}

// Posts o's packet as a gather list: the slot's buffer (header and copied
// pieces) and the callers' pieces in place, o->segs in message order, on the
// gather descriptor paired with o's send slot.
void post_gather(Outbound *o, uint8_t flags) {
    Link *l = o->link;
    chan::Slot *s = o->slot;
    write_header(l, s, o->handler, flags, o->id, o->length, o->fill);
    const uint32_t idx = uint32_t(s - l->ch.send_slot(0));
    auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(l->gather.base() + size_t(idx) * g.gather_stride);
    // DS past the declared DS[2]: the descriptor was allocated with room for gather_segs (vipl.h).
    auto *ds =
        reinterpret_cast<VIP_DESCRIPTOR_SEGMENT *>(reinterpret_cast<uint8_t *>(d) + offsetof(VIP_DESCRIPTOR, DS));
    std::memset(&d->CS, 0, sizeof d->CS);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = uint16_t(o->nseg);
    d->CS.Length = uint32_t(sizeof(PacketHeader)) + o->fill;
    for (int i = 0; i < o->nseg; i++) {
        ds[i].Local.Data.Address = const_cast<void *>(o->segs[i].addr);
        ds[i].Local.Handle = o->segs[i].mh;
        ds[i].Local.Length = o->segs[i].len;
    }
    VIPL_INSTR_BEGIN(t);
    VIP_RETURN rc = VipPostSend(l->ch.vi(), d, l->gather.handle());
    VIASTACK_CHANNEL_TIME_END(kInstr.post_send, t);
    if (rc != VIP_SUCCESS) {
        report("VipPostSend (gathered packet) to node %u: %s", l->peer, VipxReturnString(rc));
        l->dead = true;
        l->ch.untake_send(s);
    }
}

// Credits go back without taking one: the receive slots reserved for them
// (2k + 1 posted for k credits) cannot run out, since each carries at least
// credit_every of the k.  Without a free send slot they stay owed and are
// tried again at the next extraction.
void try_send_credits(Link *l) {
    if (!l->credit_due || l->dead || !l->up) return;
    if (!l->ch.has_free_send()) reap_sends(l);
    if (!l->ch.has_free_send()) return;
    post_packet(l, l->ch.take_send(), 0, kCreditOnly, 0, 0, 0);
}

bool wait_answer(Outbound *o) {
    while (o->rv_wait) {
        if (o->link->dead) return false;
        progress_wait();
    }
    return true;
}

// Waits for o's rendezvous answer as long as the waiting policy would spin.
// When it would give the CPU away instead, the receiver is evidently not
// running: rather than yield, the caller streams the next packet of the
// message and asks again (one poll) before each further one, so the round
// trip overlaps copying (docs/fm.md, "Rendezvous").  False on a failed link.
bool spin_for_answer(Outbound *o) {
    while (o->rv_wait) {
        if (o->link->dead) return false;
        if (extract(FM_EXTRACT_ALL) > 0) vipl_wait::progress(g.wait);
        else if (vipl_wait::idle(g.wait)) break;
    }
    return true;
}

void rdma_target_arrived(Link *l, const PacketHeader *h, const RdmaTarget &t) {
    Outbound *o = h->stream < kStreams ? &g.out[h->stream] : nullptr;
    if (t.answer) {
        if (!o || !o->open || o->link->peer != l->peer || !o->rv_wait) {
            report("protocol error: rendezvous answer from node %u for stream %u, which awaits none", l->peer,
                   h->stream);
            return;
        }
        o->rv_wait = false;
        o->link->rv_busy = false;
        if (t.len == 0) return; // declined: the rest goes as packets
    }
    // The receiver asks only while at least (k + 2) packets of the message
    // are still to come, more than the sender can have sent without the
    // credits that follow this packet: the message is still open here.
    if (!o || !o->open || o->link->peer != l->peer || o->rdma ||
        o->sent > t.offset + g.layout.credits * g.layout.bufsize + g.layout.bufsize) {
        report("protocol error: RDMA target from node %u for stream %u, which is not open to it", l->peer, h->stream);
        return;
    }
    o->rdma = true;
    o->rdma_started = false;
    o->rdma_offset = t.offset;
    o->rdma_end = t.offset + t.len;
    o->rdma_addr = t.addr;
    o->rdma_mh = t.mh;
}

namespace {

// A send slot for an RDMA write (no credit: it takes no receive buffer).
chan::Slot *rdma_slot(Link *l) {
    while (!l->ch.has_free_send()) {
        if (l->dead) return nullptr;
        reap_sends(l);
        if (!l->ch.has_free_send()) progress_wait();
    }
    return l->ch.take_send();
}

} // namespace

namespace {

// Posts one RDMA write of n bytes at local (handle lmh) to message offset
// o->sent of the receiver's named buffer.  False on a failed post.
bool post_write(Outbound *o, chan::Slot *s, const void *local, VIP_MEM_HANDLE lmh, uint32_t n) {
    Link *l = o->link;
    VIP_RETURN rc =
        l->ch.post_rdma_write(s, o->rdma_addr + (o->sent - o->rdma_offset), o->rdma_mh, local, lmh, n, kInstr);
    if (rc != VIP_SUCCESS) {
        report("VipPostSend (RDMA write) to node %u: %s", l->peer, VipxReturnString(rc));
        l->dead = true;
        return false;
    }
    o->sent += n;
    return true;
}

// Every send of l complete (RDMA writes included).  Over a NIC whose
// firmware runs only inside VIPL calls (an emulated NIC's inline mode, which
// moves a bounded amount per call) a burst of writes - not limited by credits as
// packets are - was seen left in the send queue when the program went on to
// an out-of-band barrier, and the receiver waited for ever; waiting here
// keeps stepping the firmware until they are done.
void wait_sends(Link *l) {
    while (l->ch.in_flight() && !l->dead) reap_sends(l);
}

// Zero-copy: a piece of at least g.rdma_min bytes inside the range is
// registered for the call and written straight from the caller's memory
// (the writes complete before FM_send_piece returns: the caller may reuse
// the buffer then).  Returns the bytes taken, 0 if registration failed.
uint32_t write_registered(Outbound *o, const uint8_t *p, uint32_t n) {
    Link *l = o->link;
    VIP_MEM_HANDLE mh;
    const int entry = g.regcache.acquire(p, n, &mh, [l] { reap_sends(l); });
    if (entry == chan::RegCache::kNone) return 0;
    uint32_t done = 0;
    while (done < n) {
        const uint32_t c = std::min<uint32_t>(n - done, g.max_write);
        chan::Slot *s = rdma_slot(l);
        if (!s || !post_write(o, s, p + done, mh, c)) break;
        done += c;
    }
    wait_sends(l);
    g.regcache.release(entry);
    return done;
}

} // namespace

// Appends a segment to o's packet (the slot's buffer at the copy position
// when slot_buf); false when the descriptor has no segment left.
bool add_segment(Outbound *o, const void *addr, VIP_MEM_HANDLE mh, uint32_t n, bool slot_buf) {
    if (o->nseg == 0) { // the packet so far: the header and what was copied after it
        o->segs[0] = {o->slot->buf, o->link->ch.mem_handle(), uint32_t(sizeof(PacketHeader)) + o->copied, true};
        o->nseg = 1;
    }
    Seg &last = o->segs[o->nseg - 1];
    if (slot_buf && last.slot_buf) { // copied bytes follow copied bytes in the buffer
        last.len += n;
        return true;
    }
    if (o->nseg == g.gather_segs) return false;
    o->segs[o->nseg++] = {addr, mh, n, slot_buf};
    if (!slot_buf) g.gathered_bytes += n;
    return true;
}

// A piece the caller may reuse once FM_send_piece returns went (in part) as
// segments: the packet still naming it goes now (as the message's last if
// nothing remains), and every send naming it completes before we return.
void finish_gathered_piece(Outbound *o) {
    if (o->slot && o->nseg) {
        const bool last = o->sent == o->length;
        flush(o, last);
        o->ended = last;
    }
    wait_sends(o->link);
}

// Sends up to len bytes of o at o->sent by RDMA write into the receiver's
// named buffer: large pieces from the caller's memory, small ones copied
// through a send slot's buffer.  After the range's last byte, the
// kRdmaDone packet (on the same VI, so after the data).  Returns the bytes
// taken, 0 on a failed link.
uint32_t rdma_piece(Outbound *o, const uint8_t *p, uint32_t len) {
    Link *l = o->link;
    if (o->slot && o->fill) flush(o, false); // bytes before the RDMA range go as a packet
    if (!o->rdma_started) {
        o->rdma_started = true;
        o->rdma_first = o->sent;
    }
    const uint32_t in_range = std::min<uint32_t>(len, o->rdma_end - o->sent);
    uint32_t n = 0;
    if (in_range >= g.rdma_min) n = write_registered(o, p, in_range);
    if (n == 0) {
        n = std::min<uint32_t>(in_range, g.layout.bufsize);
        chan::Slot *s = rdma_slot(l);
        if (!s) return 0;
        std::memcpy(s->buf, p, n);
        if (!post_write(o, s, s->buf, l->ch.mem_handle(), n)) return 0;
    }
    if (o->sent == o->rdma_end) {
        wait_sends(l); // the writes complete before the range is announced
        chan::Slot *m = o->slot;
        o->slot = nullptr;
        if (!m) m = acquire(l);
        if (!m) return 0;
        // A range that ends the message is also its last packet: no empty
        // packet (one credit, one extraction) follows from FM_end_message.
        const bool last = o->sent == o->length;
        post_packet(l, m, o->handler, uint8_t(kRdmaDone | (last ? kLast : 0)), o->id, o->length,
                    o->sent - o->rdma_first, 0);
        o->first = false;
        o->rdma = false;
        o->ended = last;
    }
    return n;
}

} // namespace fm

using namespace fm;

namespace {

Outbound *outbound_of(FM_stream *st, const char *fn, int *rc) {
    if (!g.init) {
        *rc = fail(FM_ERR_NOT_INIT, fn, "call FM_initialize first");
        return nullptr;
    }
    if (!st || st->inbound) {
        *rc = fail(FM_ERR_BAD_ARG, fn, "not a stream returned by FM_begin_message");
        return nullptr;
    }
    auto *o = static_cast<Outbound *>(st);
    if (!o->open) {
        *rc = fail(FM_ERR_STATE, fn, "the stream was ended");
        return nullptr;
    }
    return o;
}

void close_stream(Outbound *o) {
    o->open = false;
    g.free_out[g.nfree_out++] = o->id;
}

int check_dest(unsigned dest, const char *fn) {
    if (!g.init) return fail(FM_ERR_NOT_INIT, fn, "call FM_initialize first");
    if (dest >= g.size) return fail(FM_ERR_BAD_DEST, fn, "node %u is not in the job (%u nodes)", dest, g.size);
    if (g.tx[dest]->dead) return fail(FM_ERR_RESOURCE, fn, "the connection to node %u has failed", dest);
    return FM_OK;
}

} // namespace

extern "C" {

FM_stream *FM_begin_message(unsigned dest, unsigned length, FM_handler handler) {
    if (check_dest(dest, "FM_begin_message") != FM_OK) return nullptr;
    unsigned id;
    if (!handler || handler_id(reinterpret_cast<const void *>(handler), false, &id) != FM_OK) {
        fail(FM_ERR_UNKNOWN_HANDLER, "FM_begin_message", "handler %p is not registered with FM_set_handler",
             reinterpret_cast<void *>(handler));
        return nullptr;
    }
    if (length > FM_MAX_MESSAGE) {
        fail(FM_ERR_TOO_LONG, "FM_begin_message", "%u bytes exceed FM_MAX_MESSAGE", length);
        return nullptr;
    }
    if (g.nfree_out == 0) {
        fail(FM_ERR_RESOURCE, "FM_begin_message", "%d messages are already open (end one first)", kStreams);
        return nullptr;
    }
    Outbound *o = &g.out[g.free_out[--g.nfree_out]];
    o->link = g.tx[dest];
    o->handler = uint16_t(id);
    o->open = true;
    o->first = true;
    o->length = length;
    o->sent = 0;
    o->slot = nullptr;
    o->fill = 0;
    o->copied = 0;
    o->nseg = 0;
    o->ended = false;
    o->rdma = false;
    o->rv_wait = false;
    return o;
}

int FM_send_piece(FM_stream *stream, const void *buf, unsigned len) {
    int rc;
    Outbound *o = outbound_of(stream, "FM_send_piece", &rc);
    if (!o) return rc;
    if (len && !buf) return fail(FM_ERR_BAD_ARG, "FM_send_piece", "NULL buffer");
    if (len > o->length - o->sent)
        return fail(FM_ERR_TOO_LONG, "FM_send_piece", "%u bytes, but only %u of the announced %u remain", len,
                    o->length - o->sent, o->length);
    auto *p = static_cast<const uint8_t *>(buf);
    // Zero-copy gather: a piece of at least gather_min bytes goes into the
    // packets as data segments naming the caller's memory (registered
    // through the cache), not copied into the slots' buffers.
    VIP_MEM_HANDLE umh = 0;
    int entry = chan::RegCache::kNone;
    if (g.gather_min && len >= g.gather_min) entry = g.regcache.acquire(p, len, &umh, [o] { reap_sends(o->link); });
    const bool gathered = entry != chan::RegCache::kNone; // else (small, or registration failed) copied
    while (len) {
        if (o->rv_wait && !spin_for_answer(o)) break;
        if (o->rdma && o->sent >= o->rdma_offset) {
            uint32_t n = rdma_piece(o, p, len);
            if (!n) break;
            p += n;
            len -= n;
            continue;
        }
        if (!o->slot) {
            o->slot = acquire(o->link);
            if (!o->slot) break;
        }
        uint32_t n = std::min<uint32_t>(len, g.payload_max - o->fill);
        if (gathered || o->nseg) {
            if (!add_segment(o,
                             gathered ? static_cast<const void *>(p) : o->slot->buf + sizeof(PacketHeader) + o->copied,
                             gathered ? umh : o->link->ch.mem_handle(), n, !gathered)) {
                flush(o, false); // no segment left: the packet goes as it is, the rest in the next
                continue;
            }
        }
        if (!gathered) {
            std::memcpy(o->slot->buf + sizeof(PacketHeader) + o->copied, p, n);
            o->copied += n;
        }
        o->fill += n;
        o->sent += n;
        p += n;
        len -= n;
        // A full packet goes out unless it may be the last (FM_end_message marks it).
        if (o->fill == g.payload_max && o->sent < o->length) flush(o, false);
    }
    if (gathered) {
        finish_gathered_piece(o);
        g.regcache.release(entry);
    }
    if (len) return fail(FM_ERR_RESOURCE, "FM_send_piece", "the connection to node %u has failed", o->link->peer);
    return FM_OK;
}

int FM_end_message(FM_stream *stream) {
    int rc;
    Outbound *o = outbound_of(stream, "FM_end_message", &rc);
    if (!o) return rc;
    if (o->rv_wait && !wait_answer(o)) { // (a first packet flushed early, by flush_partials)
        close_stream(o);
        return fail(FM_ERR_RESOURCE, "FM_end_message", "the connection to node %u has failed", o->link->peer);
    }
    if (o->sent != o->length)
        return fail(FM_ERR_STATE, "FM_end_message", "%u of the announced %u bytes were sent", o->sent, o->length);
    if (o->ended) { // the final bytes were gathered or RDMA-written: their packet was the last
        close_stream(o);
        return FM_OK;
    }
    if (!o->slot) {
        o->slot = acquire(o->link); // an empty message (or nothing since the last full packet: not reached)
        if (!o->slot) {
            close_stream(o);
            return fail(FM_ERR_RESOURCE, "FM_end_message", "the connection to node %u has failed", o->link->peer);
        }
    }
    flush(o, true);
    close_stream(o);
    return FM_OK;
}

int FM_send(unsigned dest, FM_buffer_handler handler, const void *buf, unsigned size) {
    int rc = check_dest(dest, "FM_send");
    if (rc != FM_OK) return rc;
    unsigned id;
    if (!handler || handler_id(reinterpret_cast<const void *>(handler), true, &id) != FM_OK)
        return fail(FM_ERR_UNKNOWN_HANDLER, "FM_send", "handler %p is not registered with FM_set_buffer_handler",
                    reinterpret_cast<void *>(handler));
    if (size && !buf) return fail(FM_ERR_BAD_ARG, "FM_send", "NULL buffer");
    if (size > g.payload_max)
        return fail(FM_ERR_TOO_LONG, "FM_send", "%u bytes exceed FM_max_buffer_message() = %u", size, g.payload_max);
    Link *l = g.tx[dest];
    chan::Slot *s = acquire(l);
    if (!s) return fail(FM_ERR_RESOURCE, "FM_send", "the connection to node %u has failed", dest);
    std::memcpy(s->buf + sizeof(PacketHeader), buf, size);
    post_packet(l, s, uint16_t(id), kFirst | kLast | kBuffer, 0, size, size);
    return FM_OK;
}

int FM_send_4(unsigned dest, FM_buffer_handler handler, int i0, int i1, int i2, int i3) {
    const int words[4] = {i0, i1, i2, i3};
    return FM_send(dest, handler, words, sizeof words);
}

unsigned FM_max_buffer_message(void) { return g.init ? g.payload_max : 0; }

unsigned long long FM_gathered_bytes(void) { return g.gathered_bytes; }

} // extern "C"
