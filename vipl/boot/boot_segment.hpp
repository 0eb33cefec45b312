// boot_segment.hpp - layout and opening of a job's shared-memory bootstrap
// segment (/dev/shm/viastack-<job>-boot), shared by libvipl_boot and vipl-run.
//
// The segment is created lazily by whoever opens it first (the launcher, or a
// rank that starts early) with O_CREAT|O_EXCL, mode 0600, + ftruncate to a size
// computed from the job size N; the others open it only after checking it is
// this user's own private file (vipl/log/viastack_shm.hpp, docs/security.md).  An all-zero segment is a valid initial state, so no process has
// to "initialise" it and ranks may start at any time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "vipl_boot.h"

namespace viastack::boot {

// Every shared-memory file of job <job> is /dev/shm/viastack-<job>-<what>.
std::string shm_name(const std::string &job, const char *what); // "/viastack-<job>-<what>"
// Unlinks every /dev/shm/viastack-<job>-* file; returns how many were removed.
int unlink_job_files(const std::string &job);
// Unlinks the files of dead jobs whose names start with /dev/shm/viastack-<family>
// (e.g. "pmix-": jobs that no launcher of ours cleans up, whose ranks may all
// have been killed): a file goes only if it is this user's, is older than
// min_age_s, is not one of the job `keep`'s, and no process has it open or
// mapped (/proc/<pid>/fd and /proc/<pid>/maps).  Returns how many were removed.
int reap_dead_job_files(const std::string &family, const std::string &keep, int min_age_s);
// Job ids become part of file names: [A-Za-z0-9._-], 1..128 characters.
bool valid_job_id(const std::string &job);

inline constexpr size_t kLine = 64;
inline constexpr uint32_t kMaxJobSize = 65536;

// Abort state machine in the header: running -> claiming (one writer fills in
// who/why) -> published (readers may print the reason).
enum AbortState : uint32_t { kRunning = 0, kClaiming = 1, kPublished = 2 };
inline constexpr int32_t kAbortByLauncher = -1;

struct alignas(kLine) SegmentHeader {
    std::atomic<uint32_t> size;        // N, set by the first opener (0 -> N)
    std::atomic<uint32_t> abort_state; // AbortState
    int32_t abort_rank;                // kAbortByLauncher, or the aborting rank
    int32_t abort_code;
    char abort_reason[200];
    // Barrier: arrivals counts every rank's arrival at every barrier, so barrier k
    // (1-based) is complete exactly when arrivals reaches k*N (mod 2^32); the last
    // arriver publishes completed = k.  wake_seq is the futex word: bumped on every
    // completion and on abort, so sleepers wake for either reason.
    alignas(kLine) std::atomic<uint32_t> arrivals;
    alignas(kLine) std::atomic<uint32_t> completed;
    std::atomic<uint32_t> wake_seq;
};

// Per-rank description of its part in a data collective (allgather/bcast),
// compared after the barrier so that mismatched arguments fail on every rank.
struct alignas(16) RankSlot {
    std::atomic<uint64_t> len; // kBadLen if the rank's own arguments were invalid
    std::atomic<int32_t> root; // -1 for allgather
};
inline constexpr uint64_t kBadLen = ~uint64_t{0};

// A mapped segment.  Layout after the header:
//   epoch[N]            barriers entered by each rank (names the missing ranks)
//   slots[2][N]         RankSlot, double-buffered by collective parity
//   data[2][N][MAX]     allgather items / bcast chunks, double-buffered
class Segment {
public:
    Segment() = default;
    ~Segment();
    Segment(const Segment &) = delete;
    Segment &operator=(const Segment &) = delete;

    static size_t bytes_for(uint32_t n);

    // Opens or creates /dev/shm/viastack-<job>-boot for a job of n ranks.
    // On failure returns false and fills *err with a message.
    bool open(const std::string &job, uint32_t n, std::string *err);
    void close();
    bool is_open() const { return hdr_ != nullptr; }

    SegmentHeader &hdr() { return *hdr_; }
    uint32_t n() const { return n_; }
    std::atomic<uint32_t> &epoch(uint32_t rank);
    RankSlot &slot(unsigned parity, uint32_t rank);
    unsigned char *data(unsigned parity, uint32_t rank);
    size_t data_bytes_per_parity() const { return size_t{n_} * VIPL_BOOT_MAX_ITEM; }

    // Marks the job aborted (first caller wins) and wakes every waiter.
    void mark_aborted(int32_t rank, int32_t code, const char *why);
    // Human-readable "rank 3 aborted the job (code 2): why" once published.
    std::string abort_message();

    // Futex helpers on wake_seq (shared, not FUTEX_PRIVATE: the word lives in a
    // MAP_SHARED mapping used by several processes).
    void wake_all();
    void wait_seq(uint32_t seen, long timeout_ns);

private:
    SegmentHeader *hdr_ = nullptr;
    unsigned char *base_ = nullptr;
    size_t bytes_ = 0;
    uint32_t n_ = 0;
};

} // namespace viastack::boot
