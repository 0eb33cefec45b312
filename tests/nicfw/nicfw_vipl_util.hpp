// nicfw_vipl_util.hpp - small helpers for the nicfw tests that go through vipl.h:
// registered memory, descriptors, VIs connected peer-to-peer, waits.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "vipl.h"

namespace nt {

constexpr VIP_ULONG kWaitMs = 10000;

const char *rc_name(VIP_RETURN rc);
// A return code that gtest prints by name; the macros below accept `<< "context"`.
struct Rc {
    VIP_RETURN v;
    bool operator==(const Rc &) const = default;
};
inline void PrintTo(const Rc &r, std::ostream *os) { *os << rc_name(r.v); }
#define NT_ASSERT_OK(expr) ASSERT_EQ(::nt::Rc{VIP_SUCCESS}, ::nt::Rc{(expr)}) << #expr
#define NT_EXPECT_RC(want, expr) EXPECT_EQ(::nt::Rc{(want)}, ::nt::Rc{(expr)}) << #expr

// A buffer registered with a NIC (page aligned, zeroed); deregistered at scope exit.
class Region {
public:
    Region(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, size_t len);
    ~Region();
    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;
    uint8_t *p() const { return buf_; }
    VIP_MEM_HANDLE mh() const { return mh_; }
    VIP_RETURN rc;

private:
    VIP_NIC_HANDLE nic_;
    uint8_t *buf_;
    size_t len_;
    VIP_MEM_HANDLE mh_ = 0;
};

// Descriptors (one data segment each) and their data buffers in one region.
class Buffers {
public:
    Buffers(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, size_t count, size_t buf_len);
    VIP_DESCRIPTOR *desc(size_t i) const;
    uint8_t *data(size_t i) const;
    VIP_MEM_HANDLE mh() const { return region_.mh(); }
    VIP_RETURN rc() const { return region_.rc; }
    // Fills descriptor i as a send of len bytes from data(i) (or a receive of buf_len).
    VIP_DESCRIPTOR *send(size_t i, uint32_t len);
    VIP_DESCRIPTOR *recv(size_t i);

private:
    size_t count_, buf_len_;
    Region region_;
};

VIP_VI_ATTRIBUTES vi_attr(VIP_PROTECTION_HANDLE ptag, VIP_RELIABILITY_LEVEL level);
// This NIC's address with a discriminator appended (2-byte host address).
std::vector<uint8_t> net_addr(VIP_NIC_HANDLE nic, int rank, const std::string &disc);
inline VIP_NET_ADDRESS *as_addr(std::vector<uint8_t> &a) { return reinterpret_cast<VIP_NET_ADDRESS *>(a.data()); }
// Connects two VIs of this process (same NIC, any handles) peer-to-peer.
::testing::AssertionResult connect_loopback(VIP_NIC_HANDLE nic_a, VIP_VI_HANDLE a, VIP_NIC_HANDLE nic_b,
                                            VIP_VI_HANDLE b);
VIP_VI_STATE vi_state(VIP_VI_HANDLE vi);
// A fixture's teardown of its VIs: each one not Idle disconnected, its
// completed descriptors reaped, then destroyed (the destroy is checked).
// Null handles are skipped.
void destroy_vis(std::initializer_list<VIP_VI_HANDLE> vis);
uint8_t pattern(uint32_t seed, size_t i);
void fill(uint8_t *p, size_t len, uint32_t seed);
bool check(const uint8_t *p, size_t len, uint32_t seed);

} // namespace nt
