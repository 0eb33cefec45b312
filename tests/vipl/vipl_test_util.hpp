// vipl_test_util.hpp - helpers shared by the VIPL test suites.
//
// Everything here goes through the public vipl.h API only, so the suites run
// unchanged over any provider ($VIPL_PROVIDER picks it; VipOpenNic gets NULL).
//
// Descriptor layout assumed (VI Architecture Specification 1.0): a control
// segment, then for RDMA one address segment, then the data segments;
// CS.SegCount counts ALL segments after the control segment, the address
// segment included (public VI programs post RDMA writes with SegCount = 2).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "vipl.h"

namespace vt {

// Upper bound for any wait on a completion that is expected to happen.
constexpr VIP_ULONG kWaitMs = 5000;
// Cap on buffer sizes when a provider reports a huge MaxTransferSize.
constexpr VIP_ULONG kMaxTestTransfer = 4u << 20;
// Cap on segments per descriptor when a provider reports a huge MaxSegmentsPerDesc.
constexpr size_t kMaxTestSegments = 256;

std::string rc_str(VIP_RETURN rc);
std::string status_str(VIP_UINT32 status);

// Return-code checks that print both codes by name; they accept `<< "context"`.
::testing::AssertionResult rc_is(VIP_RETURN got, VIP_RETURN want, const char *expr);
#define VT_EXPECT_RC(expected, expr) EXPECT_TRUE(::vt::rc_is((expr), (expected), #expr))
#define VT_ASSERT_RC(expected, expr) ASSERT_TRUE(::vt::rc_is((expr), (expected), #expr))
#define VT_ASSERT_OK(expr) VT_ASSERT_RC(VIP_SUCCESS, expr)
#define VT_EXPECT_OK(expr) VT_EXPECT_RC(VIP_SUCCESS, expr)

// Status checks: DONE set, the op field, and exactly the given error bits.
::testing::AssertionResult status_is(VIP_UINT32 status, VIP_UINT32 op, VIP_UINT32 errors, bool immediate = false);
// DONE set and all of the given error bits present (others tolerated).
::testing::AssertionResult status_has(VIP_UINT32 status, VIP_UINT32 errors);

// ---- the NIC under test ---------------------------------------------------------
// Opened once per test binary by a gtest Environment (see vipl_test_env.cpp).
VIP_NIC_HANDLE nic();
const VIP_NIC_ATTRIBUTES &nic_attr();
bool provider_is_nicfw();
bool provider_is_fake();
// Does the provider write a descriptor's Status when the operation completes
// (nicfw's firmware, the fake provider), rather than when its queue or CQ is
// polled (verbs: docs/verbs.md)?  Only then can a test watch the DONE bit.
bool status_written_at_completion();
// Does the provider report an unreliable VI's RDMA protection violation (nicfw,
// fake) rather than drop it silently (verbs' UC queue pairs: docs/verbs.md)?
bool reports_unreliable_rdma_errors();
VIP_ULONG max_transfer(); // min(NIC MaxTransferSize, kMaxTestTransfer)
// Reliability levels the NIC supports, in the order unreliable, RD, RR.
std::vector<VIP_RELIABILITY_LEVEL> supported_levels();
const char *level_name(VIP_RELIABILITY_LEVEL l);
bool rdma_read_supported(VIP_RELIABILITY_LEVEL l);

// ---- registered memory ----------------------------------------------------------
// A page-aligned, zeroed buffer registered with the NIC; deregistered and freed on
// destruction.  rc holds VipRegisterMem's result.
class Mem {
public:
    Mem(size_t len, VIP_PROTECTION_HANDLE ptag, bool rdma_write = false, bool rdma_read = false,
        VIP_NIC_HANDLE nic_handle = nullptr);
    ~Mem();
    Mem(const Mem &) = delete;
    Mem &operator=(const Mem &) = delete;

    uint8_t *p() const { return buf_; }
    size_t size() const { return len_; }
    VIP_MEM_HANDLE mh() const { return mh_; }
    VIP_RETURN rc = VIP_ERROR_RESOURCE;
    // Leave the region registered at destruction (the test deregistered it).
    void forget() { registered_ = false; }

private:
    VIP_NIC_HANDLE nic_;
    uint8_t *buf_ = nullptr;
    size_t len_ = 0;
    VIP_MEM_HANDLE mh_ = 0;
    bool registered_ = false;
};

// A VIP_PROTECTION_HANDLE that is destroyed at scope exit.
class Ptag {
public:
    explicit Ptag(VIP_NIC_HANDLE nic_handle = nullptr);
    ~Ptag();
    Ptag(const Ptag &) = delete;
    Ptag &operator=(const Ptag &) = delete;
    VIP_PROTECTION_HANDLE h() const { return h_; }
    void forget() { h_ = nullptr; }

private:
    VIP_NIC_HANDLE nic_;
    VIP_PROTECTION_HANDLE h_ = nullptr;
};

// Descriptors in registered memory, each VIP_DESCRIPTOR_ALIGNMENT-aligned with room
// for max_segs segments after the control segment.
class Descs {
public:
    Descs(size_t count, size_t max_segs, VIP_PROTECTION_HANDLE ptag, VIP_NIC_HANDLE nic_handle = nullptr);
    VIP_DESCRIPTOR *at(size_t i) const;
    VIP_MEM_HANDLE mh() const { return mem_.mh(); }
    size_t count() const { return count_; }

private:
    size_t count_, stride_;
    Mem mem_;
};

struct Seg {
    void *addr;
    VIP_MEM_HANDLE mh;
    VIP_UINT32 len;
};

void fill_send(VIP_DESCRIPTOR *d, const std::vector<Seg> &segs, bool imm = false, VIP_UINT32 imm_data = 0);
void fill_recv(VIP_DESCRIPTOR *d, const std::vector<Seg> &segs);
// op is VIP_CONTROL_OP_RDMAWRITE or VIP_CONTROL_OP_RDMAREAD.
void fill_rdma(VIP_DESCRIPTOR *d, VIP_UINT16 op, const void *remote, VIP_MEM_HANDLE remote_mh,
               const std::vector<Seg> &segs, bool imm = false, VIP_UINT32 imm_data = 0);
// Splits [p, p+len) into n segments of nearly equal size (n >= 1).
std::vector<Seg> split(void *p, VIP_MEM_HANDLE mh, size_t len, size_t n);

// Deterministic byte pattern; check_pattern returns the first bad index or -1.
void fill_pattern(void *p, size_t len, uint32_t seed);
long check_pattern(const void *p, size_t len, uint32_t seed);

// Waits with VipSendWait/VipRecvWait; returns the descriptor or nullptr (and the
// return code in *rc_out when given).
VIP_DESCRIPTOR *wait_send(VIP_VI_HANDLE vi, VIP_ULONG ms = kWaitMs, VIP_RETURN *rc_out = nullptr);
VIP_DESCRIPTOR *wait_recv(VIP_VI_HANDLE vi, VIP_ULONG ms = kWaitMs, VIP_RETURN *rc_out = nullptr);
VIP_VI_STATE vi_state(VIP_VI_HANDLE vi);
// Polls VipQueryVi (driving progress) until the state differs from `from` or ms pass.
VIP_VI_STATE wait_state_change(VIP_VI_HANDLE vi, VIP_VI_STATE from, VIP_ULONG ms);

// ---- addresses ------------------------------------------------------------------
// Owns room for the largest address and discriminator the header allows.
class NetAddr {
public:
    NetAddr();
    NetAddr(const VIP_UINT8 *host, VIP_UINT16 host_len, std::string_view disc);
    static NetAddr local(std::string_view disc); // this NIC's address
    VIP_NET_ADDRESS *get() { return reinterpret_cast<VIP_NET_ADDRESS *>(buf_); }
    const VIP_NET_ADDRESS *get() const { return reinterpret_cast<const VIP_NET_ADDRESS *>(buf_); }
    void set_disc(std::string_view disc);
    std::vector<uint8_t> host() const;

private:
    alignas(8) uint8_t buf_[VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN)] = {};
};

// ---- VIs --------------------------------------------------------------------------
VIP_VI_ATTRIBUTES vi_attr(VIP_RELIABILITY_LEVEL level, VIP_PROTECTION_HANDLE ptag, bool rdma_write = false,
                          bool rdma_read = false);

// A VI destroyed at scope exit (disconnected first when needed).
class Vi {
public:
    Vi() = default;
    Vi(const VIP_VI_ATTRIBUTES &attr, VIP_CQ_HANDLE send_cq = nullptr, VIP_CQ_HANDLE recv_cq = nullptr);
    ~Vi();
    Vi(const Vi &) = delete;
    Vi &operator=(const Vi &) = delete;
    VIP_VI_HANDLE h() const { return h_; }
    VIP_RETURN rc = VIP_ERROR_RESOURCE;

private:
    VIP_VI_HANDLE h_ = nullptr;
};

// Connects two VIs of this NIC to each other peer-to-peer (loopback), driving
// both sides from this thread.  Discriminators are made unique per call.
::testing::AssertionResult connect_loopback(VIP_VI_HANDLE a, VIP_VI_HANDLE b);

// Unique discriminator text for this process ("<prefix>-<counter>").
std::string unique_disc(std::string_view prefix);

// ---- asynchronous errors ----------------------------------------------------------
// The test main installs one recording VipErrorCallback on the NIC; tests look for
// errors recorded after a mark.
struct ErrorRecord {
    VIP_ERROR_CODE code;
    VIP_RESOURCE_CODE resource;
    VIP_VI_HANDLE vi;
    VIP_DESCRIPTOR *desc;
    VIP_PVOID context;
    bool on_provider_thread;
};
void install_error_recorder();
size_t error_mark();
// Waits up to ms (calling VipxProgress) for an error with this code recorded after mark.
bool wait_error(size_t mark, VIP_ERROR_CODE code, VIP_ULONG ms, ErrorRecord *out = nullptr);
// The same, for an error naming this VI (errors of VIs of earlier tests may
// still arrive: handlers run on a provider thread).
bool wait_error_on(size_t mark, VIP_ERROR_CODE code, VIP_VI_HANDLE vi, VIP_ULONG ms, ErrorRecord *out = nullptr);
const char *error_code_name(VIP_ERROR_CODE c);

using Clock = std::chrono::steady_clock;
inline long elapsed_ms(Clock::time_point t0) {
    return (long)std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// Polls `holds` until it returns true or ms pass: the way tests wait for a state
// instead of sleeping.  With `progress`, VipxProgress drives an inline provider
// between polls (never when the state belongs to a handler on a provider thread).
template <class Pred>
bool poll_until(Pred &&holds, VIP_ULONG ms = kWaitMs, bool progress = true) {
    const auto t0 = Clock::now();
    for (;;) {
        if (holds()) return true;
        if (elapsed_ms(t0) >= (long)ms) return false;
        if (progress) VipxProgress(nic());
        std::this_thread::yield();
    }
}

// The DONE bit of a descriptor's Status, read as the provider publishes it.
inline bool status_done(const VIP_DESCRIPTOR *d) {
    return __atomic_load_n(&d->CS.Status, __ATOMIC_ACQUIRE) & VIP_STATUS_DONE;
}

} // namespace vt
