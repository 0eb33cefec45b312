// peer_vi.cpp - a layer's VI to a peer (peer_vi.hpp).
#include "viastack/peer_vi.hpp"

#include <sched.h>

#include <cstdlib>
#include <cstring>

#include "vipl_boot.h"
#include "vipl_wait.h"

namespace viastack::channel {

JoinJob join_job(vipl_wait::WaitState *wait, unsigned *rank, unsigned *size, std::string *why) {
    vipl_wait::Mode mode;
    if (!vipl_wait::mode_from_env(&mode)) {
        *why = std::string("VIASTACK_WAIT=") + std::getenv("VIASTACK_WAIT") + " is not a wait policy; set it to " +
            vipl_wait::kAllowed;
        return JoinJob::bad_wait_policy;
    }
    if (vipl_boot_lookup() != VIPL_BOOT_OK) {
        *why = "vipl_boot_init failed; start the program with vipl-run -n N";
        return JoinJob::no_job;
    }
    *rank = unsigned(vipl_boot_rank());
    *size = unsigned(vipl_boot_size());
    vipl_wait::init(*wait, mode, int(*size));
    return JoinJob::ok;
}

namespace {

// One end's VIP_NET_ADDRESS: host address, then discriminator.
struct NetAddress {
    alignas(8) uint8_t buf[VIP_NET_ADDRESS_SIZE(kMaxNicAddress, VIP_MAX_DISCRIMINATOR_LEN)];
    VIP_NET_ADDRESS *get() { return reinterpret_cast<VIP_NET_ADDRESS *>(buf); }
    explicit NetAddress(const PeerEnd &e) {
        VIP_NET_ADDRESS *a = get();
        a->HostAddressLen = e.addr_len;
        a->DiscriminatorLen = e.disc_len;
        if (e.addr_len) std::memcpy(a->HostAddress, e.addr, e.addr_len);
        if (e.disc_len) std::memcpy(a->HostAddress + e.addr_len, e.disc, e.disc_len);
    }
};

// The NIC's limits on what a connection request carries.
bool within_limits(const PeerViConfig &c, const PeerEnd &local, const PeerEnd &remote, SetupError *err) {
    if (local.addr_len > kMaxNicAddress || remote.addr_len > kMaxNicAddress) {
        err->limit = "NIC address longer than " + std::to_string(kMaxNicAddress) + " bytes";
        return false;
    }
    const unsigned nic_max = c.attr && c.attr->MaxDiscriminatorLen ? unsigned(c.attr->MaxDiscriminatorLen)
                                                                   : unsigned(VIP_MAX_DISCRIMINATOR_LEN);
    const unsigned max = nic_max < VIP_MAX_DISCRIMINATOR_LEN ? nic_max : VIP_MAX_DISCRIMINATOR_LEN;
    const unsigned len = local.disc_len > remote.disc_len ? local.disc_len : remote.disc_len;
    if (len > max) {
        err->limit = "discriminator of " + std::to_string(len) + " bytes exceeds the NIC's " + std::to_string(max);
        return false;
    }
    return true;
}

constexpr uint16_t kRankDiscriminatorLen = 11;

// tag, the two ranks and the side.
uint16_t rank_discriminator(uint8_t *out, const char tag[2], unsigned from, unsigned to, uint8_t side) {
    out[0] = uint8_t(tag[0]);
    out[1] = uint8_t(tag[1]);
    std::memcpy(out + 2, &from, 4);
    std::memcpy(out + 6, &to, 4);
    out[10] = side;
    return kRankDiscriminatorLen;
}

} // namespace

bool open_reliable_nic(const char *device, const char *device_env, const char *layer, LayerNic *n, std::string *why) {
    VIP_NIC_HANDLE opened = nullptr;
    VIP_RETURN rc = VipOpenNic(device, &opened);
    if (rc != VIP_SUCCESS) {
        *why = std::string("VipOpenNic: ") + VipxReturnString(rc) + " (check $VIPL_PROVIDER / $" + device_env + ")";
        return false;
    }
    n->nic = opened;
    rc = VipQueryNic(opened, &n->attr);
    if (rc == VIP_SUCCESS) rc = VipCreatePtag(opened, &n->ptag);
    if (rc != VIP_SUCCESS) {
        *why = std::string("NIC set-up: ") + VipxReturnString(rc);
        return false;
    }
    if (!(n->attr.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY)) {
        *why = std::string("the NIC lacks Reliable Delivery, which ") + layer + "'s guarantees rest on";
        return false;
    }
    return true;
}

void close_reliable_nic(LayerNic *n) {
    if (n->rcq) VipDestroyCQ(n->rcq);
    if (n->ptag) VipDestroyPtag(n->nic, n->ptag);
    if (n->nic) VipCloseNic(n->nic);
    n->rcq = nullptr;
    n->ptag = nullptr;
    n->nic = nullptr;
}

PeerViConfig layer_vi_config(const LayerNic &n, VIP_ULONG max_transfer, VIP_ULONG connect_timeout_ms) {
    PeerViConfig c;
    c.nic = n.nic;
    c.attr = &n.attr;
    c.ptag = n.ptag;
    c.recv_cq = n.rcq;
    c.max_transfer = max_transfer;
    c.connect_timeout_ms = connect_timeout_ms;
    return c;
}

bool exchange_addresses(const VIP_NIC_ATTRIBUTES &nic, const void *payload, size_t payload_len,
                        std::vector<NicAddress> *addrs, void *payloads, std::string *why) {
    if (nic.NicAddressLen > kMaxNicAddress) {
        *why = "NIC address too long";
        return false;
    }
    const int n = vipl_boot_size();
    const size_t each = sizeof(NicAddress) + payload_len;
    std::vector<uint8_t> mine(each), all(each * size_t(n > 0 ? n : 1));
    NicAddress me;
    me.len = uint16_t(nic.NicAddressLen);
    if (me.len) std::memcpy(me.bytes, nic.LocalNicAddress, me.len);
    std::memcpy(mine.data(), &me, sizeof me);
    if (payload_len) std::memcpy(mine.data() + sizeof me, payload, payload_len);
    if (n < 1 || vipl_boot_allgather(mine.data(), each, all.data()) != VIPL_BOOT_OK) {
        *why = "exchanging NIC addresses failed";
        return false;
    }
    addrs->assign(size_t(n), NicAddress{});
    for (size_t r = 0; r < size_t(n); r++) {
        std::memcpy(&(*addrs)[r], all.data() + r * each, sizeof(NicAddress));
        if (payload_len)
            std::memcpy(static_cast<uint8_t *>(payloads) + r * payload_len, all.data() + r * each + sizeof(NicAddress),
                        payload_len);
    }
    return true;
}

std::string SetupError::str() const {
    if (!call) return limit;
    return std::string(call) + ": " + VipxReturnString(rc);
}

uint64_t connect_deadline(VIP_ULONG timeout_ms) { return vipl_wait::clock_ns() + uint64_t(timeout_ms) * 1000000ull; }

bool start_peer_vi(const PeerViConfig &c, Channel &ch, const PeerEnd &local, const PeerEnd &remote, SetupError *err) {
    if (!within_limits(c, local, remote, err)) return false;
    VIP_VI_ATTRIBUTES va{};
    va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    va.MaxTransferSize = c.max_transfer;
    if (c.attr && c.attr->MaxTransferSize && va.MaxTransferSize > c.attr->MaxTransferSize)
        va.MaxTransferSize = c.attr->MaxTransferSize;
    va.QoS = nullptr;
    va.Ptag = c.ptag;
    va.EnableRdmaWrite = VIP_TRUE;
    va.EnableRdmaRead = c.rdma_read ? VIP_TRUE : VIP_FALSE;
    VIP_VI_HANDLE vi = nullptr;
    VIP_RETURN rc = VipCreateVi(c.nic, &va, c.send_cq, c.recv_cq, &vi);
    if (rc != VIP_SUCCESS) {
        *err = SetupError{"VipCreateVi", rc, {}};
        return false;
    }
    rc = ch.prepost(vi);
    if (rc != VIP_SUCCESS) {
        *err = SetupError{"VipPostRecv", rc, {}};
        return false;
    }
    NetAddress la(local), ra(remote);
    rc = VipConnectPeerRequest(vi, la.get(), ra.get(), c.connect_timeout_ms);
    if (rc != VIP_SUCCESS && rc != VIP_NOT_DONE) {
        *err = SetupError{"VipConnectPeerRequest", rc, {}};
        return false;
    }
    return true;
}

bool start_rank_vi(const PeerViConfig &c, Channel &ch, const char tag[2], const std::vector<NicAddress> &addrs,
                   unsigned me, unsigned peer, uint8_t side, SetupError *err) {
    if (me >= addrs.size() || peer >= addrs.size()) {
        err->limit = "rank " + std::to_string(me >= addrs.size() ? me : peer) + " has no exchanged address";
        return false;
    }
    const uint8_t rside = peer == me ? uint8_t(1 - side) : side;
    uint8_t ldisc[kRankDiscriminatorLen], rdisc[kRankDiscriminatorLen];
    const NicAddress &mine = addrs[me], &theirs = addrs[peer];
    const PeerEnd local{mine.bytes, mine.len, ldisc, rank_discriminator(ldisc, tag, me, peer, side)};
    const PeerEnd remote{theirs.bytes, theirs.len, rdisc, rank_discriminator(rdisc, tag, peer, me, rside)};
    return start_peer_vi(c, ch, local, remote, err);
}

bool start_rank_link(const PeerViConfig &c, Channel &ch, Region &region, const Layout &lay, const char tag[2],
                     const std::vector<NicAddress> &addrs, unsigned me, unsigned peer, uint8_t side, std::string *why) {
    if (!region.allocate(c.nic, c.ptag, Channel::region_bytes(lay), why)) return false;
    ch.attach(lay, region.base(), region.handle());
    SetupError err;
    if (!start_rank_vi(c, ch, tag, addrs, me, peer, side, &err)) {
        *why = err.str();
        return false;
    }
    return true;
}

VIP_RETURN poll_peer_vi(Channel &ch, uint64_t deadline_ns) {
    VIP_VI_ATTRIBUTES remote;
    const VIP_RETURN rc = VipConnectPeerDone(ch.vi(), &remote);
    if (rc == VIP_NOT_DONE && vipl_wait::clock_ns() > deadline_ns) return VIP_TIMEOUT;
    return rc;
}

VIP_RETURN finish_peer_vi(Channel &ch, uint64_t deadline_ns) {
    VIP_RETURN rc;
    while ((rc = poll_peer_vi(ch, deadline_ns)) == VIP_NOT_DONE) sched_yield();
    return rc;
}

void close_peer_vi(Channel &ch, Region &region) {
    const VIP_RETURN rc = close_vi(ch, [](Slot *) {});
    region.release(rc != VIP_SUCCESS);
    ch.detach();
}

} // namespace viastack::channel
