// channel.cpp - set-up of a channel's registered slots (channel.hpp): the
// region, the slot layout, pre-posting.  Nothing here runs per message.
#include "viastack/channel.hpp"

#include <cstdlib>
#include <cstring>

namespace viastack::channel {

namespace {
constexpr size_t round64(size_t n) { return (n + 63) & ~size_t(63); }
} // namespace

bool Region::allocate(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, size_t bytes, std::string *why) {
    size_t len = (bytes + 4095) & ~size_t(4095);
    auto *p = static_cast<uint8_t *>(std::aligned_alloc(4096, len));
    if (!p) {
        if (why) *why = "cannot allocate " + std::to_string(len) + " bytes of message slots";
        return false;
    }
    std::memset(p, 0, len);
    VIP_MEM_ATTRIBUTES ma{};
    ma.Ptag = ptag;
    ma.EnableRdmaWrite = VIP_FALSE;
    ma.EnableRdmaRead = VIP_FALSE;
    VIP_MEM_HANDLE mh = 0;
    VIP_RETURN rc = VipRegisterMem(nic, p, VIP_ULONG(len), &ma, &mh);
    if (rc != VIP_SUCCESS) {
        if (why) *why = "VipRegisterMem(" + std::to_string(len) + " bytes of message slots): " + VipxReturnString(rc);
        std::free(p);
        return false;
    }
    nic_ = nic;
    base_ = p;
    len_ = len;
    mh_ = mh;
    return true;
}

void Region::release(bool keep) {
    if (!base_) return;
    if (!keep) {
        VipDeregisterMem(nic_, base_, mh_);
        std::free(base_);
    }
    *this = Region{};
}

// [slots: nsend + nrecv Slot][free-send stack: nsend Slot*][buffers: stride each]
size_t Channel::region_bytes(const Layout &l) {
    size_t nslots = size_t(l.nsend) + l.nrecv;
    return nslots * sizeof(Slot) + round64(l.nsend * sizeof(Slot *)) + nslots * round64(l.bufsize);
}

void Channel::attach(const Layout &l, uint8_t *mem, VIP_MEM_HANDLE mh) {
    *this = Channel{};
    layout_ = l;
    mh_ = mh;
    credits_ = int(l.credits);
    size_t nslots = size_t(l.nsend) + l.nrecv;
    slots_ = reinterpret_cast<Slot *>(mem);
    free_send_ = reinterpret_cast<Slot **>(mem + nslots * sizeof(Slot));
    uint8_t *bufs = mem + nslots * sizeof(Slot) + round64(l.nsend * sizeof(Slot *));
    const size_t stride = round64(l.bufsize);
    for (size_t i = 0; i < nslots; i++) {
        Slot *s = &slots_[i];
        std::memset(static_cast<void *>(s), 0, sizeof *s);
        s->ch = this;
        s->buf = bufs + i * stride;
        s->pin = -1;
        s->desc.CS.SegCount = 1;
        s->desc.CS.Length = l.bufsize;
        s->desc.DS[0].Local.Data.Address = s->buf;
        s->desc.DS[0].Local.Handle = mh;
        s->desc.DS[0].Local.Length = l.bufsize;
    }
    // Popped from the top: slot 0 goes out first.
    for (uint32_t i = 0; i < l.nsend; i++) free_send_[i] = &slots_[l.nsend - 1 - i];
    nfree_send_ = l.nsend;
}

VIP_RETURN Channel::prepost(VIP_VI_HANDLE vi) {
    vi_ = vi;
    for (uint32_t i = 0; i < layout_.nrecv; i++) {
        VIP_RETURN rc = VipPostRecv(vi, &recv_slot(i)->desc, mh_);
        if (rc != VIP_SUCCESS) return rc;
    }
    return VIP_SUCCESS;
}

} // namespace viastack::channel
