// job_runner.hpp - starts the N processes of a job on this host (or this host's
// share of a job across hosts), watches them, tears the job down when one
// fails / on timeout / on a signal, and removes the job's shared-memory files
// whatever happened.
#pragma once

#include <string>
#include <vector>

namespace viastack::launcher {

struct LaunchOptions {
    int nprocs = 0;
    std::string provider; // VIPL_PROVIDER for the children ("" = leave as is)
    std::string mode;     // VIPL_NICFW_MODE for the children ("" = leave as is)
    std::string faults;   // VIPL_NICFW_FAULTS for the children ("" = leave as is)
    bool tag_output = false;
    double timeout_s = 0; // 0 = no timeout
    // --bind core: local rank i runs on bind_cpus[i] only (the CPUs vipl-run
    // itself may use, in order); empty = no binding.
    std::vector<int> bind_cpus;
    std::vector<std::string> command; // program and its arguments
    // One host's share of a job across hosts (--boot): this vipl-run starts
    // ranks first_rank..first_rank+nprocs-1 of a world-rank job named job, and
    // the ranks meet over TCP at boot ("tcp:<host>:<port>").  Empty boot = the
    // usual single-host job (world = nprocs, first_rank = 0, a fresh job id).
    std::string boot;
    std::string job;
    int world = 0;
    int first_rank = 0;
};

// Exit codes of vipl-run besides the children's own.
inline constexpr int kExitUsage = 2;      // bad options
inline constexpr int kExitLaunchFail = 1; // vipl-run itself could not set up the job
inline constexpr int kExitNotFound = 127; // the program could not be executed
inline constexpr int kExitTimeout = 124;  // --timeout expired

// Runs the job to the end and returns vipl-run's exit code.
int run_job(const LaunchOptions &opts);

} // namespace viastack::launcher
