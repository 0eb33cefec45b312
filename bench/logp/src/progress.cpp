// progress.cpp - see progress.hpp.
#include "progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace logp {

namespace {
// Width of the terminal: the line is cut to it, since a line that wraps can
// no longer be redrawn with a carriage return.
std::size_t terminal_width() {
    winsize ws{};
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
    return 80;
}
} // namespace

Progress::Progress(bool enabled)
    : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { clear(); }

void Progress::plan(int layers) { layers_ = std::max(1, layers); }

void Progress::layer(int index, const std::string &id, int sweeps) {
    layer_index_ = index;
    layer_id_ = id;
    sweeps_ = std::max(1, sweeps);
    sweeps_done_ = 0;
    steps_ = done_ = 0;
    what_.clear();
}

double Progress::fraction() const {
    double in_sweep = steps_ > 0 ? double(std::min(done_, steps_)) / steps_ : 0.0;
    double in_layer = std::min(1.0, (sweeps_done_ + in_sweep) / sweeps_);
    return std::clamp((layer_index_ + in_layer) / layers_, 0.0, 1.0);
}

std::string Progress::eta_text(double elapsed_s, double fraction) {
    // Below 3 % done (or 2 s in) the rate says little.
    if (fraction < 0.03 || elapsed_s < 2.0) return "";
    if (fraction >= 1.0) return "";
    long left = std::lround(elapsed_s * (1.0 - fraction) / fraction);
    if (left >= 60) return fmt::format("~{} min {:02} s left", left / 60, left % 60);
    return fmt::format("~{} s left", std::max(1L, left));
}

void Progress::draw(const std::string &detail) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string where =
        layers_ > 1 || !layer_id_.empty() ? fmt::format("[{}/{}] ", layer_index_ + 1, layers_) : std::string();
    std::string line = fmt::format("logp {}{}", where, what_.empty() ? layer_id_ : what_);
    if (steps_ > 0) line += fmt::format(" {}/{}", done_, steps_);
    if (!detail.empty()) line += " (" + detail + ")";
    std::string eta = eta_text(elapsed, fraction());
    if (!eta.empty()) line += "  " + eta;
    std::size_t width = terminal_width() - 1;
    if (line.size() > width) line.resize(width);
    fmt::print(stderr, "\r\033[K{}", line);
    std::fflush(stderr);
    line_shown_ = true;
}

void Progress::begin(const std::string &what, int steps) {
    what_ = what;
    steps_ = steps;
    done_ = 0;
    if (!enabled_) return;
    if (tty_) draw("");
    else fmt::print(stderr, "logp: {} ({} steps)\n", what_, steps_);
}

void Progress::step(const std::string &detail) {
    ++done_;
    if (!enabled_) return;
    if (tty_) {
        draw(detail);
        return;
    }
    // Logs (CI, pipes): a line per tenth of the sweep, not per step.
    const int tenth_before = steps_ > 0 ? (done_ - 1) * 10 / steps_ : 0;
    const int tenth_now = steps_ > 0 ? done_ * 10 / steps_ : 10;
    if (steps_ <= 20 || tenth_now != tenth_before || done_ == steps_)
        fmt::print(stderr, "logp:   {} [{}/{}] {}\n", what_, done_, steps_, detail);
    std::fflush(stderr);
}

void Progress::end() {
    ++sweeps_done_;
    steps_ = done_ = 0;
    if (enabled_ && tty_) draw("done");
}

void Progress::note(const std::string &line) {
    if (!enabled_) return;
    if (tty_) {
        what_ = line;
        steps_ = done_ = 0;
        draw("");
    } else {
        fmt::print(stderr, "logp: {}\n", line);
    }
}

void Progress::clear() {
    if (enabled_ && tty_ && line_shown_) {
        fmt::print(stderr, "\r\033[K");
        std::fflush(stderr);
        line_shown_ = false;
    }
}

} // namespace logp
