// job.hpp - the two-process job the measurements run in: rank, size, and the
// start-up collectives of vipl_boot.h (used only between measurements, never
// inside a timed loop).  A single-process job (synthetic layer, or a run
// without a peer) makes the collectives no-ops.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace logp {

class Job {
public:
    // Joins the vipl_boot job; throws std::runtime_error with the boot error text.
    static Job join();
    static Job single();

    int rank() const { return rank_; }
    int size() const { return size_; }
    bool is_root() const { return rank_ == 0; }
    void barrier() const;
    void bcast(void *buf, std::size_t len, int root = 0) const;
    // Every rank contributes len bytes; returns size()*len bytes.
    std::vector<unsigned char> allgather(const void *mine, std::size_t len) const;
    // Rank 0's value of a flag: true only if every rank says true.
    bool all(bool mine) const;
    double bcast_double(double v, int root = 0) const;
    std::string bcast_string(const std::string &s, int root = 0) const;

private:
    Job(int rank, int size, bool boot) : rank_(rank), size_(size), boot_(boot) {}
    int rank_ = 0, size_ = 1;
    bool boot_ = false;
};

} // namespace logp
