// progress.cpp - see progress.hpp.
#include "progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace logp {

Progress::Progress(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

void Progress::begin(const std::string &what, int steps) {
    what_ = what;
    steps_ = steps;
    done_ = 0;
    if (enabled_ && !tty_) fmt::print(stderr, "logp: {} ({} steps)\n", what_, steps_);
}

void Progress::step(const std::string &detail) {
    ++done_;
    if (!enabled_) return;
    if (tty_) {
        int width = 30;
        int filled = steps_ > 0 ? done_ * width / steps_ : width;
        fmt::print(stderr, "\r\033[K{:<28} [{:<{}}] {:>3}/{:<3} {}", what_, std::string(std::size_t(filled), '#'), width,
                   done_, steps_, detail);
    } else {
        // Logs (CI, pipes): a line per tenth of the sweep, not per step.
        const int tenth_before = steps_ > 0 ? (done_ - 1) * 10 / steps_ : 0;
        const int tenth_now = steps_ > 0 ? done_ * 10 / steps_ : 10;
        if (steps_ <= 20 || tenth_now != tenth_before || done_ == steps_)
            fmt::print(stderr, "logp:   {} [{}/{}] {}\n", what_, done_, steps_, detail);
    }
    std::fflush(stderr);
}

void Progress::end() {
    if (enabled_ && tty_) fmt::print(stderr, "\r\033[K{}: done ({} steps)\n", what_, done_);
}

void Progress::note(const std::string &line) {
    if (enabled_) fmt::print(stderr, "logp: {}\n", line);
}

}  // namespace logp
