// layer_splitc.cpp - Split-C over VIA through the compiler-rt ABI
// (splitc_rt.h), the calls a Split-C translator emits.
//
//   round trip        splitc_read_4 of a remote int (synchronous read)
//   burst message     splitc_store_4 (one-way; acknowledged every k/2 stores by
//                     the runtime), confirmed by a store back after store_sync
//   o_r               the one splitc_poll that takes a waiting store
//   bulk              splitc_bulk_put of n bytes, splitc_sync at the end (which
//                     confirms all of the stream's RDMA puts with one request)
//   breakdown         splitc_get_4 + splitc_sync (Table 4: a Split-C get)
//   Figure 2          read, write, get, put, store of an int, single sender
// The target of a series serves with splitc_poll until the sender writes the
// series' epoch into its stop flag (a synchronous write, so it has landed).
// splitc_finalize leaves the job's boot service only when logp itself no longer
// holds it (vipl_boot_init/finalize count their users), so the layer can be
// opened and closed again for each round of the comparison with the peers.
#include "breakdown.hpp"
#include "layers.hpp"
#include "stats.hpp"
#include "timer.hpp"

#include "splitc_rt.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace logp {
namespace {

constexpr std::size_t kScalar = 0, kFlag = 64, kBulk = 4096;
constexpr std::size_t kBulkMax = 1 << 20;        // largest bulk_put (the runtime fragments it)
constexpr std::size_t kBlock = kBulk + kBulkMax; // this rank's part of the spread region
constexpr int kBatch = 64;                       // operations per timed batch (Figure 2 get/put/store)

std::string g_last_error;
void remember_error(splitc_error_t code, const char *message, void *) {
    g_last_error = fmt::format("{}: {}", splitc_error_string(code), message ? message : "");
}

double timeout_ns() {
    const char *e = std::getenv("LOGP_TIMEOUT_S");
    double s = e ? std::atof(e) : 0;
    return (s > 0 ? s : 30.0) * 1e9;
}

class SplitcLayer final : public Layer, public SplitcOpsSource {
public:
    SplitcLayer(const Job &job, const LayerOptions &opt);
    ~SplitcLayer() override;

    std::string id() const override { return "splitc"; }
    std::string description() const override {
        return fmt::format("Split-C over VIA (compiler-rt ABI), {} credits, store ack every {}", splitc_credits(),
                           splitc_store_ack_interval());
    }
    int short_burst_max() const override { return std::max(1, splitc_credits() / 2); }
    int long_burst_min() const override { return 4 * splitc_credits(); }
    int max_burst() const override { return 16 * splitc_credits(); }

    void rtt_client(std::size_t) override { sink_ += splitc_read_4(remote(kScalar)); }
    void rtt_client_done() override { release_peer(); }
    void rtt_server_series(std::size_t, int) override { serve_until_released(); }

    void burst_send_one() override { splitc_store_4(remote(kScalar), 7); }
    void burst_sender_finish(int) override { splitc_store_sync(4); } // the target's confirmation store
    void burst_receive(int m) override {
        splitc_store_sync(4 * std::size_t(m));
        splitc_store_4(remote(kScalar), 1);
    }

    void recv_probe_send() override {
        splitc_store_4(remote(kScalar), 7);
        splitc_store_sync(4);
    }
    double recv_probe_receive(double settle_ns) override {
        spin_ns(settle_ns);
        const bool instr = vipl_instr_enabled();
        std::uint64_t start = ticks();
        const double deadline = timeout_ns();
        for (;;) {
            long sw = context_switches();
            const double sent0 = instr ? send_path_ns() : 0; // acknowledgements and credits go out inside the poll
            std::uint64_t t0 = ticks();
            splitc_poll();
            std::uint64_t t1 = ticks();
            if (splitc_store_bytes_arrived() >= 4) {
                reply_ns_ = instr ? send_path_ns() - sent0 : 0;
                bool lost_cpu = context_switches() != sw;
                splitc_store_sync(4);
                splitc_store_4(remote(kScalar), 1);
                return lost_cpu ? -ticks_to_ns(t1 - t0) : ticks_to_ns(t1 - t0);
            }
            if (ticks_to_ns(t1 - start) > deadline) throw std::runtime_error("splitc: the probe store never arrived");
        }
    }

    double recv_probe_reply_ns() const override { return reply_ns_; }

    bool has_bulk() const override { return true; }
    std::string bulk_method() const override { return "splitc_bulk_put heap to heap, splitc_sync after the stream"; }
    std::size_t bulk_max_bytes() const override { return kBulkMax; }
    double bulk_stream_client(std::size_t bytes, int count) override {
        std::uint64_t t0 = ticks();
        // From this processor's own block of the spread array (the symmetric
        // heap) into the peer's: Split-C's common case of a bulk copy between
        // spread arrays, and registered memory on both sides as in ucp_put_bw.
        for (int i = 0; i < count; ++i) splitc_bulk_put(remote(kBulk), base_ + kBulk, bytes);
        splitc_sync();
        double ns = ticks_to_ns(ticks() - t0);
        release_peer();
        return ns;
    }
    void bulk_stream_server(std::size_t, int) override { serve_until_released(); }

    std::string breakdown_name() const override { return "splitc-get"; }
    void breakdown_client() override {
        splitc_get_4(&got_, remote(kScalar));
        splitc_sync();
    }
    void breakdown_client_done() override { release_peer(); }
    void breakdown_server_series(int) override { serve_until_released(); }

    std::vector<SplitcOp> measure_ops(const Job &job, int iterations, int warmup) override;

private:
    splitc_gptr_t remote(std::size_t off) const { return splitc_toglobal(peer_, base_ + off); }
    volatile std::uint32_t &flag() const { return *reinterpret_cast<volatile std::uint32_t *>(base_ + kFlag); }
    void release_peer() { splitc_write_4(remote(kFlag), ++epoch_); }
    void serve_until_released() {
        ++epoch_;
        std::uint64_t start = ticks();
        const double deadline = timeout_ns();
        for (unsigned spins = 0; flag() != epoch_; ++spins) {
            splitc_poll();
            if ((spins & 255) == 0 && ticks_to_ns(ticks() - start) > deadline)
                throw std::runtime_error("splitc: the sender never released this series (is it alive?)");
        }
    }
    template <class Op>
    SplitcOp time_op(const char *name, bool is_root, int reps, int warm, int batch, Op op);

    char *base_ = nullptr;
    int peer_ = 0;
    std::uint32_t epoch_ = 0;
    std::uint32_t got_ = 0;
    std::uint64_t sink_ = 0;
    double reply_ns_ = 0; // send path inside the last timed probe receive (instrumented series)
};

SplitcLayer::SplitcLayer(const Job &job, const LayerOptions &opt) {
    // The runtime opens VipOpenNic(NULL): the NIC is the default device of the
    // provider $VIPL_PROVIDER names.  That variable takes a provider ("nicfw",
    // "verbs"), not a device: setting it to "rxe0" made VipOpenNic fail with
    // VIP_INVALID_PARAMETER.  So the device picks its provider here (nicfw* is
    // the emulator, any other name an RDMA device), and Split-C runs on that
    // provider's default device (see the note in docs/logp.md).
    if (!opt.device.empty()) setenv("VIPL_PROVIDER", opt.device.rfind("nicfw", 0) == 0 ? "nicfw" : "verbs", 0);
    splitc_set_error_handler(remember_error, nullptr);
    int argc = 0;
    char **argv = nullptr;
    if (splitc_init(&argc, &argv) != 0)
        throw std::runtime_error("splitc: splitc_init failed: " +
                                 (g_last_error.empty() ? std::string("see stderr") : g_last_error));
    if (splitc_procs() != job.size() || splitc_myproc() != job.rank())
        throw std::runtime_error("splitc: the runtime's processors do not match the job");
    splitc_set_error_handler(nullptr, nullptr); // from here on, errors end the job loudly
    peer_ = 1 - job.rank();
    splitc_sptr_t s = splitc_all_spread_malloc(std::size_t(job.size()), kBlock);
    base_ = static_cast<char *>(splitc_sptr_addr(s));
    std::memset(base_ + kBulk, 'x', kBulkMax); // the bulk source (touched once, not timed)
    std::memset(base_, 0, kBlock);
    splitc_barrier();
}

SplitcLayer::~SplitcLayer() { splitc_finalize(); }

template <class Op>
SplitcOp SplitcLayer::time_op(const char *name, bool is_root, int reps, int warm, int batch, Op op) {
    SplitcOp out;
    out.op = name;
    std::vector<double> per_op;
    for (int r = 0; r < warm + reps; ++r) {
        std::uint64_t t0 = ticks();
        op();
        double ns = ticks_to_ns(ticks() - t0);
        if (r >= warm) per_op.push_back(ns / 1e3 / batch);
    }
    if (is_root && !per_op.empty()) {
        Summary s = summarize(per_op);
        out.us = s.median;
        out.spread = s.spread();
        out.status = {"measured",
                      batch > 1 ? fmt::format("batches of {} + completion", batch) : "one synchronous operation"};
    }
    return out;
}

std::vector<SplitcOp> SplitcLayer::measure_ops(const Job &job, int iterations, int warmup) {
    std::vector<SplitcOp> ops;
    const bool root = job.rank() == 0;
    const int reps = std::max(5, iterations / 4), warm = std::max(1, warmup / 4);
    const int batches = std::max(5, iterations / kBatch), bwarm = std::max(1, warmup / kBatch);
    splitc_gptr_t g = remote(kScalar);
    if (root) {
        ops.push_back(time_op("read", true, reps, warm, 1, [&] { sink_ += splitc_read_4(g); }));
        ops.push_back(time_op("write", true, reps, warm, 1, [&] { splitc_write_4(g, 3); }));
        ops.push_back(time_op("get", true, batches, bwarm, kBatch, [&] {
            for (int i = 0; i < kBatch; ++i) splitc_get_4(&got_, g);
            splitc_sync();
        }));
        ops.push_back(time_op("put", true, batches, bwarm, kBatch, [&] {
            for (int i = 0; i < kBatch; ++i) splitc_put_4(g, 5);
            splitc_sync();
        }));
        release_peer(); // end of the served part
        ops.push_back(time_op("store", true, batches, bwarm, kBatch, [&] {
            for (int i = 0; i < kBatch; ++i) splitc_store_4(g, 9);
            splitc_store_sync(4); // the target's confirmation
        }));
    } else {
        serve_until_released();
        for (int b = 0; b < batches + bwarm; ++b) {
            splitc_store_sync(4 * kBatch);
            splitc_store_4(g, 1);
        }
    }
    splitc_barrier();
    return ops;
}

} // namespace

std::unique_ptr<Layer> make_splitc_layer(const Job &job, const LayerOptions &opt) {
    return std::make_unique<SplitcLayer>(job, opt);
}

} // namespace logp
