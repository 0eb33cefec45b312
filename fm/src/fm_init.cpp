// fm_init.cpp - joining the job and leaving it: the NIC, one VI per peer
// (two for the self-connection) with its channel of registered slots,
// connected by discriminator (viastack/peer_vi.hpp, shared with BIP), the
// handler table, FM_finalize's goodbye.
#include <sched.h>

#include <algorithm>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fm_internal.hpp"
#include "viastack/peer_vi.hpp"
#include "vipl_boot.h"
#include "viastack_env.hpp"

namespace fm {

State g;

void report(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    viastack::log::vlogf(viastack::log::Layer::fm, viastack::log::Level::error, fmt, ap);
    va_end(ap);
}

int fail(int code, const char *fn, const char *fmt, ...) {
    g.last_error = code;
    va_list ap;
    va_start(ap, fmt);
    viastack::log::vlog_failure(viastack::log::Layer::fm, "VIASTACK_FM_VERBOSE", fn, FM_error_name(code), fmt, ap);
    va_end(ap);
    return code;
}

namespace {

// The smallest piece sent as a data segment rather than copied (measured:
// docs/fm.md, "Gather").
constexpr long kGatherMinDefault = 262144;

// VIASTACK_FM_* integers (a bad value is logged, naming the variable, and the default kept).
long env_int(const char *name, long dflt, long lo, long hi) {
    return viastack::env::integer(viastack::log::Layer::fm, name, dflt, lo, hi);
}

// Every link's VI: receives on the one CQ, sends reaped from the VI; layer
// interleaving: senders write into handlers' buffers (RDMA write).
chan::PeerViConfig vi_config() {
    return chan::layer_vi_config(g, std::max<VIP_ULONG>(g.layout.bufsize, g.max_write),
                                 VIP_ULONG(env_int("VIASTACK_FM_CONNECT_TIMEOUT_MS", 60000, 1, 1L << 30)));
}

Link *link_create(const chan::PeerViConfig &cfg, unsigned peer, uint8_t side,
                  const std::vector<chan::NicAddress> &addrs, std::string *why) {
    auto *l = new Link();
    l->peer = peer;
    l->side = side;
    g.links.push_back(l); // torn down with the rest on failure
    if (g.gather_min && !l->gather.allocate(g.nic, g.ptag, size_t(g.layout.nsend) * g.gather_stride, why))
        return nullptr;
    if (!chan::start_rank_link(cfg, l->ch, l->region, g.layout, "FM", addrs, g.rank, peer, side, why)) return nullptr;
    return l;
}

void teardown() {
    for (Link *l : g.links) {
        if (l->gather.allocated() && l->ch.vi()) {
            // Gathered packets still on the VI come back here: the channel's
            // drain knows only the slots' own descriptors.
            VipDisconnect(l->ch.vi());
            VIP_DESCRIPTOR *d, *posted;
            while (VipSendDone(l->ch.vi(), &d) == VIP_SUCCESS) {
                chan::Slot *s = slot_of_send(l, d, &posted);
                if (s->rdma) l->ch.restore_plain(s);
                l->ch.untake_send(s);
            }
        }
        chan::close_peer_vi(l->ch, l->region);
        l->gather.release();
        delete l;
    }
    g.links.clear();
    g.tx.clear();
    for (Inbound *in : g.free_inbound) delete in;
    g.free_inbound.clear();
    co_free_all();
    g.memory.free_all(g.nic, &g.regcache, &g.dst_regs);
    g.regcache.clear();
    g.dst_regs.clear();
    chan::close_reliable_nic(&g);
    g.init = false;
}

int init_fail(const char *what) {
    report("FM_initialize: %s", what);
    teardown();
    g.last_error = FM_ERR_RESOURCE;
    return FM_ERR_RESOURCE;
}

} // namespace
} // namespace fm

using namespace fm;

extern "C" {

int FM_initialize(void) {
    if (g.init) return FM_OK;
    std::string why;
    if (const chan::JoinJob j = chan::join_job(&g.wait, &g.rank, &g.size, &why); j != chan::JoinJob::ok) {
        if (j == chan::JoinJob::no_job) return init_fail(why.c_str());
        report("FM_initialize: %s", why.c_str());
        return g.last_error = FM_ERR_BAD_ARG;
    }
    const uint32_t credits = uint32_t(env_int("VIASTACK_FM_CREDITS", 8, 2, 64));
    const uint32_t packet = uint32_t(env_int("VIASTACK_FM_PACKET", 2048, 64, 65536));
    g.stack_size = size_t(env_int("VIASTACK_FM_STACK", 64 * 1024, 16 * 1024, 16L << 20));
    g.layout = chan::layout_for(credits, packet);
    g.layout.nrecv += 1; // the answer to a rendezvous: no credit, one per link at a time
    g.payload_max = packet - uint32_t(sizeof(PacketHeader));
    g.credit_every = std::max<uint32_t>(1, credits / 2);
    // RDMA into a handler's named buffer: at least (k + 2) packets (see
    // request_rdma); VIASTACK_FM_RDMA_MIN=0 turns it off.
    const long rdma_min = env_int("VIASTACK_FM_RDMA_MIN", 32768, 0, FM_MAX_MESSAGE);
    g.rdma_min = rdma_min == 0 ? 0 : std::max<uint32_t>(uint32_t(rdma_min), (credits + 2) * packet);
    // A message whose bytes after its first packet can be one RDMA write of
    // at least rdma_min opens with a rendezvous (docs/fm.md, "Rendezvous");
    // VIASTACK_FM_RENDEZVOUS=0 streams every message as packets first.
    const bool rendezvous = env_int("VIASTACK_FM_RENDEZVOUS", 1, 0, 1) != 0;
    g.rv_min = rendezvous && g.rdma_min ? g.rdma_min + g.payload_max : 0;
    if (!chan::open_reliable_nic(viastack::env::raw("VIASTACK_FM_NIC"), "VIASTACK_FM_NIC", "FM", &g, &why))
        return init_fail(why.c_str());
    if (g.attr.MaxTransferSize && g.attr.MaxTransferSize < packet)
        return init_fail("VIASTACK_FM_PACKET exceeds the NIC's MaxTransferSize");
    g.regcache.init(g.nic, g.ptag);
    g.dst_regs.init(g.nic, g.ptag, /*rdma_write=*/true);
    g.cache_dst = !chan::registration_pins(g.nic);
    // Gather: pieces of at least VIASTACK_FM_GATHER_MIN bytes become data
    // segments of the packet's descriptor (docs/fm.md, "Gather"), up to
    // VIASTACK_FM_GATHER_SEGMENTS segments (header included) and the NIC's
    // limit (less the address segment, which sends do not use but some
    // providers count); 0 turns it off.
    g.gather_min = uint32_t(env_int("VIASTACK_FM_GATHER_MIN", kGatherMinDefault, 0, FM_MAX_MESSAGE));
    long segs = env_int("VIASTACK_FM_GATHER_SEGMENTS", 16, 2, kMaxGatherSegs);
    if (g.attr.MaxSegmentsPerDesc) segs = std::min<long>(segs, long(g.attr.MaxSegmentsPerDesc) - 1);
    if (segs < 2) g.gather_min = 0;
    g.gather_segs = int(segs);
    g.gather_stride =
        uint32_t((offsetof(VIP_DESCRIPTOR, DS) + size_t(segs) * sizeof(VIP_DESCRIPTOR_SEGMENT) + 63) & ~size_t(63));
    // RDMA writes straight from a sender's piece: as large as the NIC takes, up to 256 KB.
    g.max_write =
        uint32_t(g.attr.MaxTransferSize ? std::min<VIP_ULONG>(g.attr.MaxTransferSize, 256 * 1024) : 256 * 1024);
    const size_t nlinks = g.size + 1; // one per peer, two for ourselves
    VIP_RETURN rc = VipCreateCQ(g.nic, VIP_ULONG(nlinks * g.layout.nrecv), &g.rcq);
    if (rc != VIP_SUCCESS) return init_fail((std::string("VipCreateCQ: ") + VipxReturnString(rc)).c_str());

    std::vector<chan::NicAddress> addrs;
    if (!chan::exchange_addresses(g.attr, nullptr, 0, &addrs, nullptr, &why)) return init_fail(why.c_str());
    g.tx.assign(g.size, nullptr);
    const chan::PeerViConfig cfg = vi_config();
    for (unsigned r = 0; r < g.size; r++) {
        Link *l = link_create(cfg, r, 0, addrs, &why);
        if (!l) return init_fail(why.c_str());
        g.tx[r] = l;
        if (r == g.rank && !link_create(cfg, r, 1, addrs, &why)) return init_fail(why.c_str());
    }
    if (!chan::finish_links(g.links, cfg.connect_timeout_ms, "node", &why)) return init_fail(why.c_str());
    g.nfree_out = 0;
    for (int i = kStreams - 1; i >= 0; i--) {
        g.out[i] = Outbound{};
        g.out[i].inbound = false;
        g.out[i].id = uint8_t(i);
        g.free_out[g.nfree_out++] = uint8_t(i);
    }
    g.current = nullptr;
    g.suspended = 0;
    g.credit_due_links = 0;
    g.finalizing = false;
    g.init = true;
    if (vipl_boot_barrier() != VIPL_BOOT_OK) return init_fail("barrier after connecting failed");
    return FM_OK;
}

int FM_finalize(void) {
    if (!g.init) return FM_OK;
    if (g.current) return fail(FM_ERR_STATE, "FM_finalize", "called from a handler");
    if (g.nfree_out != kStreams)
        return fail(FM_ERR_STATE, "FM_finalize", "%d messages are still open (FM_end_message them first)",
                    kStreams - g.nfree_out);
    // Goodbye on every link we send on; on each VI, packets are delivered in
    // order, so once every peer's goodbye is here every message sent to us
    // has been extracted (its handler ran) and nothing more will come.
    for (unsigned r = 0; r < g.size; r++) {
        Link *l = g.tx[r];
        chan::Slot *s = acquire(l);
        if (s) post_packet(l, s, 0, kBye, 0, 0, 0);
    }
    for (;;) {
        bool all = true;
        for (unsigned r = 0; r < g.size; r++) {
            // The goodbye from r arrives on the link r sends to us on: for
            // ourselves that is the second (side 1) link.
            Link *in = g.tx[r];
            if (r == g.rank)
                for (Link *l : g.links)
                    if (l->peer == r && l->side == 1) in = l;
            if (!in->bye && !in->dead) all = false;
        }
        if (all) break;
        progress_wait();
    }
    g.finalizing = true;
    for (Link *l : g.links)
        while (l->ch.in_flight() && !l->dead) {
            reap_sends(l);
            sched_yield();
        }
    int rc = vipl_boot_barrier() == VIPL_BOOT_OK ? FM_OK : FM_ERR_RESOURCE;
    teardown();
    return rc;
}

unsigned FM_nodeid(void) { return g.rank; }
unsigned FM_numnodes(void) { return g.size; }

int FM_set_handler(unsigned id, FM_handler fn) {
    if (id >= FM_MAX_HANDLERS) return fail(FM_ERR_BAD_ARG, "FM_set_handler", "id %u >= FM_MAX_HANDLERS", id);
    if (!fn) return fail(FM_ERR_BAD_ARG, "FM_set_handler", "NULL handler");
    HandlerEntry &e = g.handlers[id];
    if (!e.fn && !e.bfn) g.registered.push_back(id);
    e.fn = fn;
    e.bfn = nullptr;
    g.last_fn = nullptr;
    return FM_OK;
}

int FM_set_buffer_handler(unsigned id, FM_buffer_handler fn) {
    if (id >= FM_MAX_HANDLERS) return fail(FM_ERR_BAD_ARG, "FM_set_buffer_handler", "id %u >= FM_MAX_HANDLERS", id);
    if (!fn) return fail(FM_ERR_BAD_ARG, "FM_set_buffer_handler", "NULL handler");
    HandlerEntry &e = g.handlers[id];
    if (!e.fn && !e.bfn) g.registered.push_back(id);
    e.bfn = fn;
    e.fn = nullptr;
    g.last_fn = nullptr;
    return FM_OK;
}

void *FM_alloc_mem(size_t bytes) {
    if (!g.init) {
        fail(FM_ERR_NOT_INIT, "FM_alloc_mem", "call FM_initialize first");
        return nullptr;
    }
    if (bytes == 0) {
        fail(FM_ERR_BAD_ARG, "FM_alloc_mem", "0 bytes");
        return nullptr;
    }
    void *p = g.memory.alloc(g.nic, bytes);
    if (!p) fail(FM_ERR_RESOURCE, "FM_alloc_mem", "the NIC has no memory left for %zu bytes", bytes);
    return p;
}

int FM_free_mem(void *addr) {
    if (!g.init) return fail(FM_ERR_NOT_INIT, "FM_free_mem", "call FM_initialize first");
    if (!g.memory.free(g.nic, addr, &g.regcache, &g.dst_regs))
        return fail(FM_ERR_BAD_ARG, "FM_free_mem", "%p is not memory from FM_alloc_mem", addr);
    return FM_OK;
}

int FM_last_error(void) { return g.last_error; }

const char *FM_error_name(int code) {
    switch (code) {
    case FM_OK: return "FM_OK";
    case FM_ERR_NOT_INIT: return "FM_ERR_NOT_INIT";
    case FM_ERR_BAD_ARG: return "FM_ERR_BAD_ARG";
    case FM_ERR_BAD_DEST: return "FM_ERR_BAD_DEST";
    case FM_ERR_UNKNOWN_HANDLER: return "FM_ERR_UNKNOWN_HANDLER";
    case FM_ERR_TOO_LONG: return "FM_ERR_TOO_LONG";
    case FM_ERR_RESOURCE: return "FM_ERR_RESOURCE";
    case FM_ERR_STATE: return "FM_ERR_STATE";
    default: return code > 0 ? "FM_OK" : "unknown FM error";
    }
}

} // extern "C"
