// nicfw_vipl_util.cpp - see nicfw_vipl_util.hpp.
#include "nicfw_vipl_util.hpp"

#include <cstdlib>
#include <cstring>

namespace nt {

const char *rc_name(VIP_RETURN rc) { return VipxReturnString(rc); }

Region::Region(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, size_t len) : nic_(nic), len_(len) {
    buf_ = static_cast<uint8_t *>(std::aligned_alloc(4096, (len + 4095) / 4096 * 4096));
    std::memset(buf_, 0, len);
    VIP_MEM_ATTRIBUTES ma{ptag, VIP_FALSE, VIP_FALSE};
    rc = VipRegisterMem(nic_, buf_, len_, &ma, &mh_);
}

Region::~Region() {
    if (rc == VIP_SUCCESS) VipDeregisterMem(nic_, buf_, mh_);
    std::free(buf_);
}

Buffers::Buffers(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, size_t count, size_t buf_len)
    : count_(count), buf_len_((buf_len + 63) / 64 * 64), region_(nic, ptag, count * (64 + buf_len_)) {}

VIP_DESCRIPTOR *Buffers::desc(size_t i) const { return reinterpret_cast<VIP_DESCRIPTOR *>(region_.p() + i * 64); }
uint8_t *Buffers::data(size_t i) const { return region_.p() + count_ * 64 + i * buf_len_; }

VIP_DESCRIPTOR *Buffers::send(size_t i, uint32_t len) {
    VIP_DESCRIPTOR *d = desc(i);
    std::memset(d, 0, sizeof *d);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = 1;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = data(i);
    d->DS[0].Local.Handle = mh();
    d->DS[0].Local.Length = len;
    return d;
}

VIP_DESCRIPTOR *Buffers::recv(size_t i) {
    VIP_DESCRIPTOR *d = send(i, static_cast<uint32_t>(buf_len_));
    return d;
}

VIP_VI_ATTRIBUTES vi_attr(VIP_PROTECTION_HANDLE ptag, VIP_RELIABILITY_LEVEL level) {
    VIP_VI_ATTRIBUTES a{};
    a.ReliabilityLevel = level;
    a.MaxTransferSize = 64 * 1024;
    a.QoS = nullptr;
    a.Ptag = ptag;
    a.EnableRdmaWrite = VIP_FALSE;
    a.EnableRdmaRead = VIP_FALSE;
    return a;
}

std::vector<uint8_t> net_addr(VIP_NIC_HANDLE nic, int rank, const std::string &disc) {
    (void)nic;
    std::vector<uint8_t> a(VIP_NET_ADDRESS_SIZE(2, VIP_MAX_DISCRIMINATOR_LEN), 0);
    auto *na = reinterpret_cast<VIP_NET_ADDRESS *>(a.data());
    na->HostAddressLen = 2;
    na->DiscriminatorLen = static_cast<VIP_UINT16>(disc.size());
    na->HostAddress[0] = static_cast<VIP_UINT8>(rank & 0xff);
    na->HostAddress[1] = static_cast<VIP_UINT8>(rank >> 8);
    std::memcpy(na->HostAddress + 2, disc.data(), disc.size());
    return a;
}

::testing::AssertionResult connect_loopback(VIP_NIC_HANDLE nic_a, VIP_VI_HANDLE a, VIP_NIC_HANDLE nic_b,
                                            VIP_VI_HANDLE b) {
    static int counter = 0;
    const std::string da = "lb-a-" + std::to_string(counter), db = "lb-b-" + std::to_string(counter);
    ++counter;
    const int rank = VipxNicRank(nic_a);
    auto la = net_addr(nic_a, rank, da), ra = net_addr(nic_a, rank, db);
    auto lb = net_addr(nic_b, rank, db), rb = net_addr(nic_b, rank, da);
    VIP_RETURN rc = VipConnectPeerRequest(a, as_addr(la), as_addr(ra), kWaitMs);
    if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "peer request a: " << rc_name(rc);
    rc = VipConnectPeerRequest(b, as_addr(lb), as_addr(rb), kWaitMs);
    if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "peer request b: " << rc_name(rc);
    VIP_VI_ATTRIBUTES ra_attr;
    for (VIP_VI_HANDLE v : {a, b}) {
        rc = VipConnectPeerWait(v, &ra_attr);
        if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "peer wait: " << rc_name(rc);
    }
    return ::testing::AssertionSuccess();
}

VIP_VI_STATE vi_state(VIP_VI_HANDLE vi) {
    VIP_VI_STATE st = VIP_STATE_ERROR; // what a failed query reports
    VIP_VI_ATTRIBUTES a;
    VIP_BOOLEAN sq, rq;
    VipQueryVi(vi, &st, &a, &sq, &rq);
    return st;
}

void destroy_vis(std::initializer_list<VIP_VI_HANDLE> vis) {
    VIP_DESCRIPTOR *d;
    for (VIP_VI_HANDLE v : vis) {
        if (!v) continue;
        if (vi_state(v) != VIP_STATE_IDLE) VipDisconnect(v);
        while (VipRecvDone(v, &d) == VIP_SUCCESS) {}
        while (VipSendDone(v, &d) == VIP_SUCCESS) {}
        NT_EXPECT_RC(VIP_SUCCESS, VipDestroyVi(v));
    }
}

uint8_t pattern(uint32_t seed, size_t i) { return static_cast<uint8_t>((seed * 2654435761u + i * 131u) >> 7); }
void fill(uint8_t *p, size_t len, uint32_t seed) {
    for (size_t i = 0; i < len; ++i) p[i] = pattern(seed, i);
}
bool check(const uint8_t *p, size_t len, uint32_t seed) {
    for (size_t i = 0; i < len; ++i)
        if (p[i] != pattern(seed, i)) return false;
    return true;
}

} // namespace nt
