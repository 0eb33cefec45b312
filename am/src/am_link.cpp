// am_link.cpp - MAP objects: the translation table (AM_Map and friends) and
// the links behind it - VIs, registered slot regions, pre-posted receives,
// peer-to-peer connection by discriminator, and tear-down.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "am_internal.hpp"
#include "viastack/peer_vi.hpp"

namespace amvia {

bool en_equal(const en_t &a, const en_t &b) {
    return a.id == b.id && a.addr_len == b.addr_len && !std::memcmp(a.addr, b.addr, a.addr_len);
}

// Discriminator naming the VI of channel `chan` on the link from endpoint x to
// endpoint y (side distinguishes the two halves of a self-map).  Both ends
// compute each other's, so peer-to-peer requests match.
static size_t discriminator(uint8_t *out, const en_t &x, const en_t &y, uint8_t side, uint8_t chan) {
    size_t n = 0;
    std::memcpy(out + n, x.addr, x.addr_len);
    n += x.addr_len;
    std::memcpy(out + n, &x.id, 4);
    n += 4;
    std::memcpy(out + n, y.addr, y.addr_len);
    n += y.addr_len;
    std::memcpy(out + n, &y.id, 4);
    n += 4;
    out[n++] = side;
    out[n++] = chan;
    return n;
}

// Grows both bundle CQs so every descriptor bound to them fits.
static bool reserve_cq(eb_t eb, size_t nsend, size_t nrecv) {
    size_t need = std::max(eb->send_descs + nsend, eb->recv_descs + nrecv);
    if (need > eb->cq_entries) {
        size_t n = eb->cq_entries;
        while (n < need) n *= 2;
        if (g.attr.MaxCQEntries && n > g.attr.MaxCQEntries) n = g.attr.MaxCQEntries;
        if (n < need) {
            report("AM_Map: the bundle's completion queues would need %zu entries; the NIC allows "
                   "%lu (fewer peers or credits per bundle)",
                   need, (unsigned long)g.attr.MaxCQEntries);
            return false;
        }
        VIP_RETURN rc = VipResizeCQ(eb->scq, n);
        if (rc == VIP_SUCCESS) rc = VipResizeCQ(eb->rcq, n);
        if (rc != VIP_SUCCESS) {
            report("AM_Map: VipResizeCQ(%zu): %s", n, VipxReturnString(rc));
            return false;
        }
        eb->cq_entries = n;
    }
    eb->send_descs += nsend;
    eb->recv_descs += nrecv;
    pending_reserve(eb, eb->recv_descs); // ring of queued requests (see am_poll.cpp)
    return true;
}

static void channel_free_memory(Channel *c) {
    c->region.release();
    c->detach();
}

// The set-up every channel of the bundle shares (viastack/peer_vi.hpp):
// sends and receives complete on the bundle's CQs; RDMA write for long
// messages, no RDMA read.
static chan::PeerViConfig vi_config(eb_t eb, uint32_t bufsize) {
    chan::PeerViConfig cfg;
    cfg.nic = g.nic;
    cfg.attr = &g.attr;
    cfg.ptag = g.ptag;
    cfg.send_cq = eb->scq;
    cfg.recv_cq = eb->rcq;
    cfg.max_transfer = std::max<VIP_ULONG>(bufsize, g.max_chunk);
    cfg.connect_timeout_ms = VIP_ULONG(g.connect_timeout_ms);
    return cfg;
}

// A channel of k credits: 2k send slots (k requests + k replies in flight) and
// 2k + 1 receives (chan::layout_for), registered, then its VI with every
// receive posted, and its connection started.
static bool channel_setup(Link *l, Channel *c, int idx, int credits, uint32_t bufsize) {
    eb_t eb = l->ep->eb;
    const chan::Layout lay = chan::layout_for(uint32_t(credits), bufsize);
    std::string why;
    if (!c->region.allocate(g.nic, g.ptag, chan::Channel::region_bytes(lay), &why)) {
        report("AM_Map: %s", why.c_str());
        return false;
    }
    c->attach(lay, c->region.base(), c->region.handle());
    c->link = l;
    c->eb = eb;
    c->index = idx;
    if (!reserve_cq(eb, lay.nsend, lay.nrecv)) {
        channel_free_memory(c);
        return false;
    }
    const en_t &me = l->ep->name;
    const en_t &peer = l->remote;
    const uint8_t rside = en_equal(me, peer) ? uint8_t(1 - l->side) : l->side;
    uint8_t ldisc[VIP_MAX_DISCRIMINATOR_LEN], rdisc[VIP_MAX_DISCRIMINATOR_LEN];
    const chan::PeerEnd local{me.addr, me.addr_len, ldisc,
                              uint16_t(discriminator(ldisc, me, peer, l->side, uint8_t(idx)))};
    const chan::PeerEnd remote{peer.addr, peer.addr_len, rdisc,
                               uint16_t(discriminator(rdisc, peer, me, rside, uint8_t(idx)))};
    chan::SetupError err;
    if (chan::start_peer_vi(vi_config(eb, bufsize), *c, local, remote, &err)) return true;
    report("AM_Map: %s", err.str().c_str());
    if (!c->vi()) {
        // Nothing bound to the bundle's CQs: give the reservation back.
        eb->send_descs -= lay.nsend;
        eb->recv_descs -= lay.nrecv;
        channel_free_memory(c);
    }
    return false; // the caller destroys the link
}

static Link *link_create(ep_t ep, const en_t &remote, uint8_t side) {
    eb_t eb = ep->eb;
    auto *l = new Link();
    l->ep = ep;
    l->remote = remote;
    l->side = side;
    int k = ep->credits_k;
    bool ok = true;
    if (eb->layout == 1) {
        // AMVIAv1: a VI per message class, more credits for the small class.
        l->nch = 3;
        ok = channel_setup(l, &l->ch[kShort], kShort, std::min(2 * k, AMVIA_MAX_CREDITS), kShortBuf) &&
            channel_setup(l, &l->ch[kMedium], kMedium, k, kMediumBuf) &&
            channel_setup(l, &l->ch[kLong], kLong, k, kShortBuf);
    } else {
        l->nch = 1;
        ok = channel_setup(l, &l->ch[0], 0, k, kMediumBuf);
    }
    ep->links.push_back(l); // so link_destroy can find it either way
    if (!ok) {
        ep->links.pop_back();
        link_destroy(l);
        return nullptr;
    }
    l->connect_deadline_ns = chan::connect_deadline(VIP_ULONG(g.connect_timeout_ms));
    eb->connecting.push_back(l);
    return l;
}

Link *link_find_or_create(ep_t ep, const en_t &remote, int *rc) {
    for (Link *l : ep->links)
        if (l->side == 0 && en_equal(l->remote, remote)) return l;
    Link *l = link_create(ep, remote, 0);
    if (l && en_equal(remote, ep->name)) {
        // Self-map: a second link is the other end of the loopback connection.
        if (!link_create(ep, remote, 1)) {
            ep->links.erase(std::find(ep->links.begin(), ep->links.end(), l));
            link_destroy(l);
            l = nullptr;
        }
    }
    *rc = l ? AM_OK : AM_ERR_RESOURCE;
    return l;
}

static void drop_connecting(Link *l) {
    auto &v = l->ep->eb->connecting;
    auto it = std::find(v.begin(), v.end(), l);
    if (it != v.end()) v.erase(it);
}

void link_fail(Link *l, const char *why) {
    if (l->state == LinkState::Dead) return;
    l->state = LinkState::Dead;
    drop_connecting(l);
    // A peer that said goodbye (kSysBye) flushes our receives as it goes: a
    // clean exit, not an error.
    if (AMVIA_VerboseErrors && !l->peer_closing) report("MAP to endpoint %u is unusable: %s", l->remote.id, why);
}

bool link_try_up(Link *l) {
    if (l->state != LinkState::Pending) return l->state == LinkState::Up;
    for (int i = 0; i < l->nch; i++) {
        Channel *c = &l->ch[i];
        if (c->connected) continue;
        VIP_RETURN rc = chan::poll_peer_vi(*c, l->connect_deadline_ns);
        if (rc == VIP_NOT_DONE) return false;
        if (rc == VIP_TIMEOUT) {
            link_fail(l, "connection timed out (does the peer AM_Map this endpoint?)");
            return false;
        }
        if (rc != VIP_SUCCESS) {
            link_fail(l, VipxReturnString(rc));
            return false;
        }
        c->connected = true;
    }
    l->state = LinkState::Up;
    drop_connecting(l);
    // Tell the peer where our segment is before any message of ours can need it.
    ep_t ep = l->ep;
    SegInfo si = current_seg(ep);
    send_system_request(ep, l, kSysSegInfo, nullptr, 0, &si, sizeof si);
    return true;
}

void bundle_check_connecting(eb_t eb) {
    // Copy: link_try_up edits the list.
    Link *batch[16];
    size_t n = std::min<size_t>(eb->connecting.size(), 16);
    for (size_t i = 0; i < n; i++) batch[i] = eb->connecting[i];
    for (size_t i = 0; i < n; i++) link_try_up(batch[i]);
}

bool bounce_allocate(Link *l, uint32_t ring) {
    size_t len = size_t(2) * ring * kBounceSlot;
    // VipxAllocMem: a medium reply sent from a request's slot here is the
    // source of an RDMA write, which the NIC then moves with one memcpy.
    void *mem = nullptr;
    if (VIP_RETURN rc = VipxAllocMem(g.nic, VIP_ULONG(len), &mem); rc != VIP_SUCCESS) {
        report("a peer's medium messages above %u bytes need a %zu-byte bounce ring: "
               "VipxAllocMem: %s",
               kInlineMedium, len, VipxReturnString(rc));
        return false;
    }
    auto *p = static_cast<uint8_t *>(mem);
    VIP_MEM_ATTRIBUTES ma{g.ptag, VIP_TRUE, VIP_FALSE}; // the peer RDMA-writes here
    VIP_MEM_HANDLE mh;
    VIP_RETURN rc = VipRegisterMem(g.nic, p, len, &ma, &mh);
    if (rc != VIP_SUCCESS) {
        report("a peer's medium messages above %u bytes need a %zu-byte bounce ring: "
               "VipRegisterMem: %s",
               kInlineMedium, len, VipxReturnString(rc));
        VipxFreeMem(g.nic, p);
        return false;
    }
    l->bounce = p;
    l->bounce_len = len;
    l->bounce_mh = mh;
    l->bounce_ring = ring;
    return true;
}

void bounce_free(Link *l) {
    if (!l->bounce) return;
    regcache_forget(l->bounce, l->bounce_len);
    VipDeregisterMem(g.nic, l->bounce, l->bounce_mh);
    VipxFreeMem(g.nic, l->bounce);
    l->bounce = nullptr;
    l->bounce_ring = 0;
}

// Sends kSysBye on each of ep's connected MAPs that has not had one.  A
// goodbye takes a credit like any request; wait for one until deadline (the
// peer may be busy), and give up rather than hang: the cost of a missed
// goodbye is one verbose-mode line at the peer.
static void send_goodbyes(ep_t ep, uint64_t deadline) {
    eb_t eb = ep->eb;
    for (Link *l : ep->links) {
        if (l->bye_sent) continue;
        Channel *c = &l->ch[0];
        while (l->state == LinkState::Up && (!c->has_credit() || !c->has_free_send()) &&
               vipl_wait::clock_ns() < deadline)
            poll_bundle(eb, ts.handler_depth == 0);
        if (l->state == LinkState::Up && c->has_credit() && c->has_free_send()) {
            send_system_request(ep, l, kSysBye, nullptr, 0, nullptr, 0);
            l->bye_sent = true;
        }
    }
}

void say_goodbye(eb_t eb) {
    uint64_t deadline = vipl_wait::clock_ns() + 200000000ull;
    for (ep_t ep : eb->eps) send_goodbyes(ep, deadline);
    // Reliable delivery: a completed send has reached the peer's receive queue.
    while (eb->sends_outstanding > 0 && vipl_wait::clock_ns() < deadline) reap_sends(eb, 64);
}

static bool sends_in_flight(ep_t ep) {
    for (Link *l : ep->links)
        if (l->state != LinkState::Dead)
            for (int i = 0; i < l->nch; i++)
                if (l->ch[i].vi() && l->ch[i].in_flight()) return true;
    return false;
}

void say_goodbye(ep_t ep) {
    // AM_FreeEndpoint: the requests the program sent before freeing (each
    // returned AM_OK) must reach the peer, so wait until the NIC completed
    // this endpoint's sends, the goodbye last, before its VIs are
    // disconnected (a disconnect flushes sends the NIC has not processed:
    // in thread firmware mode that lost the last messages).
    uint64_t deadline = vipl_wait::clock_ns() + 200000000ull;
    send_goodbyes(ep, deadline);
    while (sends_in_flight(ep) && vipl_wait::clock_ns() < deadline)
        if (reap_sends(ep->eb, 64) == 0) poll_bundle(ep->eb, false);
}

void link_destroy(Link *l) {
    eb_t eb = l->ep->eb;
    drop_connecting(l);
    // Forget queued requests that live in this link's receive slots.
    for (size_t i = 0; i < eb->pending_count; i++) {
        Slot *&s = eb->pending[(eb->pending_head + i) % eb->pending.size()];
        if (s && channel_of(s)->link == l) s = nullptr;
    }
    for (int i = 0; i < l->nch; i++) {
        Channel *c = &l->ch[i];
        if (c->vi()) {
            if (eb->stash_vi == c->vi()) eb->stash_vi = nullptr;
            VIP_RETURN rc = chan::close_vi(*c, [](Slot *s) {
                if (s->pin >= 0) regcache_release(s->pin);
                s->pin = -1;
            });
            eb->sends_outstanding -= long(c->in_flight());
            eb->send_descs -= c->nsend();
            eb->recv_descs -= c->nrecv();
            if (rc != VIP_SUCCESS) {
                // The NIC may still own descriptors in the region: leak it
                // rather than let the NIC touch freed memory.
                report("VipDestroyVi failed (%s); keeping the MAP's %zu-byte region", VipxReturnString(rc),
                       c->region.size());
                c->region.release(true);
                c->detach();
                continue;
            }
        }
        channel_free_memory(c);
    }
    bounce_free(l); // its VI is gone: nothing writes into it any more
    if (eb->sends_outstanding < 0) eb->sends_outstanding = 0;
    delete l;
}

} // namespace amvia

using namespace amvia;

#define CHECK_INIT(fn)                                                                                                 \
    if (AMVIA_UNLIKELY(g.init_count == 0)) return fail(AM_ERR_NOT_INIT, fn, "call AM_Init first")

extern "C" {

int AM_Map(ep_t ep, int index, en_t name, tag_t tag) {
    CHECK_INIT("AM_Map");
    if (!valid_ep(ep)) return fail(AM_ERR_BAD_ARG, "AM_Map", "not an endpoint");
    BundleGuard hold(ep->eb);
    if (index < 0 || size_t(index) >= ep->xlate.size())
        return fail(AM_ERR_BAD_ARG, "AM_Map", "index %d outside [0, %zu)", index, ep->xlate.size());
    if (name.addr_len > AMVIA_MAX_NICADDR) return fail(AM_ERR_BAD_ARG, "AM_Map", "malformed endpoint name");
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, "AM_Map", "called from a handler");
    Translation &t = ep->xlate[size_t(index)];
    if (t.inuse) return fail(AM_ERR_RESOURCE, "AM_Map", "index %d is already mapped", index);
    int rc;
    Link *l = link_find_or_create(ep, name, &rc);
    if (!l) return fail(rc, "AM_Map", "could not create the MAP for index %d", index);
    t.link = l;
    t.tag = tag;
    t.name = name;
    t.inuse = true;
    return AM_OK;
}

int AM_MapAny(ep_t ep, int *index, en_t name, tag_t tag) {
    CHECK_INIT("AM_MapAny");
    if (!valid_ep(ep) || !index) return fail(AM_ERR_BAD_ARG, "AM_MapAny", "bad argument");
    BundleGuard hold(ep->eb); // the free index found stays free until AM_Map takes it
    for (size_t i = 0; i < ep->xlate.size(); i++)
        if (!ep->xlate[i].inuse) {
            int rc = AM_Map(ep, int(i), name, tag);
            if (rc == AM_OK) *index = int(i);
            return rc;
        }
    return fail(AM_ERR_RESOURCE, "AM_MapAny", "all %zu translations are in use", ep->xlate.size());
}

int AM_UnMap(ep_t ep, int index) {
    CHECK_INIT("AM_UnMap");
    if (!valid_ep(ep) || index < 0 || size_t(index) >= ep->xlate.size())
        return fail(AM_ERR_BAD_ARG, "AM_UnMap", "bad endpoint or index %d", index);
    BundleGuard hold(ep->eb);
    Translation &t = ep->xlate[size_t(index)];
    if (!t.inuse) return fail(AM_ERR_RESOURCE, "AM_UnMap", "index %d is not mapped", index);
    // The link stays: the peer may still be sending on it, and a later AM_Map
    // of the same endpoint reuses it.
    t = Translation{};
    return AM_OK;
}

int AM_GetTranslationInuse(ep_t ep, int index) {
    CHECK_INIT("AM_GetTranslationInuse");
    if (!valid_ep(ep) || index < 0 || size_t(index) >= ep->xlate.size())
        return fail(AM_ERR_BAD_ARG, "AM_GetTranslationInuse", "bad endpoint or index %d", index);
    return ep->xlate[size_t(index)].inuse ? AM_OK : AM_ERR_RESOURCE;
}

int AM_GetTranslationTag(ep_t ep, int index, tag_t *tag) {
    CHECK_INIT("AM_GetTranslationTag");
    if (!valid_ep(ep) || !tag || index < 0 || size_t(index) >= ep->xlate.size())
        return fail(AM_ERR_BAD_ARG, "AM_GetTranslationTag", "bad argument");
    if (!ep->xlate[size_t(index)].inuse)
        return fail(AM_ERR_RESOURCE, "AM_GetTranslationTag", "index %d is not mapped", index);
    *tag = ep->xlate[size_t(index)].tag;
    return AM_OK;
}

int AM_GetTranslationName(ep_t ep, int index, en_t *name) {
    CHECK_INIT("AM_GetTranslationName");
    if (!valid_ep(ep) || !name || index < 0 || size_t(index) >= ep->xlate.size())
        return fail(AM_ERR_BAD_ARG, "AM_GetTranslationName", "bad argument");
    if (!ep->xlate[size_t(index)].inuse)
        return fail(AM_ERR_RESOURCE, "AM_GetTranslationName", "index %d is not mapped", index);
    *name = ep->xlate[size_t(index)].name;
    return AM_OK;
}

int AM_GetNumTranslations(ep_t ep, int *ntrans) {
    CHECK_INIT("AM_GetNumTranslations");
    if (!valid_ep(ep) || !ntrans) return fail(AM_ERR_BAD_ARG, "AM_GetNumTranslations", "bad argument");
    *ntrans = int(ep->xlate.size());
    return AM_OK;
}

int AM_SetNumTranslations(ep_t ep, int ntrans) {
    CHECK_INIT("AM_SetNumTranslations");
    if (!valid_ep(ep) || ntrans < 1 || ntrans > AMVIA_MAX_TRANSLATIONS_LIMIT)
        return fail(AM_ERR_BAD_ARG, "AM_SetNumTranslations", "ntrans %d outside [1, %d]", ntrans,
                    AMVIA_MAX_TRANSLATIONS_LIMIT);
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, "AM_SetNumTranslations", "called from a handler");
    BundleGuard hold(ep->eb);
    for (size_t i = size_t(ntrans); i < ep->xlate.size(); i++)
        if (ep->xlate[i].inuse)
            return fail(AM_ERR_RESOURCE, "AM_SetNumTranslations", "index %zu is mapped; unmap it before shrinking", i);
    ep->xlate.resize(size_t(ntrans));
    return AM_OK;
}

} // extern "C"
