// vi_setup.cpp - see vi_setup.hpp.
#include "vi_setup.hpp"

#include "job.hpp"
#include "timer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace thbench {
namespace {

constexpr VIP_ULONG kConnectMs = 20000;
// Slots one setup takes from a NIC, at most: every link's receives on each
// end this process holds, and the send and confirmation rings.
constexpr std::size_t kSlotsPerSetup = 2 * std::size_t(kMaxThreads) * (kRecvPerLink + 2 * kMaxWindow + kConfirmSlots);

// A NIC's host address, exchanged between the ranks.
struct HostAddr {
    VIP_UINT16 len = 0;
    VIP_UINT8 bytes[VIP_MAX_HOST_ADDRESS_LEN] = {};
};

HostAddr host_of(const Nic &nic) {
    HostAddr a;
    a.len = VIP_UINT16(std::min<unsigned>(nic.attrs.NicAddressLen, VIP_MAX_HOST_ADDRESS_LEN));
    std::memcpy(a.bytes, nic.attrs.LocalNicAddress, a.len);
    return a;
}

// A VIP_NET_ADDRESS: a host address and a discriminator.
class NetAddr {
public:
    NetAddr() = default;
    NetAddr(const HostAddr &host, const std::string &disc) {
        auto *a = get();
        a->HostAddressLen = host.len;
        a->DiscriminatorLen = VIP_UINT16(disc.size());
        std::memcpy(a->HostAddress, host.bytes, host.len);
        std::memcpy(a->HostAddress + host.len, disc.data(), disc.size());
    }
    VIP_NET_ADDRESS *get() { return reinterpret_cast<VIP_NET_ADDRESS *>(buf_); }

private:
    alignas(8) unsigned char buf_[VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN)] = {};
};

} // namespace

void check(VIP_RETURN rc, const char *what) {
    if (rc != VIP_SUCCESS) throw std::runtime_error(fmt::format("{} failed: {}", what, VipxReturnString(rc)));
}

void check_done(const VIP_DESCRIPTOR *d, const char *what) {
    if (d->CS.Status & VIP_STATUS_ERROR_MASK) {
        char buf[200];
        throw std::runtime_error(
            fmt::format("{} completed with an error: {}", what, VipxStatusString(d->CS.Status, buf, sizeof buf)));
    }
}

void Nic::open(const std::string &device, std::size_t slots) {
    check(VipOpenNic(device.empty() ? nullptr : device.c_str(), &h), "VipOpenNic");
    check(VipQueryNic(h, &attrs), "VipQueryNic");
    if (attrs.ThreadSafe != VIP_TRUE)
        throw std::runtime_error(
            fmt::format("the NIC {} is not thread safe (VipQueryNic: ThreadSafe false)", attrs.Name));
    if (attrs.MaxDescriptorsPerQueue < VIP_ULONG(kRecvPerLink + 2 * kMaxWindow))
        throw std::runtime_error(fmt::format("the NIC {} allows {} descriptors per queue, vi_thread_rate needs {}",
                                             attrs.Name, attrs.MaxDescriptorsPerQueue, kRecvPerLink + 2 * kMaxWindow));
    check(VipCreatePtag(h, &ptag), "VipCreatePtag");
    size = (slots * sizeof(Slot) + 4095) / 4096 * 4096;
    base = static_cast<char *>(std::aligned_alloc(4096, size));
    if (!base) throw std::runtime_error("out of memory for the registered region");
    std::memset(base, 0, size);
    VIP_MEM_ATTRIBUTES ma{ptag, VIP_FALSE, VIP_FALSE};
    check(VipRegisterMem(h, base, size, &ma, &mh), "VipRegisterMem");
    registered = true;
}

void Nic::close() {
    if (registered) VipDeregisterMem(h, base, mh);
    registered = false;
    std::free(base);
    base = nullptr;
    if (ptag) VipDestroyPtag(h, ptag);
    ptag = nullptr;
    if (h) VipCloseNic(h);
    h = nullptr;
}

Slot *Nic::slot() {
    if (used + sizeof(Slot) > size) throw std::logic_error("vi_thread_rate: a NIC's region is full (a sizing bug)");
    Slot *s = new (base + used) Slot;
    used += sizeof(Slot);
    return s;
}

void post_recv(const LinkEnd &end, Slot *s) {
    VIP_DESCRIPTOR *d = &s->desc;
    std::memset(&d->CS, 0, sizeof d->CS);
    d->CS.SegCount = 1;
    d->CS.Length = kBufBytes;
    d->DS[0].Local.Data.Address = s->buf;
    d->DS[0].Local.Handle = end.nic->mh;
    d->DS[0].Local.Length = kBufBytes;
    check(VipPostRecv(end.vi, d, end.nic->mh), "VipPostRecv");
}

void fill_send(const LinkEnd &end, Slot *s, const Msg &m) {
    std::memcpy(s->buf, &m, sizeof m);
    VIP_DESCRIPTOR *d = &s->desc;
    std::memset(&d->CS, 0, sizeof d->CS);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = 1;
    d->CS.Length = kMsgBytes;
    d->DS[0].Local.Data.Address = s->buf;
    d->DS[0].Local.Handle = end.nic->mh;
    d->DS[0].Local.Length = kMsgBytes;
}

Fabric::Fabric(const logp::Job &job, bool single, const std::string &device, const std::vector<SetupShape> &shapes)
    : single_(single), sends_(single || job.rank() == 0), receives_(single || job.rank() == 1), device_(device) {
    const bool two = std::any_of(shapes.begin(), shapes.end(), [](const SetupShape &s) { return s.two_nics; });
    try {
        open_nic(device, kSlotsPerSetup * shapes.size());
        if (two) open_nic(device, kSlotsPerSetup * shapes.size());
        setups_.resize(shapes.size());
        for (std::size_t i = 0; i < shapes.size(); ++i) {
            setups_[i].shape = shapes[i];
            if (shapes[i].alone) {
                if (sends_) setups_[i].alone_send = open_nic(device, kSlotsPerSetup);
                if (receives_) setups_[i].alone_recv = open_nic(device, kSlotsPerSetup);
            }
            build(setups_[i], job);
        }
    } catch (...) {
        release();
        throw;
    }
}

Nic *Fabric::open_nic(const std::string &device, std::size_t slots) {
    nics_.emplace_back();
    nics_.back().open(device, slots);
    return &nics_.back();
}

Nic *Fabric::nic_for(const Setup &s, int link, bool send_end) {
    if (s.shape.alone) return send_end ? s.alone_send : s.alone_recv;
    return &nics_[s.shape.two_nics ? std::size_t(link) : 0];
}

Fabric::~Fabric() { release(); }

void Fabric::release() {
    for (Setup &s : setups_) {
        for (auto *ends : {&s.send_end, &s.recv_end})
            for (LinkEnd &e : *ends) {
                if (!e.vi) continue;
                if (e.connected) VipDisconnect(e.vi);
                VIP_DESCRIPTOR *d = nullptr;
                while (VipRecvDone(e.vi, &d) == VIP_SUCCESS) {} // the flushed receives
                while (VipSendDone(e.vi, &d) == VIP_SUCCESS) {}
                VipDestroyVi(e.vi);
                e.vi = nullptr;
            }
        if (s.recv_cq) VipDestroyCQ(s.recv_cq);
        s.recv_cq = nullptr;
    }
    setups_.clear();
    for (Nic &n : nics_) n.close();
    nics_.clear();
}

Setup &Fabric::setup(const std::string &name) {
    for (Setup &s : setups_)
        if (s.shape.name == name) return s;
    throw std::logic_error("vi_thread_rate: no setup " + name);
}

void Fabric::build(Setup &s, const logp::Job &job) {
    const int links = s.shape.links;
    VIP_VI_ATTRIBUTES va{};
    va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    va.MaxTransferSize = kBufBytes;
    s.send_end.resize(std::size_t(links));
    s.recv_end.resize(std::size_t(links));
    if (receives_ && s.shape.shared_cq)
        check(VipCreateCQ(nic_for(s, 0, false)->h, VIP_ULONG(links * kRecvPerLink), &s.recv_cq), "VipCreateCQ");
    for (int l = 0; l < links; ++l) {
        for (const bool send : {true, false}) {
            if (send ? !sends_ : !receives_) continue;
            LinkEnd &e = (send ? s.send_end : s.recv_end)[std::size_t(l)];
            e.nic = nic_for(s, l, send);
            va.Ptag = e.nic->ptag;
            check(VipCreateVi(e.nic->h, &va, nullptr, send ? nullptr : s.recv_cq, &e.vi), "VipCreateVi");
            for (int i = 0; i < kRecvPerLink; ++i) post_recv(e, e.nic->slot());
        }
    }
    for (int t = 0; t < kMaxThreads; ++t) {
        const int l = std::min(t, links - 1);
        if (sends_) {
            s.send_ring.emplace_back();
            for (int i = 0; i < 2 * kMaxWindow; ++i) s.send_ring.back().push_back(nic_for(s, l, true)->slot());
        }
        if (receives_) {
            s.confirm_ring.emplace_back();
            for (int i = 0; i < kConfirmSlots; ++i) s.confirm_ring.back().push_back(nic_for(s, l, false)->slot());
        }
    }
    for (int l = 0; l < links; ++l) connect(s, l, job);
}

// The sending end requests, the receiving end accepts, under a discriminator
// naming the setup and the link.  In one process the request is started
// without waiting (VipxConnectRequestStart), accepted, then collected.
void Fabric::connect(Setup &s, int link, const logp::Job &job) {
    const std::string disc = fmt::format("thr-{}-{}", s.shape.name, link);
    LinkEnd *snd = sends_ ? &s.send_end[std::size_t(link)] : nullptr;
    LinkEnd *rcv = receives_ ? &s.recv_end[std::size_t(link)] : nullptr;
    HostAddr server{};
    if (rcv) server = host_of(*rcv->nic);
    if (!single_) job.bcast(&server, sizeof server, 1);
    NetAddr server_addr(server, disc), peer;
    VIP_VI_ATTRIBUTES ra{};
    if (snd) {
        NetAddr local(host_of(*snd->nic), disc);
        if (single_)
            check(VipxConnectRequestStart(snd->vi, local.get(), server_addr.get(), kConnectMs, nullptr, 0),
                  "VipxConnectRequestStart");
        else check(VipConnectRequest(snd->vi, local.get(), server_addr.get(), kConnectMs, &ra), "VipConnectRequest");
    }
    if (rcv) {
        VIP_CONN_HANDLE conn = nullptr;
        check(VipConnectWait(rcv->nic->h, server_addr.get(), kConnectMs, peer.get(), &ra, &conn), "VipConnectWait");
        check(VipConnectAccept(conn, rcv->vi), "VipConnectAccept");
        rcv->connected = true;
    }
    if (snd && single_) {
        const std::uint64_t t0 = logp::ticks();
        VIP_RETURN rc;
        while ((rc = VipxConnectRequestDone(snd->vi, &ra, nullptr, nullptr)) == VIP_NOT_DONE)
            if (logp::ticks_to_ns(logp::ticks() - t0) > kConnectMs * 1e6) break;
        check(rc, "VipxConnectRequestDone");
    }
    if (snd) snd->connected = true;
    job.barrier(); // both ends connected before the next link starts
}

} // namespace thbench
