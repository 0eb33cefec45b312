// output_tagger.hpp - forwards a rank's stdout/stderr pipe to vipl-run's own
// stdout/stderr with a "[rank] " prefix on every line (--tag-output).
#pragma once

#include <string>

namespace viastack::launcher {

class OutputTagger {
public:
    // Reads from pipe_fd (non-blocking) and writes tagged lines to out_fd.
    OutputTagger(int rank, int pipe_fd, int out_fd);
    ~OutputTagger();
    OutputTagger(const OutputTagger &) = delete;
    OutputTagger &operator=(const OutputTagger &) = delete;

    int fd() const { return pipe_fd_; }
    bool open() const { return pipe_fd_ >= 0; }
    // Drains what is readable now; on EOF flushes a final partial line and closes.
    void on_readable();
    // Flushes a partial line and closes the pipe (used when giving up on a pipe a
    // grandchild keeps open after the rank itself exited).
    void close_now();

private:
    void emit(const char *p, size_t n); // one line (without '\n')
    int rank_;
    int pipe_fd_;
    int out_fd_;
    std::string prefix_;
    std::string partial_;
};

// write(2) until done, retrying EINTR/short writes; drops data on EPIPE etc.
void write_all(int fd, const char *p, size_t n);

} // namespace viastack::launcher
