// bip_memory.cpp - the registrations of long messages' buffers: the
// sender's (the gather side of its RDMA writes) and the receiver's (the
// RDMA-write target named in kCts).
//
// Where registering does not pin pages (VipxRegistrationPins false: the
// registration names an address range that cannot go stale), both are kept
// in the channel library's registration caches, so a buffer sent from or
// received into again costs a table scan instead of VipRegisterMem and
// VipDeregisterMem (which waits for every NIC's transfers in progress).
// Where it pins, a cache could name pages the program has since unmapped
// (a receive would land in them and be lost), so every long message
// registers and deregisters its buffers as before.
#include "bip_internal.hpp"

namespace bip {

void buffers_open() {
    g.cache_regs = !chan::registration_pins(g.nic);
    g.src_regs.init(g.nic, g.ptag);
    g.dst_regs.init(g.nic, g.ptag, /*rdma_write=*/true);
}

void buffers_close() {
    g.memory.free_all(g.nic, &g.src_regs, &g.dst_regs);
    g.src_regs.clear();
    g.dst_regs.clear();
}

bool buffer_register(Registration *r, const void *buf, uint32_t len, bool rdma_write) {
    *r = Registration{};
    r->base = const_cast<void *>(buf);
    if (g.cache_regs) {
        chan::RegCache &c = rdma_write ? g.dst_regs : g.src_regs;
        // One send and one receive pending per process: at most one entry of
        // each cache is pinned, so acquire never has to wait.
        r->entry = c.acquire(buf, len, &r->mh, [] { progress(); });
        if (r->entry == chan::RegCache::kNone) return false;
        r->cached = true;
        r->rdma_write = rdma_write;
        r->held = true;
        return true;
    }
    VIP_MEM_ATTRIBUTES ma{};
    ma.Ptag = g.ptag;
    ma.EnableRdmaWrite = rdma_write ? VIP_TRUE : VIP_FALSE;
    ma.EnableRdmaRead = VIP_FALSE;
    if (VipRegisterMem(g.nic, r->base, len, &ma, &r->mh) != VIP_SUCCESS) return false;
    r->held = true;
    return true;
}

void buffer_release(Registration *r) {
    if (!r->held) return;
    if (r->cached) (r->rdma_write ? g.dst_regs : g.src_regs).release(r->entry);
    else VipDeregisterMem(g.nic, r->base, r->mh);
    *r = Registration{};
}

} // namespace bip

using namespace bip;

extern "C" {

void *bip_alloc_mem(size_t bytes) {
    if (!g.init) {
        fail(BIP_ERR_NOT_INIT, "bip_alloc_mem", "call bip_init first");
        return nullptr;
    }
    if (bytes == 0) return nullptr;
    void *p = g.memory.alloc(g.nic, bytes);
    if (!p) fail(BIP_ERR_RESOURCE, "bip_alloc_mem", "the NIC has no memory left for %zu bytes", bytes);
    return p;
}

int bip_free_mem(void *addr) {
    if (!g.init) return fail(BIP_ERR_NOT_INIT, "bip_free_mem", "call bip_init first");
    if (!g.memory.free(g.nic, addr, &g.src_regs, &g.dst_regs))
        return fail(BIP_ERR_NULL_BUF, "bip_free_mem", "%p is not memory from bip_alloc_mem", addr);
    return BIP_OK;
}

} // extern "C"
