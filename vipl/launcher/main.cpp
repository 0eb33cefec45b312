// vipl-run - starts an N-process viastack job on this host, or this host's
// share of a job across hosts (--boot).
//   vipl-run -n N [--provider nicfw|verbs] [--mode thread|inline] [--faults SPEC] [--tag-output]
//            [--timeout SECONDS] [--bind none|core]
//            [--boot tcp:HOST:PORT --job ID [--world W] [--first-rank R]] PROGRAM ARGS...
// See docs/launcher.md for the environment, exit codes and shm naming.
#include <CLI/CLI.hpp>
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "boot_segment.hpp"
#include "job_runner.hpp"
#include "tcp_wire.hpp"

using viastack::launcher::kExitUsage;
using viastack::launcher::LaunchOptions;

int main(int argc, char **argv) {
    LaunchOptions opts;
    CLI::App app{"vipl-run: start an N-process viastack job on this host (no daemon, no configuration).\n"
                 "Each process gets VIASTACK_JOB, VIASTACK_RANK and VIASTACK_SIZE; exit code is the worst\n"
                 "of the ranks' (128+S for a rank killed by signal S), 124 on --timeout, 2 on bad options.",
                 "vipl-run"};
    app.add_option("-n,--np", opts.nprocs, "number of processes to start")->required()->check(CLI::Range(1, 4096));
    app.add_option("--provider", opts.provider, "VIPL provider for the job (sets VIPL_PROVIDER)")
        ->check(CLI::IsMember({"nicfw", "verbs"}));
    app.add_option("--mode", opts.mode, "nicfw firmware mode (sets VIPL_NICFW_MODE)")
        ->check(CLI::IsMember({"thread", "inline"}));
    app.add_option("--faults", opts.faults,
                   "faults on the nicfw wire for every rank (sets VIPL_NICFW_FAULTS), e.g. "
                   "drop=0.05,dup=0.01,reorder=0.01,corrupt=0.001,seed=7 (docs/nicfw.md)");
    app.add_flag("--tag-output", opts.tag_output, "prefix every output line with \"[rank] \"");
    std::string bind = "none";
    app.add_option("--bind", bind,
                   "core: each rank on a CPU of its own (rank i on the i-th CPU vipl-run may use; refused "
                   "with more ranks than CPUs), as mpirun binds small jobs; none (default): the scheduler places them")
        ->check(CLI::IsMember({"none", "core"}));
    app.add_option("--timeout", opts.timeout_s, "kill the whole job after SECONDS (exit code 124)")
        ->check(CLI::PositiveNumber);
    // A job across hosts: each host's vipl-run starts its own block of ranks.
    auto *boot = app.add_option("--boot", opts.boot,
                                "tcp:HOST:PORT - the ranks meet over TCP at rank 0's HOST:PORT "
                                "(for jobs across hosts; see docs/launcher.md)")
                     ->check([](const std::string &v) {
                         viastack::boot::TcpEndpoint ep;
                         std::string err;
                         return viastack::boot::parse_boot_spec(v, &ep, &err) ? std::string() : "'" + v + "': " + err;
                     });
    auto *job = app.add_option("--job", opts.job, "job id shared by every host's vipl-run (needs --boot)")
                    ->check([](const std::string &v) {
                        return viastack::boot::valid_job_id(v) ? std::string()
                                                               : "'" + v + "': use 1..128 characters of [A-Za-z0-9._-]";
                    })
                    ->needs(boot);
    auto *world = app.add_option("--world", opts.world, "ranks in the whole job, all hosts (needs --boot; default -n)")
                      ->check(CLI::Range(1, 65536))
                      ->needs(boot);
    app.add_option("--first-rank", opts.first_rank, "rank of this host's first process (needs --boot; default 0)")
        ->check(CLI::Range(0, 65535))
        ->needs(boot);
    boot->needs(job);
    // Everything from the first non-option word on is the program and its own
    // arguments, passed through untouched (e.g. --gtest_filter=...).
    app.prefix_command();
    app.footer("Example: vipl-run -n 4 --tag-output ./pingpong 1024\n"
               "         vipl-run -n 2 -- ./prog --its-own-option\n"
               "Two hosts, 4 ranks (run one line on each host):\n"
               "         vipl-run -n 2 --world 4 --first-rank 0 --job j1 --boot tcp:10.77.0.1:7000 ./prog\n"
               "         vipl-run -n 2 --world 4 --first-rank 2 --job j1 --boot tcp:10.77.0.1:7000 ./prog");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) { return app.exit(e); } catch (const CLI::ParseError &e) {
        std::fprintf(stderr, "vipl-run: %s\nRun 'vipl-run --help' for usage.\n", e.what());
        return kExitUsage;
    }
    if (!opts.boot.empty()) {
        if (world->count() == 0) opts.world = opts.nprocs;
        if (opts.first_rank + opts.nprocs > opts.world) {
            std::fprintf(stderr,
                         "vipl-run: --first-rank %d with -n %d needs ranks up to %d, but --world is %d\n"
                         "Run 'vipl-run --help' for usage.\n",
                         opts.first_rank, opts.nprocs, opts.first_rank + opts.nprocs - 1, opts.world);
            return kExitUsage;
        }
    }
    if (bind == "core") {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) != 0) {
            std::fprintf(stderr, "vipl-run: --bind core: cannot read this process's CPUs: %s\n", std::strerror(errno));
            return kExitUsage;
        }
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) opts.bind_cpus.push_back(c);
        if (static_cast<int>(opts.bind_cpus.size()) < opts.nprocs) {
            std::fprintf(stderr,
                         "vipl-run: --bind core with -n %d needs %d CPUs, but this process may use %zu; "
                         "use --bind none (or fewer ranks)\n",
                         opts.nprocs, opts.nprocs, opts.bind_cpus.size());
            return kExitUsage;
        }
        opts.bind_cpus.resize(static_cast<size_t>(opts.nprocs));
    }
    opts.command = app.remaining();
    // "--" right before the program means "this is the program, even if it
    // starts with '-'"; CLI11 swallows the "--", so look for it in argv.
    const size_t ncmd = opts.command.size();
    const bool explicit_separator =
        ncmd > 0 && static_cast<size_t>(argc) > ncmd && std::string(argv[argc - 1 - static_cast<int>(ncmd)]) == "--";
    if (!opts.command.empty() && opts.command.front() == "--") opts.command.erase(opts.command.begin());
    if (opts.command.empty()) {
        std::fprintf(stderr, "vipl-run: no program given\nUsage: vipl-run -n N [options] PROGRAM [ARGS...]\n");
        return kExitUsage;
    }
    if (!explicit_separator && opts.command.front().size() > 1 && opts.command.front()[0] == '-') {
        std::fprintf(stderr,
                     "vipl-run: unknown option '%s'\nRun 'vipl-run --help' for usage "
                     "(use '--' before a program whose name starts with '-').\n",
                     opts.command.front().c_str());
        return kExitUsage;
    }
    return viastack::launcher::run_job(opts);
}
