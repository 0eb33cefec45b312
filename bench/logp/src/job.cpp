// job.cpp - see job.hpp.
#include "job.hpp"

#include "vipl_boot.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace logp {
namespace {
void check(int rc, const char *what) {
    if (rc != VIPL_BOOT_OK)
        throw std::runtime_error(
            fmt::format("{} failed (vipl_boot error {}): is the peer process still alive?", what, rc));
}
} // namespace

Job Job::join() {
    int rc = vipl_boot_init();
    if (rc != VIPL_BOOT_OK)
        throw std::runtime_error(fmt::format("vipl_boot_init failed ({}); start logp with `vipl-run -n 2 logp ...` "
                                             "or just `logp`, which does that itself",
                                             rc));
    return Job(vipl_boot_rank(), vipl_boot_size(), true);
}

Job Job::single() { return Job(0, 1, false); }

void Job::barrier() const {
    if (boot_ && size_ > 1) check(vipl_boot_barrier(), "barrier");
}

void Job::bcast(void *buf, std::size_t len, int root) const {
    if (boot_ && size_ > 1) check(vipl_boot_bcast(buf, len, root), "broadcast");
}

std::vector<unsigned char> Job::allgather(const void *mine, std::size_t len) const {
    std::vector<unsigned char> out(len * std::size_t(size_));
    if (boot_ && size_ > 1) {
        check(vipl_boot_allgather(mine, len, out.data()), "all-gather");
    } else if (len) {
        std::memcpy(out.data(), mine, len);
    }
    return out;
}

bool Job::all(bool mine) const {
    unsigned char v = mine ? 1 : 0;
    auto all = allgather(&v, 1);
    for (unsigned char x : all)
        if (!x) return false;
    return true;
}

double Job::bcast_double(double v, int root) const {
    bcast(&v, sizeof v, root);
    return v;
}

std::string Job::bcast_string(const std::string &s, int root) const {
    std::size_t n = s.size();
    bcast(&n, sizeof n, root);
    std::string out = rank_ == root ? s : std::string(n, '\0');
    // Chunks keep each collective under VIPL_BOOT_MAX_ITEM.
    for (std::size_t off = 0; off < n; off += VIPL_BOOT_MAX_ITEM) {
        std::size_t len = std::min<std::size_t>(VIPL_BOOT_MAX_ITEM, n - off);
        bcast(out.data() + off, len, root);
    }
    return out;
}

} // namespace logp
