// layer_fm.cpp - Illinois Fast Messages 2.x over VIA (fm.h only).  The short
// message is FM 1.x's minimal one, FM_send_4 (16 bytes to a buffer handler),
// as in the ping-pong of Pakin, Lauria, Chien [FM1]:
//
//   round trip        FM_send_4 -> echo handler FM_send_4 back -> reply handler
//                     (RTT/2 = median round trip / 2, BIP's method)
//   burst message     FM_send_4 to a counting handler, confirmed by one FM_send_4 back
//   o_r               the one FM_extract that runs the waiting message's handler
//   bulk              FM 2.x: FM_begin_message + one FM_send_piece + FM_end_message
//                     of n bytes; the receiving handler FM_receives the whole
//                     message into its buffer (from VIASTACK_FM_RDMA_MIN on, FM
//                     writes the payload there by RDMA: layer interleaving)
// FM_finalize leaves the vipl_boot job alone, so this layer may come before others.
#include "bulk_buffers.hpp"
#include "layers.hpp"
#include "timer.hpp"

#include "fm.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace logp {
namespace {

constexpr unsigned kSink = 1, kEcho = 2, kReply = 3, kConfirm = 4, kBulk = 5; // handler ids
constexpr std::size_t kBulkMax = 1 << 20;

// Handlers see no user context: the one live FM layer's state is global.
volatile long g_sunk = 0, g_echoed = 0, g_replies = 0, g_confirms = 0, g_bulk = 0;
char *g_bulk_buf = nullptr;  // the bulk destination
std::size_t g_bulk_len = 0;  // the length of the bulk messages of the current stream
int g_handler_error = FM_OK; // an FM call that failed inside a handler

void sink_handler(void *, unsigned, unsigned) { g_sunk = g_sunk + 1; }
void reply_handler(void *, unsigned, unsigned) { g_replies = g_replies + 1; }
void confirm_handler(void *, unsigned, unsigned) { g_confirms = g_confirms + 1; }
void echo_handler(void *buf, unsigned, unsigned sender) {
    const int *w = static_cast<const int *>(buf);
    g_echoed = g_echoed + 1;
    int rc = FM_send_4(sender, reply_handler, w[0], w[1], w[2], w[3]);
    if (rc < 0) g_handler_error = rc;
}
int bulk_handler(FM_stream *stream, unsigned) {
    // The stream is exactly the message: one FM_receive of all of it.  Its
    // length is known to the measurement (the buffer holds the largest).
    int rc = FM_receive(g_bulk_buf, stream, unsigned(g_bulk_len));
    if (rc < 0) g_handler_error = rc;
    g_bulk = g_bulk + 1;
    return FM_CONTINUE;
}

double timeout_ns() {
    const char *e = std::getenv("LOGP_TIMEOUT_S");
    double s = e ? std::atof(e) : 0;
    return (s > 0 ? s : 30.0) * 1e9;
}

void check(int rc, const char *what) {
    if (rc < 0) throw std::runtime_error(fmt::format("fm: {} failed: {}", what, FM_error_name(rc)));
}

class FmLayer final : public Layer {
public:
    FmLayer(const Job &job, const LayerOptions &opt);
    ~FmLayer() override;

    std::string id() const override { return "fm"; }
    std::string description() const override {
        return "Fast Messages 2.x over VIA (FM_send_4, 16 bytes; bulk: FM_begin_message/FM_send_piece/FM_receive)";
    }
    int short_burst_max() const override { return 4; } // half FM's default 8 credits
    int long_burst_min() const override { return 32; }
    int max_burst() const override { return 128; }

    void rtt_client(std::size_t) override {
        long before = g_replies;
        check(FM_send_4(peer_, echo_handler, 1, 2, 3, 4), "FM_send_4");
        wait_for(g_replies, before + 1, "reply");
    }
    void rtt_server_series(std::size_t, int n) override { wait_for(g_echoed, g_echoed + n, "request"); }

    void burst_send_one() override { check(FM_send_4(peer_, sink_handler, 1, 2, 3, 4), "FM_send_4"); }
    void burst_sender_finish(int) override {
        wait_for(g_confirms, confirms_ + 1, "confirmation");
        ++confirms_;
    }
    void burst_receive(int m) override {
        sunk_ += m;
        wait_for(g_sunk, sunk_, "burst message");
        check(FM_send_4(peer_, confirm_handler, 0, 0, 0, 0), "FM_send_4 (confirm)");
    }

    void recv_probe_send() override {
        check(FM_send_4(peer_, sink_handler, 1, 2, 3, 4), "FM_send_4");
        wait_for(g_confirms, confirms_ + 1, "confirmation");
        ++confirms_;
    }
    double recv_probe_receive(double settle_ns) override {
        spin_ns(settle_ns);
        ++sunk_;
        std::uint64_t start = ticks();
        const double deadline = timeout_ns();
        for (;;) {
            long sw = context_switches();
            std::uint64_t t0 = ticks();
            int rc = FM_extract(FM_EXTRACT_ALL);
            std::uint64_t t1 = ticks();
            check(rc, "FM_extract");
            if (g_sunk >= sunk_) {
                bool lost_cpu = context_switches() != sw;
                check(FM_send_4(peer_, confirm_handler, 0, 0, 0, 0), "FM_send_4 (confirm)");
                return lost_cpu ? -ticks_to_ns(t1 - t0) : ticks_to_ns(t1 - t0);
            }
            if (ticks_to_ns(t1 - start) > deadline) throw std::runtime_error("fm: the probe message never arrived");
        }
    }

    bool has_bulk() const override { return true; }
    std::string bulk_method() const override {
        return "FM_begin_message + FM_send_piece + FM_end_message; the handler FM_receives into its buffer";
    }
    std::size_t bulk_max_bytes() const override { return kBulkMax; }
    double bulk_stream_client(std::size_t bytes, int count) override {
        std::uint64_t t0 = ticks();
        for (int i = 0; i < count; ++i) {
            FM_stream *s = FM_begin_message(peer_, unsigned(bytes), bulk_handler);
            if (!s) check(FM_last_error(), "FM_begin_message");
            check(FM_send_piece(s, buf_.src(), unsigned(bytes)), "FM_send_piece");
            check(FM_end_message(s), "FM_end_message");
        }
        wait_for(g_confirms, confirms_ + 1, "confirmation");
        ++confirms_;
        return ticks_to_ns(ticks() - t0);
    }
    void bulk_stream_server(std::size_t bytes, int count) override {
        g_bulk_len = bytes;
        bulk_ += count;
        wait_for(g_bulk, bulk_, "bulk message");
        check(FM_send_4(peer_, confirm_handler, 0, 0, 0, 0), "FM_send_4 (confirm)");
    }

private:
    void close();
    void wait_for(volatile long &counter, long target, const char *what) {
        std::uint64_t start = ticks();
        const double deadline = timeout_ns();
        for (unsigned spins = 0; counter < target; ++spins) {
            check(FM_extract(FM_EXTRACT_ALL), "FM_extract");
            if (g_handler_error != FM_OK) {
                int rc = g_handler_error;
                g_handler_error = FM_OK;
                check(rc, "a call inside a handler");
            }
            if ((spins & 255) == 0 && ticks_to_ns(ticks() - start) > deadline)
                throw std::runtime_error(fmt::format("fm: no {} from the peer in time (is it alive?)", what));
        }
    }

    unsigned peer_ = 0;
    bool init_ = false;
    BulkBuffers buf_; // FM_alloc_mem memory (LOGP_FM_PLAIN_MEMORY=1: heap)
    long confirms_ = 0, sunk_ = 0, bulk_ = 0;
};

FmLayer::FmLayer(const Job &job, const LayerOptions &opt) {
    if (!opt.device.empty()) setenv("VIASTACK_FM_NIC", opt.device.c_str(), 0); // the NIC FM_initialize opens
    g_sunk = 0;
    g_echoed = 0;
    g_replies = 0;
    g_confirms = 0;
    g_bulk = 0;
    g_handler_error = FM_OK;
    try {
        check(FM_set_buffer_handler(kSink, sink_handler), "FM_set_buffer_handler");
        check(FM_set_buffer_handler(kEcho, echo_handler), "FM_set_buffer_handler");
        check(FM_set_buffer_handler(kReply, reply_handler), "FM_set_buffer_handler");
        check(FM_set_buffer_handler(kConfirm, confirm_handler), "FM_set_buffer_handler");
        check(FM_set_handler(kBulk, bulk_handler), "FM_set_handler");
        check(FM_initialize(), "FM_initialize");
        init_ = true;
        buf_ = BulkBuffers(kBulkMax, FM_alloc_mem, FM_free_mem, "LOGP_FM_PLAIN_MEMORY");
        g_bulk_buf = buf_.dst();
        if (FM_numnodes() != unsigned(job.size()) || FM_nodeid() != unsigned(job.rank()))
            throw std::runtime_error(fmt::format("fm: FM sees node {} of {}, the job rank {} of {}", FM_nodeid(),
                                                 FM_numnodes(), job.rank(), job.size()));
        peer_ = job.size() > 1 ? unsigned(1 - job.rank()) : 0;
        job.barrier();
    } catch (...) {
        close(); // the destructor does not run for a constructor that throws
        throw;
    }
}

FmLayer::~FmLayer() { close(); }

void FmLayer::close() {
    buf_.reset();
    if (init_) FM_finalize();
    init_ = false;
    g_bulk_buf = nullptr;
}

} // namespace

std::unique_ptr<Layer> make_fm_layer(const Job &job, const LayerOptions &opt) {
    return std::make_unique<FmLayer>(job, opt);
}

} // namespace logp
