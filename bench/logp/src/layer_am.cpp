// layer_am.cpp - Active Messages over VIA (am.h), in either AMVIA layout:
// "am-v3" (one VI per MAP, the paper's final design) or "am-v1" (three VIs
// per MAP).  Every message is the paper's minimal AM message: AM_Request4,
// 16 bytes of arguments.
//
//   round trip        AM_Request4 -> handler AM_Reply4 -> reply handler
//   burst message     AM_Request4 to an empty handler (the layer returns the
//                     credit with its own reply), confirmed by one request back
//   o_r               the one AM_Poll that runs the waiting request's handler
//   bulk              AM_RequestXferAsync4 of n bytes into the peer's segment
//                     (LOGP_AM_BLOCKING_XFER=1: AM_RequestXfer4), from
//                     AMVIA_AllocMem memory into an AMVIA_AllocMem segment
//                     (on nicfw one memcpy by the sender's NIC); above
//                     AM_MaxLong() (1 MB) a message is several requests of
//                     AM_MaxLong() bytes at consecutive segment offsets
//   breakdown         the round trip above (Table 3: a short request-reply)
#include "am.h"
#include "breakdown.hpp"
#include "layers.hpp"
#include "timer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace logp {
namespace {

constexpr handler_t kSink = 1, kEchoRequest = 2, kEchoReply = 3, kXfer = 4, kConfirm = 5, kSinkAck = 6;
constexpr std::size_t kBulkMax = 1 << 20; // largest bulk message
constexpr std::size_t kSegBytes = kBulkMax;
constexpr int kPeer = 0; // translation-table index of the other rank

// Handlers see no user context: the one live AM layer's counters are globals.
volatile long g_sunk = 0, g_echoed = 0, g_replies = 0, g_xfers = 0, g_confirms = 0;

// LOGP_AM_REPLY_EACH=1: the burst's sink acknowledges
// every request with a reply, the paper's workload ([Begel01] §7.4: "In AM,
// send requests must be acknowledged by a reply"; the sender's NIC receives one
// short message per message sent).  Otherwise AM returns the credits in batches.
// `logp --profile` with a cost-model profile sets it unless it is set
// (docs/cost-model.md).
bool g_reply_each = false;
void sink_handler(void *token, int32_t, int32_t, int32_t, int32_t) {
    g_sunk = g_sunk + 1;
    if (g_reply_each) AM_Reply4(token, kSinkAck, 0, 0, 0, 0);
}
void sink_ack_handler(void *, int32_t, int32_t, int32_t, int32_t) {}
void echo_request_handler(void *token, int32_t a0, int32_t a1, int32_t a2, int32_t a3) {
    g_echoed = g_echoed + 1;
    AM_Reply4(token, kEchoReply, a0, a1, a2, a3);
}
void echo_reply_handler(void *, int32_t, int32_t, int32_t, int32_t) { g_replies = g_replies + 1; }
void xfer_handler(void *, void *, size_t, int32_t, int32_t, int32_t, int32_t) { g_xfers = g_xfers + 1; }
void confirm_handler(void *, int32_t, int32_t, int32_t, int32_t) { g_confirms = g_confirms + 1; }

double timeout_ns() {
    const char *e = std::getenv("LOGP_TIMEOUT_S");
    double s = e ? std::atof(e) : 0;
    return (s > 0 ? s : 30.0) * 1e9;
}

void check(int rc, const char *what) {
    if (rc != AM_OK) throw std::runtime_error(fmt::format("am: {} failed: {}", what, AMVIA_ErrorName(rc)));
}

class AmLayer final : public Layer {
public:
    AmLayer(const Job &job, const LayerOptions &opt, int layout);
    ~AmLayer() override;

    std::string id() const override { return layout_ == 1 ? "am-v1" : "am-v3"; }
    std::string description() const override {
        return fmt::format("AM-2 over VIA, AMVIAv{} layout (AM_Request4, 16-byte arguments)", layout_);
    }
    int short_burst_max() const override { return 4; } // half the k = 8 request credits
    int long_burst_min() const override { return 32; }
    int max_burst() const override { return 128; }

    void rtt_client(std::size_t) override {
        long before = g_replies;
        check(AM_Request4(ep_, kPeer, kEchoRequest, 1, 2, 3, 4), "AM_Request4");
        wait_for(g_replies, before + 1, "reply");
    }
    void rtt_server_series(std::size_t, int n) override {
        long target = g_echoed + n;
        wait_for(g_echoed, target, "request");
    }

    void burst_send_one() override { check(AM_Request4(ep_, kPeer, kSink, 1, 2, 3, 4), "AM_Request4"); }
    void burst_sender_finish(int) override {
        wait_for(g_confirms, confirms_ + 1, "confirmation");
        ++confirms_;
    }
    void burst_receive(int m) override {
        sunk_ += m;
        wait_for(g_sunk, sunk_, "burst message");
        check(AM_Request4(ep_, kPeer, kConfirm, 0, 0, 0, 0), "AM_Request4 (confirm)");
    }

    void recv_probe_send() override {
        check(AM_Request4(ep_, kPeer, kSink, 1, 2, 3, 4), "AM_Request4");
        wait_for(g_confirms, confirms_ + 1, "confirmation");
        ++confirms_;
    }
    double recv_probe_receive(double settle_ns) override {
        spin_ns(settle_ns);
        ++sunk_;
        const bool instr = vipl_instr_enabled();
        std::uint64_t start = ticks();
        const double deadline = timeout_ns();
        for (;;) {
            long sw = context_switches();
            const double sent0 = instr ? send_path_ns() : 0; // the implicit reply is sent inside AM_Poll
            std::uint64_t t0 = ticks();
            check(AM_Poll(eb_), "AM_Poll");
            std::uint64_t t1 = ticks();
            if (g_sunk >= sunk_) {
                reply_ns_ = instr ? send_path_ns() - sent0 : 0;
                bool lost_cpu = context_switches() != sw;
                check(AM_Request4(ep_, kPeer, kConfirm, 0, 0, 0, 0), "AM_Request4 (confirm)");
                return lost_cpu ? -ticks_to_ns(t1 - t0) : ticks_to_ns(t1 - t0);
            }
            if (ticks_to_ns(t1 - start) > deadline) throw std::runtime_error("am: the probe request never arrived");
        }
    }

    double recv_probe_reply_ns() const override { return reply_ns_; }

    bool has_bulk() const override { return true; }
    std::string bulk_method() const override {
        return blocking_xfer_ ? "AM_RequestXfer4 into the peer's segment (above AM_MaxLong(), several requests)"
                              : "AM_RequestXferAsync4 into the peer's segment (above AM_MaxLong(), several requests)";
    }
    std::size_t bulk_max_bytes() const override { return kBulkMax; }
    static std::size_t requests_per_message(std::size_t bytes) {
        const std::size_t chunk = AM_MaxLong();
        return (bytes + chunk - 1) / chunk;
    }
    double bulk_stream_client(std::size_t bytes, int count) override {
        const std::size_t chunk = AM_MaxLong();
        std::uint64_t t0 = ticks();
        for (int i = 0; i < count; ++i)
            for (std::size_t off = 0; off < bytes; off += chunk) {
                const std::size_t n = std::min(chunk, bytes - off);
                if (blocking_xfer_) {
                    check(AM_RequestXfer4(ep_, kPeer, off, kXfer, src_ + off, n, 1, 2, 3, 4), "AM_RequestXfer4");
                    continue;
                }
                // Non-blocking, as ucp_put_bw's puts: the source stays unchanged
                // until the confirmation below, which follows every handler.
                int rc;
                while ((rc = AM_RequestXferAsync4(ep_, kPeer, off, kXfer, src_ + off, n, 1, 2, 3, 4)) == AM_ERR_IN_USE)
                    check(AM_Poll(eb_), "AM_Poll");
                check(rc, "AM_RequestXferAsync4");
            }
        wait_for(g_confirms, confirms_ + 1, "confirmation");
        ++confirms_;
        return ticks_to_ns(ticks() - t0);
    }
    void bulk_stream_server(std::size_t bytes, int count) override {
        xfers_ += long(count) * long(requests_per_message(bytes));
        wait_for(g_xfers, xfers_, "bulk message");
        check(AM_Request4(ep_, kPeer, kConfirm, 0, 0, 0, 0), "AM_Request4 (confirm)");
    }

    std::string breakdown_name() const override { return layout_ == 3 ? "am-request-reply" : ""; }
    void breakdown_client() override { rtt_client(16); }
    void breakdown_server_series(int n) override { rtt_server_series(16, n); }

private:
    void wait_for(volatile long &counter, long target, const char *what) {
        std::uint64_t start = ticks();
        const double deadline = timeout_ns();
        for (unsigned spins = 0; counter < target; ++spins) {
            check(AM_Poll(eb_), "AM_Poll");
            if ((spins & 255) == 0 && ticks_to_ns(ticks() - start) > deadline)
                throw std::runtime_error(fmt::format("am: no {} from the peer in time (is it alive?)", what));
        }
    }

    int layout_;
    eb_t eb_ = nullptr;
    ep_t ep_ = nullptr;
    bool init_ = false;
    // The segment: AMVIA_AllocMem memory, as ucp_put_bw's target is
    // ucp_mem_map'd and VI's and Split-C's are VipxAllocMem memory (on nicfw
    // the sender's NIC then writes it with one memcpy); LOGP_AM_PLAIN_SEG=1:
    // heap memory (on nicfw cross-memory attach or the target NIC's pull).
    char *seg_ = nullptr;
    bool seg_allocated_ = false;
    std::vector<char> seg_plain_;
    char *src_ = nullptr; // AMVIA_AllocMem memory, else src_plain_
    // LOGP_AM_BLOCKING_XFER=1: the bulk stream uses the blocking AM_RequestXfer4
    // (each transfer waits until the target's NIC has read the source).
    bool blocking_xfer_ = [] {
        const char *v = std::getenv("LOGP_AM_BLOCKING_XFER");
        return v && std::strcmp(v, "1") == 0;
    }();
    bool src_allocated_ = false;
    std::vector<char> src_plain_;
    long confirms_ = 0, sunk_ = 0, xfers_ = 0;
    double reply_ns_ = 0; // send path inside the last timed probe receive (instrumented series)
};

AmLayer::AmLayer(const Job &job, const LayerOptions &opt, int layout) : layout_(layout) {
    if (!opt.device.empty()) setenv("VIASTACK_AM_NIC", opt.device.c_str(), 0); // the NIC AM_Init opens
    g_sunk = 0;
    g_echoed = 0;
    g_replies = 0;
    g_xfers = 0;
    g_confirms = 0;
    try {
        check(AM_Init(), "AM_Init");
        init_ = true;
        check(AMVIA_SetLayout(layout), "AMVIA_SetLayout");
        check(AM_AllocateBundle(AM_SEQ, &eb_), "AM_AllocateBundle");
        en_t mine{};
        check(AM_AllocateEndpoint(eb_, &ep_, &mine), "AM_AllocateEndpoint");
        const char *plain_seg = std::getenv("LOGP_AM_PLAIN_SEG");
        if (!plain_seg || std::strcmp(plain_seg, "1") != 0) seg_ = static_cast<char *>(AMVIA_AllocMem(kSegBytes));
        seg_allocated_ = seg_ != nullptr;
        if (!seg_) {
            seg_plain_.assign(kSegBytes, 0);
            seg_ = seg_plain_.data();
        }
        check(AM_SetSeg(ep_, seg_, kSegBytes), "AM_SetSeg");
        // The bulk source: memory the NIC moves with one memcpy (as ucp_mem_map'd
        // memory is for UCX's puts); plain memory if the provider has none.
        // LOGP_AM_PLAIN_SOURCE=1: plain heap memory instead (cross-memory attach on nicfw).
        const char *plain = std::getenv("LOGP_AM_PLAIN_SOURCE");
        if (!plain || std::strcmp(plain, "1") != 0) src_ = static_cast<char *>(AMVIA_AllocMem(kBulkMax));
        src_allocated_ = src_ != nullptr;
        if (!src_) {
            src_plain_.assign(kBulkMax, 'x');
            src_ = src_plain_.data();
        }
        std::memset(src_, 'x', kBulkMax);
        const tag_t tag = 0x6c6f6770 + tag_t(layout); // "logp"
        check(AM_SetTag(ep_, tag), "AM_SetTag");
        check(AM_SetHandler(ep_, kSink, sink_handler), "AM_SetHandler");
        check(AM_SetHandler(ep_, kEchoRequest, echo_request_handler), "AM_SetHandler");
        check(AM_SetHandler(ep_, kEchoReply, echo_reply_handler), "AM_SetHandler");
        check(AM_SetHandler(ep_, kXfer, xfer_handler), "AM_SetHandler");
        check(AM_SetHandler(ep_, kConfirm, confirm_handler), "AM_SetHandler");
        check(AM_SetHandler(ep_, kSinkAck, sink_ack_handler), "AM_SetHandler");
        const char *each = std::getenv("LOGP_AM_REPLY_EACH");
        g_reply_each = each && std::strcmp(each, "1") == 0;
        auto all = job.allgather(&mine, sizeof mine);
        en_t peer;
        std::memcpy(&peer, all.data() + sizeof(en_t) * std::size_t(1 - job.rank()), sizeof peer);
        check(AM_Map(ep_, kPeer, peer, tag), "AM_Map");
        job.barrier();
    } catch (...) {
        this->~AmLayer();
        throw;
    }
}

AmLayer::~AmLayer() {
    if (ep_) AM_FreeEndpoint(ep_);
    if (eb_) AM_FreeBundle(eb_);
    ep_ = nullptr;
    eb_ = nullptr;
    if (src_allocated_) AMVIA_FreeMem(src_);
    src_allocated_ = false;
    if (seg_allocated_) AMVIA_FreeMem(seg_); // its endpoint is gone
    seg_allocated_ = false;
    if (init_) AM_Terminate();
    init_ = false;
}

} // namespace

std::unique_ptr<Layer> make_am_layer(const Job &job, const LayerOptions &opt, int layout) {
    return std::make_unique<AmLayer>(job, opt, layout);
}

} // namespace logp
