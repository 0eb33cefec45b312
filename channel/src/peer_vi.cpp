// peer_vi.cpp - one VI per peer, connected by discriminator (peer_vi.hpp).
#include "viastack/peer_vi.hpp"

#include <sched.h>

#include <cstring>

namespace viastack::channel {

namespace {

constexpr uint16_t kMaxAddr = 64;

// tag, the two ranks and the side: both ends compute each other's.
uint16_t discriminator(uint8_t *out, const char tag[2], unsigned from, unsigned to, uint8_t side) {
    out[0] = uint8_t(tag[0]);
    out[1] = uint8_t(tag[1]);
    std::memcpy(out + 2, &from, 4);
    std::memcpy(out + 6, &to, 4);
    out[10] = side;
    return 11;
}

}  // namespace

bool start_peer_vi(const PeerViConfig &c, Channel &ch, unsigned peer, const uint8_t *peer_addr,
                   uint16_t peer_addr_len, uint8_t side, std::string *why) {
    if (c.my_addr_len > kMaxAddr || peer_addr_len > kMaxAddr) {
        *why = "NIC address longer than " + std::to_string(kMaxAddr) + " bytes";
        return false;
    }
    VIP_VI_ATTRIBUTES va{};
    va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    va.MaxTransferSize = c.max_transfer;
    va.Ptag = c.ptag;
    va.EnableRdmaWrite = VIP_TRUE;
    va.EnableRdmaRead = VIP_FALSE;
    VIP_VI_HANDLE vi = nullptr;
    VIP_RETURN rc = VipCreateVi(c.nic, &va, nullptr, c.recv_cq, &vi);
    if (rc != VIP_SUCCESS) {
        *why = std::string("VipCreateVi: ") + VipxReturnString(rc);
        return false;
    }
    rc = ch.prepost(vi);
    if (rc != VIP_SUCCESS) {
        *why = std::string("VipPostRecv: ") + VipxReturnString(rc);
        return false;
    }
    alignas(8) uint8_t lbuf[VIP_NET_ADDRESS_SIZE(kMaxAddr, 16)];
    alignas(8) uint8_t rbuf[VIP_NET_ADDRESS_SIZE(kMaxAddr, 16)];
    auto *la = reinterpret_cast<VIP_NET_ADDRESS *>(lbuf);
    auto *ra = reinterpret_cast<VIP_NET_ADDRESS *>(rbuf);
    la->HostAddressLen = c.my_addr_len;
    if (c.my_addr_len) std::memcpy(la->HostAddress, c.my_addr, c.my_addr_len);
    la->DiscriminatorLen = discriminator(la->HostAddress + la->HostAddressLen, c.tag, c.me, peer, side);
    ra->HostAddressLen = peer_addr_len;
    if (peer_addr_len) std::memcpy(ra->HostAddress, peer_addr, peer_addr_len);
    // To ourselves, side 0 connects to side 1 and back.
    const uint8_t rside = peer == c.me ? uint8_t(1 - side) : side;
    ra->DiscriminatorLen = discriminator(ra->HostAddress + ra->HostAddressLen, c.tag, peer, c.me, rside);
    rc = VipConnectPeerRequest(vi, la, ra, c.connect_timeout_ms);
    if (rc != VIP_SUCCESS && rc != VIP_NOT_DONE) {
        *why = std::string("VipConnectPeerRequest: ") + VipxReturnString(rc);
        return false;
    }
    return true;
}

VIP_RETURN finish_peer_vi(Channel &ch) {
    VIP_VI_ATTRIBUTES remote;
    VIP_RETURN rc;
    while ((rc = VipConnectPeerDone(ch.vi(), &remote)) == VIP_NOT_DONE) sched_yield();
    return rc;
}

void close_peer_vi(Channel &ch, Region &region) {
    if (ch.vi()) {
        VipDisconnect(ch.vi());
        ch.drain();
        const VIP_RETURN rc = VipDestroyVi(ch.vi());
        ch.forget_vi();
        region.release(rc != VIP_SUCCESS);
    } else {
        region.release();
    }
    ch.detach();
}

}  // namespace viastack::channel
