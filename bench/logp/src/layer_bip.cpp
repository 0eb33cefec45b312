// layer_bip.cpp - BIP over VIA (bip.h only), Prylli and Tourancheau [BIP].
// Each kind of message has its own tag, so the queues never mix:
//
//   round trip        bip_send of a 16-byte message, bip_recv of the echo
//                     (RTT/2 = median round trip / 2, the paper's own method)
//   burst message     bip_send of 16 bytes (copied into the receiver's small
//                     buffers; blocks only when they are full), confirmed by one
//                     message back once the receiver has taken all of them
//   o_r               the one bip_irecv / bip_rtest call that completes the
//                     receive of a message that has already arrived
//   bulk              bip_send / bip_recv of n bytes: copied up to
//                     bip_eager_max(), rendezvous and RDMA write into the posted
//                     receive buffer above it (fragment size by length)
// bip_finalize leaves the vipl_boot job alone, so this layer may come before others.
#include "bulk_buffers.hpp"
#include "layers.hpp"
#include "timer.hpp"

#include "bip.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace logp {
namespace {

constexpr int kTagEcho = 1, kTagReply = 2, kTagSink = 3, kTagConfirm = 4, kTagBulk = 5;
constexpr std::size_t kShort = 16; // the short message (as AM's 16 bytes of arguments)
constexpr std::size_t kBulkMax = 1 << 20;

double timeout_ns() {
    const char *e = std::getenv("LOGP_TIMEOUT_S");
    double s = e ? std::atof(e) : 0;
    return (s > 0 ? s : 30.0) * 1e9;
}

int check(int rc, const char *what) {
    if (rc < 0) throw std::runtime_error(fmt::format("bip: {} failed: {}", what, bip_error_name(rc)));
    return rc;
}

class BipLayer final : public Layer {
public:
    BipLayer(const Job &job, const LayerOptions &opt);
    ~BipLayer() override { close(); }

    std::string id() const override { return "bip"; }
    std::string description() const override {
        return fmt::format("BIP over VIA (bip_send/bip_recv, 16 bytes; copied up to {} B, rendezvous + RDMA above)",
                           eager_max_);
    }
    int short_burst_max() const override { return 4; } // half BIP's default 8 small buffers per sender
    int long_burst_min() const override { return 32; }
    int max_burst() const override { return 128; }

    void rtt_client(std::size_t bytes) override {
        const std::size_t n = bytes <= kShort ? bytes : kShort;
        check(bip_send(peer_, kTagEcho, small_out_, n), "bip_send");
        check(bip_recv(kTagReply, small_in_, sizeof small_in_, nullptr), "bip_recv");
    }
    void rtt_server_series(std::size_t, int n) override {
        for (int i = 0; i < n; ++i) {
            std::size_t len = 0;
            check(bip_recv(kTagEcho, small_in_, sizeof small_in_, &len), "bip_recv");
            check(bip_send(peer_, kTagReply, small_in_, len), "bip_send");
        }
    }

    void burst_send_one() override { check(bip_send(peer_, kTagSink, small_out_, kShort), "bip_send"); }
    void burst_sender_finish(int) override {
        check(bip_recv(kTagConfirm, small_in_, sizeof small_in_, nullptr), "bip_recv (confirm)");
    }
    void burst_receive(int m) override {
        for (int i = 0; i < m; ++i) check(bip_recv(kTagSink, small_in_, sizeof small_in_, nullptr), "bip_recv");
        confirm();
    }

    void recv_probe_send() override {
        check(bip_send(peer_, kTagSink, small_out_, kShort), "bip_send");
        check(bip_recv(kTagConfirm, small_in_, sizeof small_in_, nullptr), "bip_recv (confirm)");
    }
    double recv_probe_receive(double settle_ns) override {
        spin_ns(settle_ns);
        std::uint64_t start = ticks();
        const double deadline = timeout_ns();
        bool posted = false;
        for (;;) {
            // Timed: the call that completes the receive (the irecv and its
            // first test when the message was already there).
            long sw = context_switches();
            std::uint64_t t0 = ticks();
            if (!posted) check(bip_irecv(kTagSink, small_in_, sizeof small_in_), "bip_irecv");
            int done = bip_rtest(nullptr, nullptr);
            std::uint64_t t1 = ticks();
            posted = true;
            check(done, "bip_rtest");
            if (done == 1) {
                bool lost_cpu = context_switches() != sw;
                confirm();
                return lost_cpu ? -ticks_to_ns(t1 - t0) : ticks_to_ns(t1 - t0);
            }
            if (ticks_to_ns(t1 - start) > deadline) {
                // A receive left pending would make bip_finalize refuse: the job ends on this error anyway.
                throw std::runtime_error("bip: the probe message never arrived");
            }
        }
    }

    bool has_bulk() const override { return true; }
    std::string bulk_method() const override {
        return fmt::format("bip_send / bip_recv (copied up to {} B, rendezvous + RDMA write above)", eager_max_);
    }
    std::size_t bulk_max_bytes() const override { return kBulkMax; }
    double bulk_stream_client(std::size_t bytes, int count) override {
        std::uint64_t t0 = ticks();
        for (int i = 0; i < count; ++i) check(bip_send(peer_, kTagBulk, buf_.src(), bytes), "bip_send");
        check(bip_recv(kTagConfirm, small_in_, sizeof small_in_, nullptr), "bip_recv (confirm)");
        return ticks_to_ns(ticks() - t0);
    }
    void bulk_stream_server(std::size_t bytes, int count) override {
        for (int i = 0; i < count; ++i) {
            std::size_t len = 0;
            check(bip_recv(kTagBulk, buf_.dst(), kBulkMax, &len), "bip_recv");
            if (len != bytes)
                throw std::runtime_error(fmt::format("bip: a bulk message of {} B arrived, {} B expected", len, bytes));
        }
        confirm();
    }

private:
    void confirm() { check(bip_send(peer_, kTagConfirm, small_out_, kShort), "bip_send (confirm)"); }
    void close() {
        buf_.reset();
        if (init_) bip_finalize();
        init_ = false;
    }

    int peer_ = 0;
    bool init_ = false;
    long eager_max_ = 0;
    char small_out_[kShort] = {1, 2, 3, 4};
    char small_in_[kShort] = {};
    BulkBuffers buf_; // bip_alloc_mem memory (LOGP_BIP_PLAIN_MEMORY=1: heap)
};

BipLayer::BipLayer(const Job &job, const LayerOptions &opt) {
    if (!opt.device.empty()) setenv("VIASTACK_BIP_NIC", opt.device.c_str(), 0); // the NIC bip_init opens
    try {
        check(bip_init(), "bip_init");
        init_ = true;
        buf_ = BulkBuffers(kBulkMax, bip_alloc_mem, bip_free_mem, "LOGP_BIP_PLAIN_MEMORY");
        if (bip_numnodes() != job.size() || bip_mynode() != job.rank())
            throw std::runtime_error(fmt::format("bip: BIP sees rank {} of {}, the job rank {} of {}", bip_mynode(),
                                                 bip_numnodes(), job.rank(), job.size()));
        peer_ = job.size() > 1 ? 1 - job.rank() : 0;
        eager_max_ = check(int(bip_eager_max(peer_)), "bip_eager_max");
        job.barrier();
    } catch (...) {
        close(); // the destructor does not run for a constructor that throws
        throw;
    }
}

} // namespace

std::unique_ptr<Layer> make_bip_layer(const Job &job, const LayerOptions &opt) {
    return std::make_unique<BipLayer>(job, opt);
}

} // namespace logp
