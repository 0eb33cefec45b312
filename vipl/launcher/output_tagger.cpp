// output_tagger.cpp - line splitting and prefixing for --tag-output.
#include "output_tagger.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace viastack::launcher {

namespace {
// A "line" longer than this is emitted in pieces so a rank printing without
// newlines cannot grow the launcher without bound.
constexpr size_t kMaxLine = 64 * 1024;
} // namespace

void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return; // EPIPE (reader gone) or similar: nothing useful to do
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

OutputTagger::OutputTagger(int rank, int pipe_fd, int out_fd) : rank_(rank), pipe_fd_(pipe_fd), out_fd_(out_fd) {
    prefix_.append("[").append(std::to_string(rank)).append("] ");
}

OutputTagger::~OutputTagger() { close_now(); }

void OutputTagger::emit(const char *p, size_t n) {
    std::string line;
    line.reserve(prefix_.size() + n + 1);
    line.append(prefix_).append(p, n).push_back('\n');
    write_all(out_fd_, line.data(), line.size()); // one write: lines stay whole
}

void OutputTagger::on_readable() {
    char buf[16384];
    for (;;) {
        ssize_t r = ::read(pipe_fd_, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            close_now();
            return;
        }
        if (r == 0) {
            close_now();
            return;
        }
        const char *p = buf;
        const char *end = buf + r;
        while (p < end) {
            const char *nl = static_cast<const char *>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
            if (!nl) {
                partial_.append(p, static_cast<size_t>(end - p));
                if (partial_.size() >= kMaxLine) {
                    emit(partial_.data(), partial_.size());
                    partial_.clear();
                }
                break;
            }
            if (partial_.empty()) {
                emit(p, static_cast<size_t>(nl - p));
            } else {
                partial_.append(p, static_cast<size_t>(nl - p));
                emit(partial_.data(), partial_.size());
                partial_.clear();
            }
            p = nl + 1;
        }
    }
}

void OutputTagger::close_now() {
    if (pipe_fd_ < 0) return;
    if (!partial_.empty()) {
        emit(partial_.data(), partial_.size());
        partial_.clear();
    }
    ::close(pipe_fd_);
    pipe_fd_ = -1;
}

} // namespace viastack::launcher
