// bip_init.cpp - joining the job and leaving it: the NIC, one VI per peer
// (two for the self-connection) with its channel of registered slots sized
// from what each receiver announces, connected by discriminator
// (viastack/peer_vi.hpp, shared with FM),
// bip_finalize's goodbye, the error names.
#include <sched.h>

#include <algorithm>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bip_internal.hpp"
#include "viastack/peer_vi.hpp"
#include "vipl_boot.h"
#include "viastack_env.hpp"

namespace bip {

State g;

void report(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    viastack::log::vlogf(viastack::log::Layer::bip, viastack::log::Level::error, fmt, ap);
    va_end(ap);
}

int fail(int code, const char *fn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    viastack::log::vlog_failure(viastack::log::Layer::bip, "VIASTACK_BIP_VERBOSE", fn, bip_error_name(code), fmt, ap);
    va_end(ap);
    return code;
}

namespace {

// VIASTACK_BIP_* integers (a bad value is logged, naming the variable, and the default kept).
long env_int(const char *name, long dflt, long lo, long hi) {
    return viastack::env::integer(viastack::log::Layer::bip, name, dflt, lo, hi);
}

constexpr uint32_t round64(uint32_t n) { return (n + 63) & ~uint32_t(63); }

// Every link's VI: receives on the one CQ, sends reaped from the VI; long
// messages are written into the posted receive buffer (RDMA write).
chan::PeerViConfig vi_config(uint32_t bufsize) {
    return chan::layer_vi_config(g, std::max<VIP_ULONG>(bufsize, g.fragment_max),
                                 VIP_ULONG(env_int("VIASTACK_BIP_CONNECT_TIMEOUT_MS", 60000, 1, 1L << 30)));
}

Link *link_create(const chan::PeerViConfig &cfg, unsigned peer, uint8_t side, const Announce &me, const Announce &them,
                  const std::vector<chan::NicAddress> &addrs, uint32_t bufsize, std::string *why) {
    auto *l = new Link();
    l->peer = peer;
    l->side = side;
    l->eager_max = them.eager_max;
    // Credits go back to the peer in batches of half of what it holds
    // (our buffers), or sooner when this side idles (bip_progress.cpp).
    l->credit_every = std::max<uint32_t>(1, me.small_buffers / 2);
    g.links.push_back(l); // torn down with the rest on failure
    // Credits: the buffers the receiver keeps for us.  Receive slots: ours
    // for the peer's credited packets, one per credit it may return alone,
    // and the uncredited control packets (bip_internal.hpp).
    chan::Layout lay{};
    lay.credits = them.small_buffers;
    lay.nsend = them.small_buffers + kUncredited + kWriteSlots;
    lay.nrecv = 2 * me.small_buffers + kUncredited;
    lay.bufsize = bufsize;
    if (!chan::start_rank_link(cfg, l->ch, l->region, lay, "BI", addrs, g.rank, peer, side, why)) return nullptr;
    return l;
}

void teardown() {
    for (Link *l : g.links) {
        chan::close_peer_vi(l->ch, l->region);
        delete l;
    }
    g.links.clear();
    g.tx.clear();
    for (TagQueue &q : g.queues) q = TagQueue{};
    buffer_release(&g.send.reg);
    buffer_release(&g.recv.reg);
    if (g.nic) buffers_close();
    g.send = SendOp{};
    g.recv = RecvOp{};
    chan::close_reliable_nic(&g);
    g.init = false;
}

int init_fail(const std::string &what) {
    report("bip_init: %s", what.c_str());
    teardown();
    return BIP_ERR_RESOURCE;
}

} // namespace

uint32_t fragment_for(uint32_t len) {
    if (g.fragment_fixed) return std::min(g.fragment_fixed, g.fragment_max);
    for (const FragmentRow &r : kThresholds.fragments)
        if (len <= r.up_to) return std::clamp(r.fragment, g.fragment_min, g.fragment_max);
    return g.fragment_max;
}

} // namespace bip

using namespace bip;

extern "C" {

int bip_init(void) {
    if (g.init) return BIP_OK;
    std::string why;
    if (const chan::JoinJob j = chan::join_job(&g.wait, &g.rank, &g.size, &why); j != chan::JoinJob::ok) {
        if (j == chan::JoinJob::no_job) return init_fail(why);
        report("bip_init: %s", why.c_str());
        return BIP_ERR_RESOURCE;
    }
    g.small_buffers = uint32_t(env_int("VIASTACK_BIP_SMALL_BUFFERS", 8, 2, 256));
    g.eager_max = uint32_t(env_int("VIASTACK_BIP_EAGER", kThresholds.eager_max, 0, 65536 - 64));
    g.fragment_fixed = uint32_t(env_int("VIASTACK_BIP_FRAGMENT", 0, 0, 1 << 30));
    if (!chan::open_reliable_nic(viastack::env::raw("VIASTACK_BIP_NIC"), "VIASTACK_BIP_NIC", "BIP", &g, &why))
        return init_fail(why);
    buffers_open();
    const uint32_t nic_max =
        uint32_t(g.attr.MaxTransferSize ? std::min<VIP_ULONG>(g.attr.MaxTransferSize, 1u << 20) : 1u << 20);
    if (nic_max < g.eager_max + sizeof(Header))
        return init_fail("VIASTACK_BIP_EAGER exceeds the NIC's MaxTransferSize");
    g.fragment_max = nic_max;
    g.fragment_min = std::min<uint32_t>(4096, nic_max);
    VIP_RETURN rc = VipCreateCQ(g.nic, VIP_ULONG((g.size + 1) * (2 * g.small_buffers + kUncredited)), &g.rcq);
    if (rc != VIP_SUCCESS) return init_fail(std::string("VipCreateCQ: ") + VipxReturnString(rc));

    Announce me{};
    me.small_buffers = g.small_buffers;
    me.eager_max = g.eager_max;
    std::vector<Announce> all(g.size);
    std::vector<chan::NicAddress> addrs;
    if (!chan::exchange_addresses(g.attr, &me, sizeof me, &addrs, all.data(), &why)) return init_fail(why);
    // One buffer size for both directions of every link: the largest eager
    // message any rank takes, plus the header.
    uint32_t bufsize = 64;
    for (const Announce &a : all)
        bufsize = std::max<uint32_t>(bufsize, round64(a.eager_max + uint32_t(sizeof(Header))));
    uint32_t slots = 0;
    g.tx.assign(g.size, nullptr);
    const chan::PeerViConfig cfg = vi_config(bufsize);
    for (unsigned r = 0; r < g.size; r++) {
        Link *l = link_create(cfg, r, 0, me, all[r], addrs, bufsize, &why);
        if (!l) return init_fail(why);
        g.tx[r] = l;
        slots += l->ch.nrecv();
        if (r == g.rank) {
            Link *rx = link_create(cfg, r, 1, me, all[r], addrs, bufsize, &why);
            if (!rx) return init_fail(why);
            slots += rx->ch.nrecv();
        }
    }
    for (TagQueue &q : g.queues) q.ring.assign(slots, Queued{});
    if (!chan::finish_links(g.links, cfg.connect_timeout_ms, "rank", &why)) return init_fail(why);
    g.send = SendOp{};
    g.recv = RecvOp{};
    g.next_seq = 1;
    g.rdma_bytes = 0;
    g.finalizing = false;
    g.init = true;
    if (vipl_boot_barrier() != VIPL_BOOT_OK) return init_fail("barrier after connecting failed");
    return BIP_OK;
}

int bip_finalize(void) {
    if (!g.init) return BIP_OK;
    if (g.send.state != SendState::kIdle && g.send.state != SendState::kDone)
        return fail(BIP_ERR_STATE, "bip_finalize", "a send is pending (bip_swait it first)");
    if (g.recv.state != RecvState::kIdle && g.recv.state != RecvState::kDone)
        return fail(BIP_ERR_STATE, "bip_finalize", "a receive is pending (bip_rwait it first)");
    // Goodbye on every link we send on; each VI delivers in order, so once
    // every peer's goodbye is here nothing more will come to us.
    for (unsigned r = 0; r < g.size; r++) {
        Link *l = g.tx[r];
        while (!l->ch.has_free_send() && !l->dead) {
            reap_sends(l);
            if (!l->ch.has_free_send()) wait_step();
        }
        if (!l->dead) post_packet(l, l->ch.take_send(), kBye, 0, 0, 0, 0);
    }
    for (;;) {
        bool all = true;
        for (Link *l : g.links)
            if ((l->peer != g.rank || l->side == 1) && !l->bye && !l->dead) all = false;
        if (all) break;
        wait_step();
    }
    g.finalizing = true;
    for (Link *l : g.links)
        while (l->ch.in_flight() && !l->dead) {
            reap_sends(l);
            sched_yield();
        }
    int rc = vipl_boot_barrier() == VIPL_BOOT_OK ? BIP_OK : BIP_ERR_RESOURCE;
    teardown();
    return rc;
}

int bip_mynode(void) { return g.init ? int(g.rank) : -1; }
int bip_numnodes(void) { return g.init ? int(g.size) : 0; }

long bip_eager_max(int dest) {
    if (!g.init) return BIP_ERR_NOT_INIT;
    if (dest < 0 || unsigned(dest) >= g.size) return BIP_ERR_BAD_DEST;
    return long(g.tx[unsigned(dest)]->eager_max);
}

size_t bip_fragment_size(size_t len) {
    if (!g.init) return 0;
    return fragment_for(uint32_t(std::min<size_t>(len, BIP_MAX_MESSAGE)));
}

unsigned long long bip_rdma_bytes(void) { return g.rdma_bytes; }

const char *bip_error_name(int code) {
    switch (code) {
    case BIP_OK: return "BIP_OK";
    case BIP_ERR_NOT_INIT: return "BIP_ERR_NOT_INIT";
    case BIP_ERR_BAD_DEST: return "BIP_ERR_BAD_DEST";
    case BIP_ERR_BAD_TAG: return "BIP_ERR_BAD_TAG";
    case BIP_ERR_NULL_BUF: return "BIP_ERR_NULL_BUF";
    case BIP_ERR_TOO_LONG: return "BIP_ERR_TOO_LONG";
    case BIP_ERR_TRUNCATED: return "BIP_ERR_TRUNCATED";
    case BIP_ERR_PENDING: return "BIP_ERR_PENDING";
    case BIP_ERR_NO_PENDING: return "BIP_ERR_NO_PENDING";
    case BIP_ERR_RESOURCE: return "BIP_ERR_RESOURCE";
    case BIP_ERR_STATE: return "BIP_ERR_STATE";
    default: return code > 0 ? "BIP_OK" : "unknown BIP error";
    }
}

} // extern "C"
