// vipl_test_util.cpp - see vipl_test_util.hpp.
#include "vipl_test_util.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace vt {

std::string rc_str(VIP_RETURN rc) { return VipxReturnString(rc); }

std::string status_str(VIP_UINT32 status) {
    char buf[256];
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x ", status);
    return std::string(hex) + VipxStatusString(status, buf, sizeof buf);
}

::testing::AssertionResult rc_is(VIP_RETURN got, VIP_RETURN want, const char *expr) {
    if (got == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << expr << " returned " << rc_str(got) << ", the spec says " << rc_str(want);
}

::testing::AssertionResult status_is(VIP_UINT32 status, VIP_UINT32 op, VIP_UINT32 errors, bool immediate) {
    VIP_UINT32 want = VIP_STATUS_DONE | op | errors | (immediate ? VIP_STATUS_IMMEDIATE : 0);
    VIP_UINT32 got = status & (VIP_STATUS_DONE | VIP_STATUS_ERROR_MASK | VIP_STATUS_OP_MASK | VIP_STATUS_IMMEDIATE);
    if (got == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "descriptor status is " << status_str(status) << ", expected "
                                         << status_str(want);
}

::testing::AssertionResult status_has(VIP_UINT32 status, VIP_UINT32 errors) {
    if ((status & VIP_STATUS_DONE) && (status & errors) == errors) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "descriptor status is " << status_str(status) << ", expected DONE with "
                                         << status_str(errors);
}

// ---- NIC ------------------------------------------------------------------------
namespace {
VIP_NIC_HANDLE g_nic = nullptr;
VIP_NIC_ATTRIBUTES g_attr;

void open_nic_once() {
    if (g_nic) return;
    VIP_RETURN rc = VipOpenNic(nullptr, &g_nic);
    if (rc != VIP_SUCCESS) {
        std::fprintf(stderr,
                     "vipl tests: VipOpenNic(NULL) failed with %s; check $VIPL_PROVIDER "
                     "(nicfw, verbs or fake) and that the device exists\n",
                     VipxReturnString(rc));
        std::exit(2);
    }
    std::memset(&g_attr, 0, sizeof g_attr);
    rc = VipQueryNic(g_nic, &g_attr);
    if (rc != VIP_SUCCESS) {
        std::fprintf(stderr, "vipl tests: VipQueryNic failed with %s\n", VipxReturnString(rc));
        std::exit(2);
    }
}
} // namespace

VIP_NIC_HANDLE nic() {
    open_nic_once();
    return g_nic;
}
const VIP_NIC_ATTRIBUTES &nic_attr() {
    open_nic_once();
    return g_attr;
}
// Returns VipCloseNic's result: VIP_INVALID_STATE means a test left a VI, CQ,
// ptag or registration behind.
VIP_RETURN close_nic_for_exit() {
    VIP_RETURN rc = VIP_SUCCESS;
    if (g_nic) rc = VipCloseNic(g_nic);
    if (rc != VIP_SUCCESS)
        std::fprintf(stderr, "vipl tests: VipCloseNic at exit returned %s (objects left behind)\n",
                     VipxReturnString(rc));
    g_nic = nullptr;
    return rc;
}
bool provider_is_nicfw() { return std::strncmp(nic_attr().Name, "nicfw", 5) == 0; }
bool provider_is_fake() { return std::strncmp(nic_attr().Name, "fake", 4) == 0; }
bool status_written_at_completion() { return provider_is_nicfw() || provider_is_fake(); }
bool reports_unreliable_rdma_errors() { return provider_is_nicfw() || provider_is_fake(); }
VIP_ULONG max_transfer() { return std::min<VIP_ULONG>(nic_attr().MaxTransferSize, kMaxTestTransfer); }

std::vector<VIP_RELIABILITY_LEVEL> supported_levels() {
    std::vector<VIP_RELIABILITY_LEVEL> out;
    for (VIP_RELIABILITY_LEVEL l :
         {VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY, VIP_SERVICE_RELIABLE_RECEPTION})
        if (nic_attr().ReliabilityLevelSupport & l) out.push_back(l);
    return out;
}
const char *level_name(VIP_RELIABILITY_LEVEL l) {
    switch (l) {
    case VIP_SERVICE_UNRELIABLE: return "Unreliable";
    case VIP_SERVICE_RELIABLE_DELIVERY: return "ReliableDelivery";
    case VIP_SERVICE_RELIABLE_RECEPTION: return "ReliableReception";
    }
    return "BadLevel";
}
bool rdma_read_supported(VIP_RELIABILITY_LEVEL l) {
    return l != VIP_SERVICE_UNRELIABLE && (nic_attr().RDMAReadSupport & l);
}

// ---- memory ---------------------------------------------------------------------
Mem::Mem(size_t len, VIP_PROTECTION_HANDLE ptag, bool rdma_write, bool rdma_read, VIP_NIC_HANDLE nic_handle)
    : nic_(nic_handle ? nic_handle : nic()), len_(len) {
    size_t alloc = (std::max<size_t>(len, 1) + 4095) & ~size_t(4095);
    buf_ = static_cast<uint8_t *>(std::aligned_alloc(4096, alloc));
    if (!buf_) return;
    std::memset(buf_, 0, alloc);
    VIP_MEM_ATTRIBUTES ma;
    ma.Ptag = ptag;
    ma.EnableRdmaWrite = rdma_write ? VIP_TRUE : VIP_FALSE;
    ma.EnableRdmaRead = rdma_read ? VIP_TRUE : VIP_FALSE;
    rc = VipRegisterMem(nic_, buf_, std::max<size_t>(len, 1), &ma, &mh_);
    registered_ = rc == VIP_SUCCESS;
}

Mem::~Mem() {
    if (registered_) VipDeregisterMem(nic_, buf_, mh_);
    std::free(buf_);
}

Ptag::Ptag(VIP_NIC_HANDLE nic_handle) : nic_(nic_handle ? nic_handle : nic()) {
    if (VipCreatePtag(nic_, &h_) != VIP_SUCCESS) h_ = nullptr;
}
Ptag::~Ptag() {
    if (h_) VipDestroyPtag(nic_, h_);
}

static size_t desc_stride(size_t max_segs) {
    size_t bytes = sizeof(VIP_CONTROL_SEGMENT) + max_segs * sizeof(VIP_DESCRIPTOR_SEGMENT);
    bytes = std::max(bytes, sizeof(VIP_DESCRIPTOR));
    return (bytes + VIP_DESCRIPTOR_ALIGNMENT - 1) & ~size_t(VIP_DESCRIPTOR_ALIGNMENT - 1);
}

Descs::Descs(size_t count, size_t max_segs, VIP_PROTECTION_HANDLE ptag, VIP_NIC_HANDLE nic_handle)
    : count_(count), stride_(desc_stride(max_segs)),
      mem_(count * desc_stride(max_segs), ptag, false, false, nic_handle) {}

VIP_DESCRIPTOR *Descs::at(size_t i) const { return reinterpret_cast<VIP_DESCRIPTOR *>(mem_.p() + i * stride_); }

// ---- descriptor builders ----------------------------------------------------------
static void clear_control(VIP_DESCRIPTOR *d) { std::memset(&d->CS, 0, sizeof d->CS); }

static VIP_UINT32 put_local(VIP_DESCRIPTOR *d, size_t first, const std::vector<Seg> &segs) {
    VIP_UINT32 total = 0;
    for (size_t i = 0; i < segs.size(); i++) {
        VIP_DATA_SEGMENT &s = d->DS[first + i].Local;
        s.Data.AddressBits = 0;
        s.Data.Address = segs[i].addr;
        s.Handle = segs[i].mh;
        s.Length = segs[i].len;
        total += segs[i].len;
    }
    return total;
}

void fill_send(VIP_DESCRIPTOR *d, const std::vector<Seg> &segs, bool imm, VIP_UINT32 imm_data) {
    clear_control(d);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV | (imm ? VIP_CONTROL_IMMEDIATE : 0);
    d->CS.SegCount = (VIP_UINT16)segs.size();
    d->CS.ImmediateData = imm_data;
    d->CS.Length = put_local(d, 0, segs);
}

void fill_recv(VIP_DESCRIPTOR *d, const std::vector<Seg> &segs) {
    clear_control(d);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = (VIP_UINT16)segs.size();
    d->CS.Length = put_local(d, 0, segs);
}

void fill_rdma(VIP_DESCRIPTOR *d, VIP_UINT16 op, const void *remote, VIP_MEM_HANDLE remote_mh,
               const std::vector<Seg> &segs, bool imm, VIP_UINT32 imm_data) {
    clear_control(d);
    d->CS.Control = op | (imm ? VIP_CONTROL_IMMEDIATE : 0);
    d->CS.SegCount = (VIP_UINT16)(1 + segs.size()); // the address segment counts
    d->CS.ImmediateData = imm_data;
    VIP_ADDRESS_SEGMENT &a = d->DS[0].Remote;
    a.Data.AddressBits = 0;
    a.Data.Address = const_cast<void *>(remote);
    a.Handle = remote_mh;
    a.Reserved = 0;
    d->CS.Length = put_local(d, 1, segs);
}

std::vector<Seg> split(void *p, VIP_MEM_HANDLE mh, size_t len, size_t n) {
    std::vector<Seg> out;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t part = len / n + (i < len % n ? 1 : 0);
        out.push_back({static_cast<uint8_t *>(p) + off, mh, (VIP_UINT32)part});
        off += part;
    }
    return out;
}

void fill_pattern(void *p, size_t len, uint32_t seed) {
    auto *b = static_cast<uint8_t *>(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (uint8_t)(x >> 16);
    }
}

long check_pattern(const void *p, size_t len, uint32_t seed) {
    auto *b = static_cast<const uint8_t *>(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        if (b[i] != (uint8_t)(x >> 16)) return (long)i;
    }
    return -1;
}

VIP_DESCRIPTOR *wait_send(VIP_VI_HANDLE vi, VIP_ULONG ms, VIP_RETURN *rc_out) {
    VIP_DESCRIPTOR *d = nullptr;
    VIP_RETURN rc = VipSendWait(vi, ms, &d);
    if (rc_out) *rc_out = rc;
    return rc == VIP_SUCCESS ? d : nullptr;
}

VIP_DESCRIPTOR *wait_recv(VIP_VI_HANDLE vi, VIP_ULONG ms, VIP_RETURN *rc_out) {
    VIP_DESCRIPTOR *d = nullptr;
    VIP_RETURN rc = VipRecvWait(vi, ms, &d);
    if (rc_out) *rc_out = rc;
    return rc == VIP_SUCCESS ? d : nullptr;
}

VIP_VI_STATE vi_state(VIP_VI_HANDLE vi) {
    VIP_VI_STATE st = (VIP_VI_STATE)-1;
    VIP_VI_ATTRIBUTES a;
    VIP_BOOLEAN se, re;
    if (VipQueryVi(vi, &st, &a, &se, &re) != VIP_SUCCESS) return (VIP_VI_STATE)-1;
    return st;
}

VIP_VI_STATE wait_state_change(VIP_VI_HANDLE vi, VIP_VI_STATE from, VIP_ULONG ms) {
    VIP_VI_STATE st = vi_state(vi);
    poll_until([&] { return (st = vi_state(vi)) != from; }, ms);
    return st;
}

// ---- addresses ------------------------------------------------------------------
NetAddr::NetAddr() = default;

NetAddr::NetAddr(const VIP_UINT8 *host, VIP_UINT16 host_len, std::string_view disc) {
    VIP_NET_ADDRESS *a = get();
    a->HostAddressLen = host_len;
    std::memcpy(a->HostAddress, host, host_len);
    set_disc(disc);
}

NetAddr NetAddr::local(std::string_view disc) {
    return NetAddr(nic_attr().LocalNicAddress, nic_attr().NicAddressLen, disc);
}

void NetAddr::set_disc(std::string_view disc) {
    VIP_NET_ADDRESS *a = get();
    size_t n = std::min<size_t>(disc.size(), VIP_MAX_DISCRIMINATOR_LEN);
    a->DiscriminatorLen = (VIP_UINT16)n;
    std::memcpy(a->HostAddress + a->HostAddressLen, disc.data(), n);
}

std::vector<uint8_t> NetAddr::host() const {
    const VIP_NET_ADDRESS *a = get();
    return std::vector<uint8_t>(a->HostAddress, a->HostAddress + a->HostAddressLen);
}

// ---- VIs --------------------------------------------------------------------------
VIP_VI_ATTRIBUTES vi_attr(VIP_RELIABILITY_LEVEL level, VIP_PROTECTION_HANDLE ptag, bool rdma_write, bool rdma_read) {
    VIP_VI_ATTRIBUTES a;
    std::memset(&a, 0, sizeof a);
    a.ReliabilityLevel = level;
    a.MaxTransferSize = max_transfer();
    a.QoS = nullptr;
    a.Ptag = ptag;
    a.EnableRdmaWrite = rdma_write ? VIP_TRUE : VIP_FALSE;
    a.EnableRdmaRead = rdma_read ? VIP_TRUE : VIP_FALSE;
    return a;
}

Vi::Vi(const VIP_VI_ATTRIBUTES &attr, VIP_CQ_HANDLE send_cq, VIP_CQ_HANDLE recv_cq) {
    VIP_VI_ATTRIBUTES a = attr;
    rc = VipCreateVi(nic(), &a, send_cq, recv_cq, &h_);
    if (rc != VIP_SUCCESS) h_ = nullptr;
}

Vi::~Vi() {
    if (!h_) return;
    VIP_VI_STATE st = vi_state(h_);
    if (st == VIP_STATE_CONNECTED || st == VIP_STATE_ERROR || st == VIP_STATE_CONNECT_PENDING) VipDisconnect(h_);
    // Reap flushed descriptors so the VI can be destroyed.
    VIP_DESCRIPTOR *d;
    for (int i = 0; i < 4096 && VipSendDone(h_, &d) == VIP_SUCCESS; i++) {}
    for (int i = 0; i < 4096 && VipRecvDone(h_, &d) == VIP_SUCCESS; i++) {}
    VipDestroyVi(h_);
}

// ---- asynchronous errors ----------------------------------------------------------
namespace {
std::mutex g_err_mu;
std::vector<ErrorRecord> g_errors;
std::thread::id g_main_thread;
int g_err_context;

void record_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e) {
    std::lock_guard<std::mutex> lk(g_err_mu);
    g_errors.push_back({e->ErrorCode, e->ResourceCode, e->ViHandle, e->DescriptorPtr, ctx,
                        std::this_thread::get_id() != g_main_thread});
}
} // namespace

void install_error_recorder() {
    g_main_thread = std::this_thread::get_id();
    VIP_RETURN rc = VipErrorCallback(nic(), &g_err_context, record_error);
    if (rc != VIP_SUCCESS) std::fprintf(stderr, "vipl tests: VipErrorCallback failed: %s\n", VipxReturnString(rc));
}

size_t error_mark() {
    std::lock_guard<std::mutex> lk(g_err_mu);
    return g_errors.size();
}

bool wait_error_on(size_t mark, VIP_ERROR_CODE code, VIP_VI_HANDLE vi, VIP_ULONG ms, ErrorRecord *out) {
    // An inline-firmware provider delivers queued errors when its host enters the
    // library; poll_until drives it as an application waiting for one would.
    return poll_until(
        [&] {
            std::lock_guard<std::mutex> lk(g_err_mu);
            for (size_t i = mark; i < g_errors.size(); i++)
                if (g_errors[i].code == code && (!vi || g_errors[i].vi == vi)) {
                    if (out) *out = g_errors[i];
                    return true;
                }
            return false;
        },
        ms);
}

bool wait_error(size_t mark, VIP_ERROR_CODE code, VIP_ULONG ms, ErrorRecord *out) {
    return wait_error_on(mark, code, nullptr, ms, out);
}

const char *error_code_name(VIP_ERROR_CODE c) {
    static const char *names[] = {"VIP_ERROR_POST_DESC",      "VIP_ERROR_CONN_LOST",   "VIP_ERROR_RECVQ_EMPTY",
                                  "VIP_ERROR_VI_OVERRUN",     "VIP_ERROR_RDMAW_PROT",  "VIP_ERROR_RDMAW_DATA",
                                  "VIP_ERROR_RDMAW_ABORT",    "VIP_ERROR_RDMAR_PROT",  "VIP_ERROR_COMP_PROT",
                                  "VIP_ERROR_RDMA_TRANSPORT", "VIP_ERROR_CATASTROPHIC"};
    return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : "?";
}

std::string unique_disc(std::string_view prefix) {
    static std::atomic<unsigned> counter{0};
    return std::string(prefix) + "-" + std::to_string(counter.fetch_add(1));
}

::testing::AssertionResult connect_loopback(VIP_VI_HANDLE a, VIP_VI_HANDLE b) {
    std::string base = unique_disc("lb");
    NetAddr addr_a = NetAddr::local(base + "a");
    NetAddr addr_b = NetAddr::local(base + "b");
    VIP_RETURN rc = VipConnectPeerRequest(a, addr_a.get(), addr_b.get(), kWaitMs);
    if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "VipConnectPeerRequest(a) returned " << rc_str(rc);
    rc = VipConnectPeerRequest(b, addr_b.get(), addr_a.get(), kWaitMs);
    if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "VipConnectPeerRequest(b) returned " << rc_str(rc);
    bool done_a = false, done_b = false;
    auto t0 = Clock::now();
    while (!(done_a && done_b)) {
        VIP_VI_ATTRIBUTES ra;
        if (!done_a) {
            rc = VipConnectPeerDone(a, &ra);
            if (rc == VIP_SUCCESS) done_a = true;
            else if (rc != VIP_NOT_DONE)
                return ::testing::AssertionFailure() << "VipConnectPeerDone(a) returned " << rc_str(rc);
        }
        if (!done_b) {
            rc = VipConnectPeerDone(b, &ra);
            if (rc == VIP_SUCCESS) done_b = true;
            else if (rc != VIP_NOT_DONE)
                return ::testing::AssertionFailure() << "VipConnectPeerDone(b) returned " << rc_str(rc);
        }
        if (elapsed_ms(t0) > (long)kWaitMs)
            return ::testing::AssertionFailure() << "loopback peer connection not done after " << kWaitMs << " ms";
        if (!(done_a && done_b)) std::this_thread::yield();
    }
    if (vi_state(a) != VIP_STATE_CONNECTED || vi_state(b) != VIP_STATE_CONNECTED)
        return ::testing::AssertionFailure() << "VipConnectPeerDone succeeded but the VIs are not "
                                                "in VIP_STATE_CONNECTED";
    return ::testing::AssertionSuccess();
}

} // namespace vt
