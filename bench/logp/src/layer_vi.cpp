// layer_vi.cpp - the native VI layer: VIPL send/receive and RDMA write
// between rank 0 and rank 1 over one reliable-delivery VI (vipl.h only; the
// job bootstrap exchanges the NIC addresses and the RDMA target).
//
// Buffers: one registered region (VipxAllocMem memory where the provider has
// it) holds S send descriptors, R receive descriptors, their 64-byte buffers,
// a 1 MB bulk source and a 1 MB RDMA target.  A bulk message larger than the NIC's MaxTransferSize (nicfw: 64 KB)
// is written as several RDMA-write descriptors of at most that size, posted
// back to back, as a VI user moving a large buffer has to.  R receives are pre-posted and each is re-posted as soon as it is
// consumed; the sender never has more than max_burst() < R messages
// unconfirmed, so a receive is always posted when a message arrives.
// Send descriptors are reaped (VipSendDone) only when the ring is full, so a
// short burst costs exactly VipPostSend per message (the VI o_s), while a
// long burst waits for the NIC (the VI g).
#include "layers.hpp"
#include "timer.hpp"
#include "vipl.h"
#include "vipl_wait.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace logp {
namespace {

constexpr int kSend = 64;              // send descriptors (ring)
constexpr int kRecv = 256;             // pre-posted receives
constexpr std::size_t kSmall = 64;     // small-message buffer
constexpr std::size_t kBulk = 1 << 20; // largest bulk message (several descriptors above MaxTransferSize)
constexpr std::size_t kDescSlot = 128; // room for control + address + data segment, aligned

// Message kinds in the first byte of a small message, so a stray message is caught.
enum : unsigned char { kData = 1, kEcho = 2, kConfirm = 3, kDone = 4 };

double timeout_ns() {
    const char *e = std::getenv("LOGP_TIMEOUT_S");
    double s = e ? std::atof(e) : 0;
    return (s > 0 ? s : 30.0) * 1e9;
}

void check(VIP_RETURN rc, const char *what) {
    if (rc != VIP_SUCCESS) throw std::runtime_error(fmt::format("vi: {} failed: {}", what, VipxReturnString(rc)));
}

struct PeerInfo { // exchanged through the job bootstrap
    VIP_UINT16 addr_len;
    VIP_UINT8 addr[VIP_MAX_HOST_ADDRESS_LEN];
    VIP_UINT64 rdma_addr;
    VIP_MEM_HANDLE rdma_handle;
};

class ViLayer final : public Layer {
public:
    ViLayer(const Job &job, const LayerOptions &opt);
    ~ViLayer() override;

    std::string id() const override { return "vi"; }
    std::string description() const override { return "native VI send/receive on " + nic_name_; }
    int short_burst_max() const override { return 8; }
    int long_burst_min() const override { return 2 * kSend; }
    int max_burst() const override { return kRecv - 32; }

    // Each side answers first and reposts the consumed receive after, while
    // the message travels (the other kRecv - 1 receives stay posted), as a
    // latency-minded VI program does and as ucp_am_lat's loop does: the
    // repost is not on the round trip's path.  The client's last receive is
    // reposted by rtt_client_done().
    void rtt_client(std::size_t bytes) override {
        post_small(kData, bytes);
        if (rtt_unposted_) repost(std::exchange(rtt_unposted_, nullptr));
        rtt_unposted_ = wait_recv();
    }
    void rtt_client_done() override {
        if (rtt_unposted_) repost(std::exchange(rtt_unposted_, nullptr));
    }
    void rtt_server_series(std::size_t bytes, int n) override {
        for (int i = 0; i < n; ++i) {
            VIP_DESCRIPTOR *d = wait_recv();
            post_small(kEcho, bytes);
            repost(d);
        }
    }

    void burst_send_one() override { post_small(kData, 16); }
    void burst_sender_finish(int) override {
        repost(wait_recv()); // the receiver's confirmation
        reap_sends(true);
    }
    void burst_receive(int m) override {
        for (int i = 0; i < m; ++i) repost(wait_recv());
        post_small(kConfirm, 16);
        reap_sends(true);
    }

    void recv_probe_send() override {
        post_small(kData, 16);
        repost(wait_recv());
        reap_sends(true);
    }
    double recv_probe_receive(double settle_ns) override {
        spin_ns(settle_ns);
        double deadline = timeout_ns();
        std::uint64_t start = ticks();
        for (;;) {
            long sw = context_switches();
            std::uint64_t t0 = ticks();
            VIP_DESCRIPTOR *d = nullptr;
            VIP_RETURN rc = VipRecvDone(vi_, &d);
            if (rc == VIP_SUCCESS) {
                check_status(d, "receive");
                repost(d);
                double ns = ticks_to_ns(ticks() - t0);
                if (context_switches() != sw) ns = -ns;
                post_small(kConfirm, 16);
                reap_sends(true);
                return ns;
            }
            if (rc != VIP_NOT_DONE) check(rc, "VipRecvDone");
            if (ticks_to_ns(ticks() - start) > deadline)
                throw std::runtime_error("vi: the probe message never arrived");
        }
    }

    bool has_bulk() const override { return true; }
    std::string bulk_method() const override {
        return nic_mem_ ? "RDMA-write stream, one-sided (VipPostSend RDMA write), VipxAllocMem memory"
                        : "RDMA-write stream, one-sided (VipPostSend RDMA write), plain memory";
    }
    std::size_t bulk_max_bytes() const override { return kBulk; }
    double bulk_stream_client(std::size_t bytes, int count) override {
        std::uint64_t t0 = ticks();
        for (int i = 0; i < count; ++i)
            for (std::size_t off = 0; off < bytes; off += chunk_) post_rdma(off, std::min(chunk_, bytes - off));
        post_small(kDone, 16); // reliable delivery, in order: it lands after the writes
        repost(wait_recv());   // the receiver saw it
        double ns = ticks_to_ns(ticks() - t0);
        reap_sends(true);
        return ns;
    }
    void bulk_stream_server(std::size_t, int) override {
        repost(wait_recv());
        post_small(kConfirm, 16);
        reap_sends(true);
    }

private:
    VIP_DESCRIPTOR *send_desc(int i) { return reinterpret_cast<VIP_DESCRIPTOR *>(base_ + std::size_t(i) * kDescSlot); }
    VIP_DESCRIPTOR *recv_desc(int i) {
        return reinterpret_cast<VIP_DESCRIPTOR *>(base_ + std::size_t(kSend + i) * kDescSlot);
    }
    char *send_buf(int i) { return base_ + std::size_t(kSend + kRecv) * kDescSlot + std::size_t(i) * kSmall; }
    char *recv_buf(int i) { return send_buf(kSend) + std::size_t(i) * kSmall; }
    char *bulk_src() { return recv_buf(kRecv); }
    char *rdma_target() { return bulk_src() + kBulk; }
    std::size_t region_bytes() const { return std::size_t(kSend + kRecv) * (kDescSlot + kSmall) + 2 * kBulk; }

    VIP_DESCRIPTOR *next_send_desc() {
        if (outstanding_ == kSend) reap_sends(false);
        VIP_DESCRIPTOR *d = send_desc(next_send_);
        next_send_ = (next_send_ + 1) % kSend;
        ++outstanding_;
        return d;
    }
    void post_small(unsigned char kind, std::size_t bytes) {
        int slot = next_send_;
        VIP_DESCRIPTOR *d = next_send_desc();
        char *buf = send_buf(slot);
        buf[0] = char(kind);
        std::memset(&d->CS, 0, sizeof d->CS);
        d->CS.Control = VIP_CONTROL_OP_SENDRECV;
        d->CS.SegCount = 1;
        d->CS.Length = VIP_UINT32(bytes);
        d->DS[0].Local.Data.Address = buf;
        d->DS[0].Local.Handle = mh_;
        d->DS[0].Local.Length = VIP_UINT32(bytes);
        check(VipPostSend(vi_, d, mh_), "VipPostSend");
    }
    // One RDMA-write descriptor: `bytes` (at most chunk_) at offset `off` of the bulk buffers.
    void post_rdma(std::size_t off, std::size_t bytes) {
        VIP_DESCRIPTOR *d = next_send_desc();
        std::memset(&d->CS, 0, sizeof d->CS);
        d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
        d->CS.SegCount = 2; // the address segment and one data segment
        d->CS.Length = VIP_UINT32(bytes);
        d->DS[0].Remote.Data.AddressBits = peer_.rdma_addr + off;
        d->DS[0].Remote.Handle = peer_.rdma_handle;
        d->DS[0].Remote.Reserved = 0;
        d->DS[1].Local.Data.Address = bulk_src() + off;
        d->DS[1].Local.Handle = mh_;
        d->DS[1].Local.Length = VIP_UINT32(bytes);
        check(VipPostSend(vi_, d, mh_), "VipPostSend (RDMA write)");
    }
    // Reaps completed sends: all of them (block), or at least one.
    void reap_sends(bool all) {
        std::uint64_t start = ticks();
        double deadline = timeout_ns();
        while (outstanding_ > 0) {
            VIP_DESCRIPTOR *d = nullptr;
            VIP_RETURN rc = VipSendDone(vi_, &d);
            if (rc == VIP_SUCCESS) {
                vipl_wait::progress(wait_);
                check_status(d, "send");
                --outstanding_;
                if (!all) return;
                continue;
            }
            if (rc != VIP_NOT_DONE) check(rc, "VipSendDone");
            vipl_wait::idle_yield(wait_);
            if (ticks_to_ns(ticks() - start) > deadline)
                throw std::runtime_error("vi: sends did not complete in time (is the peer alive?)");
        }
    }
    VIP_DESCRIPTOR *wait_recv() {
        std::uint64_t start = ticks();
        double deadline = timeout_ns();
        for (unsigned spins = 0;; ++spins) {
            VIP_DESCRIPTOR *d = nullptr;
            VIP_RETURN rc = VipRecvDone(vi_, &d);
            if (rc == VIP_SUCCESS) {
                vipl_wait::progress(wait_);
                check_status(d, "receive");
                return d;
            }
            if (rc != VIP_NOT_DONE) check(rc, "VipRecvDone");
            vipl_wait::idle_yield(wait_);
            if ((spins & 1023) == 0 && ticks_to_ns(ticks() - start) > deadline)
                throw std::runtime_error("vi: no message from the peer in time (is it alive?)");
        }
    }
    void repost(VIP_DESCRIPTOR *d) {
        int i = int((reinterpret_cast<char *>(d) - reinterpret_cast<char *>(recv_desc(0))) / kDescSlot);
        std::memset(&d->CS, 0, sizeof d->CS);
        d->CS.SegCount = 1;
        d->CS.Length = kSmall;
        d->DS[0].Local.Data.Address = recv_buf(i);
        d->DS[0].Local.Handle = mh_;
        d->DS[0].Local.Length = kSmall;
        check(VipPostRecv(vi_, d, mh_), "VipPostRecv");
    }
    static void check_status(const VIP_DESCRIPTOR *d, const char *what) {
        if (d->CS.Status & VIP_STATUS_ERROR_MASK) {
            char buf[200];
            throw std::runtime_error(fmt::format("vi: {} completed with an error: {}", what,
                                                 VipxStatusString(d->CS.Status, buf, sizeof buf)));
        }
    }

    VIP_NIC_HANDLE nic_ = nullptr;
    VIP_PROTECTION_HANDLE ptag_ = nullptr;
    VIP_VI_HANDLE vi_ = nullptr;
    VIP_MEM_HANDLE mh_ = 0;
    bool registered_ = false, connected_ = false;
    char *base_ = nullptr;
    bool nic_mem_ = false; // base_ is VipxAllocMem memory (freed with VipxFreeMem)
    // How a wait gives the CPU away (VIASTACK_WAIT, the policy AM and Split-C
    // use): a window of polls, then sched_yield, so that two ranks that share a
    // CPU on a busy machine take turns instead of each spinning out its slice.
    vipl_wait::WaitState wait_;
    int next_send_ = 0, outstanding_ = 0;
    VIP_DESCRIPTOR *rtt_unposted_ =
        nullptr;                // the client's last round trip's receive, reposted in the next (rtt_client)
    std::size_t chunk_ = kBulk; // bytes per RDMA-write descriptor: min(NIC MaxTransferSize, kBulk)
    PeerInfo peer_{};
    std::string nic_name_;
};

ViLayer::ViLayer(const Job &job, const LayerOptions &opt) {
    try {
        check(VipOpenNic(opt.device.empty() ? nullptr : opt.device.c_str(), &nic_), "VipOpenNic");
        VIP_NIC_ATTRIBUTES na{};
        check(VipQueryNic(nic_, &na), "VipQueryNic");
        nic_name_ = na.Name;
        if (na.MaxTransferSize < kSmall)
            throw std::runtime_error(fmt::format("vi: the NIC's MaxTransferSize {} is below logp's {}-byte messages",
                                                 na.MaxTransferSize, kSmall));
        chunk_ = std::min<std::size_t>(na.MaxTransferSize, kBulk);
        if (na.MaxDescriptorsPerQueue < VIP_ULONG(kRecv))
            throw std::runtime_error(fmt::format("vi: the NIC allows {} descriptors per queue, logp needs {}",
                                                 na.MaxDescriptorsPerQueue, kRecv));
        vipl_wait::Mode mode;
        if (!vipl_wait::mode_from_env(&mode))
            throw std::runtime_error(fmt::format("vi: VIASTACK_WAIT must be {}", vipl_wait::kAllowed));
        vipl_wait::init(wait_, mode, job.size());
        check(VipCreatePtag(nic_, &ptag_), "VipCreatePtag");
        // The region from the NIC's allocator (VipxAllocMem), as ucp_put_bw's
        // buffers come from ucp_mem_map: on nicfw the target's NIC then moves a
        // bulk write with one memcpy rather than cross-memory attach.  Plain
        // memory if the provider has no allocator, or with LOGP_VI_PLAIN_SOURCE=1.
        const std::size_t bytes = (region_bytes() + 4095) / 4096 * 4096;
        const char *plain = std::getenv("LOGP_VI_PLAIN_SOURCE");
        VIP_PVOID mem = nullptr;
        if ((!plain || std::strcmp(plain, "1") != 0) && VipxAllocMem(nic_, VIP_ULONG(bytes), &mem) == VIP_SUCCESS)
            nic_mem_ = true;
        else mem = std::aligned_alloc(4096, bytes);
        base_ = static_cast<char *>(mem);
        if (!base_) throw std::runtime_error("vi: out of memory for the registered region");
        std::memset(base_, 0, region_bytes());
        VIP_MEM_ATTRIBUTES ma{ptag_, VIP_TRUE, VIP_FALSE};
        check(VipRegisterMem(nic_, base_, region_bytes(), &ma, &mh_), "VipRegisterMem");
        registered_ = true;
        VIP_VI_ATTRIBUTES va{};
        va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
        va.MaxTransferSize = VIP_ULONG(chunk_);
        va.QoS = nullptr;
        va.Ptag = ptag_;
        va.EnableRdmaWrite = VIP_TRUE;
        va.EnableRdmaRead = VIP_FALSE;
        check(VipCreateVi(nic_, &va, nullptr, nullptr, &vi_), "VipCreateVi");
        for (int i = 0; i < kRecv; ++i) repost(recv_desc(i));

        PeerInfo mine{};
        mine.addr_len = VIP_UINT16(std::min<unsigned>(na.NicAddressLen, VIP_MAX_HOST_ADDRESS_LEN));
        std::memcpy(mine.addr, na.LocalNicAddress, mine.addr_len);
        mine.rdma_addr = reinterpret_cast<VIP_UINT64>(rdma_target());
        mine.rdma_handle = mh_;
        auto all = job.allgather(&mine, sizeof mine);
        std::memcpy(&peer_, all.data() + sizeof(PeerInfo) * std::size_t(1 - job.rank()), sizeof peer_);

        static const char kDisc[] = "logp-vi";
        const std::size_t dlen = sizeof kDisc - 1;
        std::vector<unsigned char> local_buf(VIP_NET_ADDRESS_SIZE(mine.addr_len, dlen));
        std::vector<unsigned char> remote_buf(
            VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN));
        auto *local = reinterpret_cast<VIP_NET_ADDRESS *>(local_buf.data());
        auto *remote = reinterpret_cast<VIP_NET_ADDRESS *>(remote_buf.data());
        local->HostAddressLen = mine.addr_len;
        local->DiscriminatorLen = dlen;
        std::memcpy(local->HostAddress, mine.addr, mine.addr_len);
        std::memcpy(local->HostAddress + mine.addr_len, kDisc, dlen);
        VIP_VI_ATTRIBUTES remote_attr{};
        if (job.rank() == 1) { // server
            VIP_CONN_HANDLE conn = nullptr;
            check(VipConnectWait(nic_, local, 20000, remote, &remote_attr, &conn), "VipConnectWait");
            check(VipConnectAccept(conn, vi_), "VipConnectAccept");
        } else {
            remote->HostAddressLen = peer_.addr_len;
            remote->DiscriminatorLen = dlen;
            std::memcpy(remote->HostAddress, peer_.addr, peer_.addr_len);
            std::memcpy(remote->HostAddress + peer_.addr_len, kDisc, dlen);
            check(VipConnectRequest(vi_, local, remote, 20000, &remote_attr), "VipConnectRequest");
        }
        connected_ = true;
        job.barrier(); // both ends connected before the first message
    } catch (...) {
        this->~ViLayer();
        throw;
    }
}

ViLayer::~ViLayer() {
    if (vi_) {
        if (connected_) {
            try {
                reap_sends(true);
            } catch (...) {}
            VipDisconnect(vi_);
        }
        VIP_DESCRIPTOR *d = nullptr;
        while (VipRecvDone(vi_, &d) == VIP_SUCCESS) { // flushed receives
        }
        VipDestroyVi(vi_);
        vi_ = nullptr;
    }
    if (registered_) VipDeregisterMem(nic_, base_, mh_);
    registered_ = false;
    if (ptag_) VipDestroyPtag(nic_, ptag_);
    ptag_ = nullptr;
    if (nic_mem_) VipxFreeMem(nic_, base_);
    else std::free(base_);
    base_ = nullptr;
    if (nic_) VipCloseNic(nic_);
    nic_ = nullptr;
}

} // namespace

std::unique_ptr<Layer> make_vi_layer(const Job &job, const LayerOptions &opt) {
    return std::make_unique<ViLayer>(job, opt);
}

ProviderFacts query_vipl_provider(const LayerOptions &opt) {
    ProviderFacts f;
    VIP_NIC_HANDLE nic = nullptr;
    VIP_RETURN rc = VipOpenNic(opt.device.empty() ? nullptr : opt.device.c_str(), &nic);
    if (rc != VIP_SUCCESS) {
        f.error =
            fmt::format("VipOpenNic({}) failed: {}", opt.device.empty() ? "default" : opt.device, VipxReturnString(rc));
        return f;
    }
    VIP_NIC_ATTRIBUTES na{};
    if (VipQueryNic(nic, &na) == VIP_SUCCESS) {
        f.device = na.Name;
        f.provider = f.device.rfind("nicfw", 0) == 0 ? "nicfw" : "verbs";
    }
    VipCloseNic(nic);
    return f;
}

} // namespace logp
