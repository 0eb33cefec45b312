// shm_backend.cpp - barrier, allgather and bcast over the job's shared-memory
// bootstrap segment.  Start-up/shut-down path: clarity and robustness (timeouts,
// abort, argument mismatches detected on every rank) matter more than speed, but
// waiting must not burn a core: we spin briefly and then sleep on a futex.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "boot_backend.hpp"
#include "boot_segment.hpp"
#include "vipl_boot.h"

namespace viastack::boot {
namespace {

using Clock = std::chrono::steady_clock;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// ~ a few microseconds: enough to catch peers that are already on their way,
// short enough that 8 waiters on 2 cores do not starve the late rank.
constexpr int kSpinIterations = 2000;
// Upper bound on one futex sleep, so a missed wake-up can never cost more.
constexpr long kMaxSleepNs = 200'000'000;

class ShmBackend final : public Backend {
public:
    explicit ShmBackend(const JobInfo &info) : info_(info) {}

    bool open(int *rc) {
        std::string err;
        if (!seg_.open(info_.job, static_cast<uint32_t>(info_.size), &err)) {
            report(info_.rank, "cannot open the job's bootstrap segment: " + err);
            *rc = VIPL_BOOT_ERR_SHM;
            return false;
        }
        return true;
    }

    int barrier() override {
        if (int rc = usable(); rc != VIPL_BOOT_OK) return rc;
        return barrier_impl("barrier");
    }

    int allgather(const void *mine, size_t len, void *out) override {
        if (int rc = usable(); rc != VIPL_BOOT_OK) return rc;
        bool ok = len <= VIPL_BOOT_MAX_ITEM && (len == 0 || (mine && out));
        if (!ok) {
            report(info_.rank,
                   "vipl_boot_allgather: len " + std::to_string(len) +
                       (len > VIPL_BOOT_MAX_ITEM
                            ? " exceeds VIPL_BOOT_MAX_ITEM (" + std::to_string(VIPL_BOOT_MAX_ITEM) + ")"
                            : std::string(" with a NULL buffer")));
        }
        const unsigned p = next_parity();
        if (ok && len) std::memcpy(seg_.data(p, me()), mine, len);
        publish_slot(p, ok ? len : kBadLen, -1);
        if (int rc = barrier_impl("allgather"); rc != VIPL_BOOT_OK) return rc;
        if (int rc = check_slots(p, "vipl_boot_allgather"); rc != VIPL_BOOT_OK) return rc;
        auto *dst = static_cast<unsigned char *>(out);
        for (uint32_t r = 0; r < seg_.n(); ++r) std::memcpy(dst + size_t{r} * len, seg_.data(p, r), len);
        return VIPL_BOOT_OK;
    }

    // Long buffers travel in chunks of one parity's data area; every chunk costs
    // one barrier.  The first round also compares (len, root) on all ranks.
    int bcast(void *buf, size_t len, int root) override {
        if (int rc = usable(); rc != VIPL_BOOT_OK) return rc;
        bool ok = root >= 0 && root < info_.size && (len == 0 || buf);
        if (!ok) {
            report(info_.rank,
                   root < 0 || root >= info_.size ? "vipl_boot_bcast: root " + std::to_string(root) +
                           " out of range 0.." + std::to_string(info_.size - 1)
                                                  : std::string("vipl_boot_bcast: NULL buffer"));
        }
        auto *bytes = static_cast<unsigned char *>(buf);
        const size_t chunk = seg_.data_bytes_per_parity();
        size_t done = 0;
        bool first = true;
        do {
            const size_t n = ok ? std::min(chunk, len - done) : 0;
            const unsigned p = next_parity();
            if (ok && root == info_.rank && n) std::memcpy(seg_.data(p, 0), bytes + done, n);
            if (first) publish_slot(p, ok ? len : kBadLen, root);
            if (int rc = barrier_impl("bcast"); rc != VIPL_BOOT_OK) return rc;
            if (first) {
                if (int rc = check_slots(p, "vipl_boot_bcast"); rc != VIPL_BOOT_OK) return rc;
                first = false;
            }
            if (root != info_.rank && n) std::memcpy(bytes + done, seg_.data(p, 0), n);
            done += n;
        } while (done < len);
        return VIPL_BOOT_OK;
    }

    int finalize() override {
        int rc = usable();
        if (rc == VIPL_BOOT_OK) rc = barrier_impl("finalize");
        seg_.close();
        return rc;
    }

    void abort_job(int code, const char *why) override {
        if (seg_.is_open()) seg_.mark_aborted(info_.rank, code, why);
    }

private:
    uint32_t me() const { return static_cast<uint32_t>(info_.rank); }
    unsigned next_parity() { return static_cast<unsigned>(data_uses_++ & 1); }

    // A timeout leaves this rank's count of barriers out of step with the
    // others', so nothing collective can work afterwards: say so every time.
    int usable() {
        if (!seg_.is_open()) return VIPL_BOOT_ERR_NOT_INIT;
        if (broken_) {
            report(info_.rank,
                   "an earlier collective timed out or the job was aborted; "
                   "the job cannot continue (exit, or call vipl_boot_abort)");
            return VIPL_BOOT_ERR_TIMEOUT;
        }
        return VIPL_BOOT_OK;
    }

    void publish_slot(unsigned p, uint64_t len, int32_t root) {
        RankSlot &s = seg_.slot(p, me());
        s.len.store(len, std::memory_order_relaxed);
        s.root.store(root, std::memory_order_relaxed);
        // Made visible to peers by the release in barrier_impl.
    }

    // After the barrier every rank sees the same slots, so all agree on failure.
    int check_slots(unsigned p, const char *what) {
        RankSlot &mine = seg_.slot(p, me());
        for (uint32_t r = 0; r < seg_.n(); ++r) {
            RankSlot &s = seg_.slot(p, r);
            uint64_t len = s.len.load(std::memory_order_relaxed);
            int32_t root = s.root.load(std::memory_order_relaxed);
            if (len == kBadLen) {
                report(info_.rank,
                       std::string(what) + ": rank " + std::to_string(r) +
                           " passed invalid arguments (see its message)");
                return VIPL_BOOT_ERR_ARG;
            }
            if (len != mine.len.load(std::memory_order_relaxed) || root != mine.root.load(std::memory_order_relaxed)) {
                report(info_.rank,
                       std::string(what) + ": ranks disagree: rank " + std::to_string(r) + " passed len " +
                           std::to_string(len) + " root " + std::to_string(root) + ", rank " +
                           std::to_string(info_.rank) + " passed len " + std::to_string(mine.len.load()) + " root " +
                           std::to_string(mine.root.load()) + " (every rank must pass the same len and root)");
                return VIPL_BOOT_ERR_ARG;
            }
        }
        return VIPL_BOOT_OK;
    }

    int barrier_impl(const char *what) {
        SegmentHeader &h = seg_.hdr();
        const uint32_t k = ++barriers_;
        seg_.epoch(me()).store(k, std::memory_order_release);
        const uint32_t t = h.arrivals.fetch_add(1, std::memory_order_acq_rel) + 1;
        if (t == k * static_cast<uint32_t>(info_.size)) {
            h.completed.store(k, std::memory_order_release);
            seg_.wake_all();
            return VIPL_BOOT_OK;
        }
        const auto deadline =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(info_.timeout_s));
        for (int spins = 0;; ++spins) {
            const uint32_t seq = h.wake_seq.load(std::memory_order_acquire);
            if (static_cast<int32_t>(h.completed.load(std::memory_order_acquire) - k) >= 0) return VIPL_BOOT_OK;
            if (h.abort_state.load(std::memory_order_acquire) != kRunning) {
                broken_ = true;
                report(info_.rank, std::string(what) + " interrupted: " + seg_.abort_message());
                return VIPL_BOOT_ERR_TIMEOUT;
            }
            if (spins < kSpinIterations) {
                cpu_relax();
                continue;
            }
            const auto now = Clock::now();
            if (now >= deadline) {
                broken_ = true;
                char secs[32];
                std::snprintf(secs, sizeof secs, "%g", info_.timeout_s);
                report(info_.rank,
                       std::string(what) + " timed out after " + secs +
                           " s (VIASTACK_BOOT_TIMEOUT): " + missing_ranks(k) +
                           " did not arrive (died, hang, or call the collectives in a "
                           "different order)");
                return VIPL_BOOT_ERR_TIMEOUT;
            }
            long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
            seg_.wait_seq(seq, std::min(ns, kMaxSleepNs));
        }
    }

    std::string missing_ranks(uint32_t k) {
        std::string list;
        int count = 0;
        for (uint32_t r = 0; r < seg_.n(); ++r) {
            if (static_cast<int32_t>(seg_.epoch(r).load(std::memory_order_acquire) - k) >= 0) continue;
            if (++count > 32) continue;
            if (!list.empty()) list += ',';
            list += std::to_string(r);
        }
        if (count > 32) list += ",... (" + std::to_string(count) + " in all)";
        return std::string(count == 1 ? "rank " : "ranks ").append(list);
    }

    JobInfo info_;
    Segment seg_;
    uint32_t barriers_ = 0;  // barriers this rank entered (all ranks agree)
    uint64_t data_uses_ = 0; // data collective rounds, picks the buffer parity
    bool broken_ = false;
};

} // namespace

std::unique_ptr<Backend> make_shm_backend(const JobInfo &info, int *rc) {
    auto b = std::make_unique<ShmBackend>(info);
    if (!b->open(rc)) return nullptr;
    return b;
}

} // namespace viastack::boot
