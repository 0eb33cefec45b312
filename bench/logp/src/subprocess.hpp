// subprocess.hpp - run a program with a time limit and capture its output
// (for the peer tools).  No shell is involved: arguments are passed as is.
#pragma once

#include <string>
#include <vector>

namespace logp {

struct ProcessResult {
    bool started = false;
    bool timed_out = false;
    int exit_code = -1; // -1 when killed by a signal or not started
    std::string output; // stdout and stderr, interleaved
    std::string error;  // why it did not start
};

class BackgroundProcess;

// The last non-empty line of a program's output (what a failed peer said last).
std::string last_line(const std::string &text);

// The CPUs vipl-run bound the job's ranks to, in rank order (rank r on the
// r-th; VIASTACK_JOB_CPUS), or empty when the ranks are not bound.  The peers
// are bound the same way: their first process on rank 0's CPU, the second on
// rank 1's.
std::vector<int> job_cpus();

// Full path of `name` found on PATH, or "" when it is not installed.
std::string find_on_path(const std::string &name);

// Runs argv (argv[0] a path) with extra environment entries ("K=V"), waits at most timeout_s.
ProcessResult run_process(const std::vector<std::string> &argv, const std::vector<std::string> &env_add,
                          double timeout_s);

// A process left running while another one talks to it (a peer server).
class BackgroundProcess {
public:
    BackgroundProcess(const std::vector<std::string> &argv, const std::vector<std::string> &env_add);
    ~BackgroundProcess(); // kills it if still running
    BackgroundProcess(const BackgroundProcess &) = delete;
    BackgroundProcess &operator=(const BackgroundProcess &) = delete;
    bool started() const { return pid_ > 0; }
    // Waits up to timeout_s for it to exit by itself; kills it afterwards.  Returns its output.
    ProcessResult finish(double timeout_s);

private:
    int pid_ = -1;
    int out_fd_ = -1;
    std::string output_;
};

} // namespace logp
