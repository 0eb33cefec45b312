// line_probe.cpp - see line_probe.hpp.
#include "line_probe.hpp"

#include "stats.hpp"
#include "timer.hpp"
#include "vipl_boot.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace logp {
namespace {

constexpr std::size_t kPage = 4096;

// Odd: rank 0 pinged; even: rank 1 answered.  Alone on its line; the flag
// of signal() on the next one.
struct alignas(64) SharedLine {
    std::atomic<std::uint64_t> seq{0};
};
struct SharedPage {
    SharedLine line, flag;
};

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// per_block round trips on `line`, from the pinging side or the answering
// one; k is the line's value before them and after them.
void exchange_block(SharedLine *line, std::uint64_t &k, bool pinger, int per_block) {
    for (int i = 0; i < per_block; ++i) {
        const std::uint64_t ping = k + 1, pong = k + 2;
        k = pong;
        if (pinger) {
            line->seq.store(ping, std::memory_order_release);
            while (line->seq.load(std::memory_order_acquire) != pong) relax();
        } else {
            while (line->seq.load(std::memory_order_acquire) != ping) relax();
            line->seq.store(pong, std::memory_order_release);
        }
    }
}

std::string line_path() { return std::string("/dev/shm/viastack-") + vipl_boot_job() + "-logp-line"; }

} // namespace

LineProbe::LineProbe(const Job &job) : job_(job) {
    if (job.size() < 2) return;
    const std::string path = line_path();
    int fd = -1;
    std::string error;
    if (job.is_root()) {
        fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, kPage) != 0) error = path + ": " + std::strerror(errno);
    }
    if (!job.all(error.empty()))
        throw std::runtime_error("line probe: cannot create " + (error.empty() ? path : error));
    if (!job.is_root() && (fd = open(path.c_str(), O_RDWR)) < 0) error = path + ": " + std::strerror(errno);
    if (fd >= 0) {
        void *p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) error = "mmap of " + path + ": " + std::strerror(errno);
        else page_ = p;
        close(fd);
    }
    const bool ok = job.all(error.empty());
    if (job.is_root()) unlink(path.c_str()); // both have it mapped (or failed): the name is not needed
    if (!ok) {
        if (page_) munmap(page_, kPage);
        page_ = nullptr;
        throw std::runtime_error("line probe: " + (error.empty() ? std::string("the peer could not map it") : error));
    }
}

LineProbe::~LineProbe() {
    if (page_) munmap(page_, kPage);
}

double LineProbe::measure(int blocks, int per_block) {
    if (!page_) return std::numeric_limits<double>::quiet_NaN();
    auto *line = &static_cast<SharedPage *>(page_)->line;
    job_.barrier();
    // Both ranks count the same exchanges, so each knows the next value
    // without reading the line (rank 0 may already have pinged).
    std::vector<double> block_ns;
    for (int b = 0; b <= blocks; ++b) { // block 0 warms up
        const std::uint64_t t0 = ticks();
        exchange_block(line, seq_, job_.is_root(), per_block);
        if (b > 0) block_ns.push_back(ticks_to_ns(ticks() - t0));
    }
    const double one_way = median_of(block_ns) / (2.0 * per_block);
    return job_.bcast_double(one_way, 0);
}

double LineProbe::measure_threads(int blocks, int per_block) {
    SharedLine line;
    std::thread answer([&] {
        std::uint64_t k = 0;
        for (int b = 0; b <= blocks; ++b) exchange_block(&line, k, false, per_block);
    });
    std::vector<double> block_ns;
    std::uint64_t k = 0;
    for (int b = 0; b <= blocks; ++b) { // block 0 warms up (and waits for the thread to start)
        const std::uint64_t t0 = ticks();
        exchange_block(&line, k, true, per_block);
        if (b > 0) block_ns.push_back(ticks_to_ns(ticks() - t0));
    }
    answer.join();
    return median_of(block_ns) / (2.0 * per_block);
}

void LineProbe::signal(std::uint64_t v) {
    if (page_) static_cast<SharedPage *>(page_)->flag.seq.store(v, std::memory_order_release);
}

void LineProbe::wait_yielding(std::uint64_t v, double timeout_s) {
    if (!page_) return;
    auto &flag = static_cast<SharedPage *>(page_)->flag.seq;
    const std::uint64_t t0 = ticks();
    while (flag.load(std::memory_order_acquire) < v) {
        sched_yield();
        if (ticks_to_ns(ticks() - t0) > timeout_s * 1e9)
            throw std::runtime_error("line probe: the peer did not signal within " + std::to_string(timeout_s) + " s");
    }
}

double line_threshold(std::vector<double> line_ns, std::string *source) {
    line_ns.erase(std::remove_if(line_ns.begin(), line_ns.end(), [](double x) { return !(x > 0); }), line_ns.end());
    std::sort(line_ns.begin(), line_ns.end());
    double widest = 0, threshold = kFixedLineThresholdNs;
    for (std::size_t i = 1; i < line_ns.size(); ++i) {
        const double gap = line_ns[i] / line_ns[i - 1];
        if (gap >= kPlacementGap && gap > widest) {
            widest = gap;
            threshold = std::sqrt(line_ns[i] * line_ns[i - 1]);
        }
    }
    if (source) *source = widest > 0 ? "gap" : "fixed";
    return threshold;
}

} // namespace logp
