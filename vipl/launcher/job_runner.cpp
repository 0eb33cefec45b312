// job_runner.cpp - vipl-run's process management.
//
// One thread, one poll loop.  Signals (SIGCHLD and the ones we forward) are
// blocked and read from a signalfd, so there are no async handlers and no
// races between "a child died" and "the user pressed Ctrl-C".  Children get
// PR_SET_PDEATHSIG=SIGKILL so even a SIGKILLed vipl-run leaves no orphans.
//
// With --boot this vipl-run runs one host's share of a job whose ranks meet
// over TCP: no boot segment is made (the ranks do not use one), and a failure
// here is reported to rank 0 over the bootstrap port, because the ranks on
// other hosts cannot see this host's shared memory.
#include "job_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "boot_segment.hpp"
#include "output_tagger.hpp"
#include "tcp_wire.hpp"
#include "viastack_log.hpp"

extern char **environ;

namespace viastack::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Between "a rank failed" and SIGTERM (peers may exit on their own after the
// abort mark), and between SIGTERM and SIGKILL.
constexpr auto kGrace = 1s;
// How long to keep forwarding output after every rank exited (a grandchild
// may hold the pipe open forever).
constexpr auto kDrainLimit = 1s;

const int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

enum class Teardown { kNone, kFailure, kTimeout, kSignal, kLaunchError };

struct Child {
    int rank = 0;
    pid_t pid = -1;
    bool running = false;
    int status = 0;         // from waitpid
    uint64_t sent_mask = 0; // signals vipl-run sent to this child
    bool exec_failed = false;
};

// "vipl-run: <msg>" through the launcher logger (vipl/log: $VIASTACK_LOG, one
// write per line).
void say(const std::string &msg, log::Level level = log::Level::error) {
    log::log(log::Layer::launcher, level, "{}", msg);
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
    int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
}

int status_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::string make_job_id() {
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r))
        r = static_cast<uint32_t>(Clock::now().time_since_epoch().count());
    char buf[64];
    std::snprintf(buf, sizeof buf, "%d-%08x", static_cast<int>(getpid()), r);
    return buf;
}

std::string rank_list(const std::vector<int> &ranks) {
    std::string s;
    for (int r : ranks) {
        if (!s.empty()) s += ',';
        s += std::to_string(r);
    }
    return s;
}

class JobRunner {
public:
    explicit JobRunner(const LaunchOptions &o) : opts_(o), job_(o.boot.empty() ? make_job_id() : o.job) {
        if (opts_.boot.empty()) {
            opts_.world = opts_.nprocs;
            opts_.first_rank = 0;
        }
    }

    int run() {
        if (!setup_signals()) return kExitLaunchFail;
        std::string err;
        if (opts_.boot.empty() && !seg_.open(job_, static_cast<uint32_t>(opts_.nprocs), &err)) {
            say("cannot create the job's bootstrap segment: " + err);
            boot::unlink_job_files(job_);
            return kExitLaunchFail;
        }
        if (opts_.timeout_s > 0)
            job_deadline_ = Clock::now() +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts_.timeout_s));
        children_.resize(static_cast<size_t>(opts_.nprocs));
        for (int r = 0; r < opts_.nprocs && teardown_ == Teardown::kNone; ++r) spawn(r);
        event_loop();
        taggers_.clear();
        seg_.close();
        boot::unlink_job_files(job_);
        return exit_code();
    }

private:
    bool setup_signals() {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        for (int s : kForwardedSignals) sigaddset(&set, s);
        if (sigprocmask(SIG_BLOCK, &set, &saved_mask_) != 0) {
            say(std::string("sigprocmask: ") + std::strerror(errno));
            return false;
        }
        sigfd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        if (sigfd_ < 0) {
            say(std::string("signalfd: ") + std::strerror(errno));
            return false;
        }
        // A closed stdout must not kill vipl-run before it cleans up.
        std::signal(SIGPIPE, SIG_IGN);
        return true;
    }

    // The build tree's provider directory when this vipl-run is the build
    // tree's own, else "".
    static std::string build_tree_ofi_dir() {
#ifdef VIPL_RUN_BUILD_DIR
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) return "";
        self[n] = 0;
        std::string dir(self);
        dir.erase(dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/'));
        char want[4096];
        if (!realpath(VIPL_RUN_BUILD_DIR, want) || dir != want) return "";
        return VIPL_RUN_OFI_DIR;
#else
        return "";
#endif
    }

    std::vector<std::string> child_env(int rank) const {
        auto overridden = [&](const char *e) {
            auto is = [&](const char *name) {
                size_t n = std::strlen(name);
                return std::strncmp(e, name, n) == 0 && e[n] == '=';
            };
            // An inherited VIASTACK_BOOT would send a single-host job to TCP.
            return is("VIASTACK_JOB") || is("VIASTACK_RANK") || is("VIASTACK_SIZE") || is("VIASTACK_BOOT") ||
                (!opts_.provider.empty() && is("VIPL_PROVIDER")) || (!opts_.mode.empty() && is("VIPL_NICFW_MODE")) ||
                (!opts_.faults.empty() && is("VIPL_NICFW_FAULTS"));
        };
        std::vector<std::string> env;
        for (char **e = environ; *e; ++e)
            if (!overridden(*e)) env.emplace_back(*e);
        env.push_back("VIASTACK_JOB=" + job_);
        env.push_back("VIASTACK_RANK=" + std::to_string(rank));
        env.push_back("VIASTACK_SIZE=" + std::to_string(opts_.world));
        if (!opts_.boot.empty()) env.push_back("VIASTACK_BOOT=" + opts_.boot);
        // The hosts map of the VIPL name service (vipl/src/names.hpp): which rank
        // runs where, so VipNSGetHostByName(<host name>, i) finds the i-th rank on a
        // host.  This vipl-run knows only its own ranks; ranks elsewhere stay
        // unnamed ("*k") unless the user's VIASTACK_HOSTS, kept as is, names them.
        if (!std::getenv("VIASTACK_HOSTS")) {
            char host[256] = {};
            gethostname(host, sizeof host - 1);
            char map[320];
            if (opts_.first_rank > 0) std::snprintf(map, sizeof map, "*%d,%s*%d", opts_.first_rank, host, opts_.nprocs);
            else std::snprintf(map, sizeof map, "%s*%d", host, opts_.nprocs);
            env.push_back(std::string("VIASTACK_HOSTS=") + map);
        }
        if (!opts_.provider.empty()) env.push_back("VIPL_PROVIDER=" + opts_.provider);
        if (std::string ofi = build_tree_ofi_dir(); !ofi.empty()) {
            // fi_info, fi_pingpong, MPI programs started from a build tree find its
            // libfabric provider (docs/mpi.md); the user's own path comes after.
            const char *user = std::getenv("FI_PROVIDER_PATH");
            env.erase(std::remove_if(env.begin(), env.end(),
                                     [](const std::string &e) { return e.rfind("FI_PROVIDER_PATH=", 0) == 0; }),
                      env.end());
            env.push_back("FI_PROVIDER_PATH=" + ofi + (user && *user ? std::string(":") + user : std::string()));
        }
        if (!opts_.mode.empty()) env.push_back("VIPL_NICFW_MODE=" + opts_.mode);
        if (!opts_.faults.empty()) env.push_back("VIPL_NICFW_FAULTS=" + opts_.faults);
        if (!opts_.bind_cpus.empty()) {
            // The job's CPUs, one per rank: a rank bound to one CPU still knows it
            // does not share it (vipl_wait.h), and may give its own children the
            // whole set back (logp's peer runs).
            std::string list;
            for (int c : opts_.bind_cpus) {
                if (!list.empty()) list += ',';
                list += std::to_string(c);
            }
            env.push_back("VIASTACK_JOB_CPUS=" + list);
        }
        return env;
    }

    // Everything the child needs is prepared before fork(); the child only
    // rewires descriptors and execs.
    void spawn(int local) {
        Child &c = children_[static_cast<size_t>(local)];
        const int rank = opts_.first_rank + local;
        c.rank = rank;
        std::vector<std::string> env = child_env(rank);
        std::vector<char *> envp, argv;
        for (auto &s : env) envp.push_back(s.data());
        envp.push_back(nullptr);
        std::vector<std::string> cmd = opts_.command;
        for (auto &s : cmd) argv.push_back(s.data());
        argv.push_back(nullptr);

        int outp[2] = {-1, -1}, errp[2] = {-1, -1}, execp[2] = {-1, -1};
        bool ok = pipe2(execp, O_CLOEXEC) == 0;
        if (ok && opts_.tag_output) ok = pipe2(outp, O_CLOEXEC) == 0 && pipe2(errp, O_CLOEXEC) == 0;
        if (!ok) {
            say(std::string("pipe: ") + std::strerror(errno));
            for (int fd : {outp[0], outp[1], errp[0], errp[1], execp[0], execp[1]})
                if (fd >= 0) close(fd);
            start_teardown(Teardown::kLaunchError, 0);
            return;
        }
        cpu_set_t bind_set; // prepared before fork, like everything the child uses
        CPU_ZERO(&bind_set);
        const bool bind = !opts_.bind_cpus.empty();
        if (bind) CPU_SET(opts_.bind_cpus[static_cast<size_t>(local) % opts_.bind_cpus.size()], &bind_set);
        const pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0) {
            say(std::string("fork: ") + std::strerror(errno));
            for (int fd : {outp[0], outp[1], errp[0], errp[1], execp[0], execp[1]})
                if (fd >= 0) close(fd);
            start_teardown(Teardown::kLaunchError, 0);
            return;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(kExitLaunchFail); // vipl-run died already
            std::signal(SIGPIPE, SIG_DFL);
            sigprocmask(SIG_SETMASK, &saved_mask_, nullptr);
            if (bind && sched_setaffinity(0, sizeof bind_set, &bind_set) != 0) _exit(kExitLaunchFail);
            if (opts_.tag_output) {
                dup2(outp[1], STDOUT_FILENO);
                dup2(errp[1], STDERR_FILENO);
            }
            if (rank != 0) { // only rank 0 reads the terminal's stdin
                int devnull = open("/dev/null", O_RDONLY);
                if (devnull >= 0) dup2(devnull, STDIN_FILENO);
            }
            execvpe(argv[0], argv.data(), envp.data());
            int e = errno;
            ssize_t unused = write(execp[1], &e, sizeof e);
            (void)unused;
            _exit(kExitNotFound);
        }
        c.pid = pid;
        c.running = true;
        close(execp[1]);
        if (opts_.tag_output) {
            close(outp[1]);
            close(errp[1]);
            fcntl(outp[0], F_SETFL, O_NONBLOCK);
            fcntl(errp[0], F_SETFL, O_NONBLOCK);
            taggers_.push_back(std::make_unique<OutputTagger>(rank, outp[0], STDOUT_FILENO));
            taggers_.push_back(std::make_unique<OutputTagger>(rank, errp[0], STDERR_FILENO));
        }
        // Blocks until exec succeeded (EOF thanks to O_CLOEXEC) or failed (errno).
        int e = 0;
        ssize_t n;
        do n = read(execp[0], &e, sizeof e);
        while (n < 0 && errno == EINTR);
        close(execp[0]);
        if (n == static_cast<ssize_t>(sizeof e)) {
            c.exec_failed = true;
            failure_reason_ = "cannot execute '" + opts_.command[0] + "': " + std::strerror(e);
            failure_code_ = kExitNotFound;
            say(failure_reason_);
            start_teardown(Teardown::kFailure, 0);
        }
    }

    int running_count() const {
        int n = 0;
        for (const Child &c : children_) n += c.running;
        return n;
    }

    void signal_running(int sig) {
        for (Child &c : children_) {
            if (!c.running) continue;
            c.sent_mask |= uint64_t{1} << sig;
            kill(c.pid, sig);
        }
    }

    void start_teardown(Teardown why, int sig) {
        const auto now = Clock::now();
        if (teardown_ != Teardown::kNone) {
            // A second interrupt while stopping: stop waiting politely.
            if (why == Teardown::kSignal) {
                signal_running(SIGKILL);
                next_signal_ = 0;
            }
            return;
        }
        teardown_ = why;
        switch (why) {
        case Teardown::kFailure:
        case Teardown::kLaunchError:
            // Peers blocked in a collective return an error at once instead of
            // waiting for their boot timeout; SIGTERM follows after the grace.
            mark_job_failed(failure_code_, failure_reason_);
            next_signal_ = SIGTERM;
            break;
        case Teardown::kTimeout:
            signal_running(SIGTERM);
            next_signal_ = SIGKILL;
            break;
        case Teardown::kSignal:
            mark_job_failed(128 + sig, "vipl-run was interrupted");
            signal_running(sig);
            got_signal_ = sig;
            next_signal_ = SIGKILL;
            break;
        case Teardown::kNone: break;
        }
        next_signal_at_ = now + kGrace;
    }

    // Ranks blocked in a collective learn at once: through the boot segment on
    // one host, through rank 0 (which tells every host) with --boot.
    void mark_job_failed(int code, const std::string &why) {
        if (seg_.is_open()) seg_.mark_aborted(boot::kAbortByLauncher, code, why.c_str());
        if (opts_.boot.empty()) return;
        boot::TcpEndpoint ep;
        std::string err;
        char host[256] = "?";
        gethostname(host, sizeof host - 1);
        if (boot::parse_boot_spec(opts_.boot, &ep, &err))
            boot::notify_job_failed(ep, job_, opts_.world, code,
                                    "vipl-run on " + std::string(host) + " stopped the job: " + why);
    }

    void on_child_exit(Child &c, int status) {
        c.running = false;
        c.status = status;
        bool by_us = WIFSIGNALED(status) && (c.sent_mask & (uint64_t{1} << WTERMSIG(status)));
        if (by_us) {
            killed_by_us_.push_back(c.rank);
            return;
        }
        if (status == 0 || c.exec_failed) {
            if (c.exec_failed && teardown_ == Teardown::kNone) start_teardown(Teardown::kFailure, 0);
            return;
        }
        say("rank " + std::to_string(c.rank) + " (pid " + std::to_string(c.pid) + ") " + describe_status(status));
        if (teardown_ == Teardown::kNone) {
            failure_reason_ = "rank " + std::to_string(c.rank) + " " + describe_status(status);
            failure_code_ = status_code(status);
            if (running_count() > 0)
                say("stopping the job: the other ranks get SIGTERM in " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(kGrace).count()) +
                        " ms unless they exit first",
                    log::Level::warn);
            start_teardown(Teardown::kFailure, 0);
        }
    }

    void reap() {
        for (;;) {
            int status = 0;
            pid_t pid = waitpid(-1, &status, WNOHANG);
            if (pid <= 0) return;
            for (Child &c : children_)
                if (c.pid == pid && c.running) on_child_exit(c, status);
        }
    }

    void drain_signals() {
        struct signalfd_siginfo si;
        while (read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
            int sig = static_cast<int>(si.ssi_signo);
            if (sig == SIGCHLD) continue; // reap() below handles every exit
            say(std::string("got ") + strsignal(sig) + ", forwarding it to the job", log::Level::warn);
            start_teardown(Teardown::kSignal, sig);
        }
        reap();
    }

    void on_deadline(Clock::time_point now) {
        if (teardown_ == Teardown::kNone && job_deadline_ && now >= *job_deadline_) {
            std::vector<int> still;
            for (const Child &c : children_)
                if (c.running) still.push_back(c.rank);
            char secs[32];
            std::snprintf(secs, sizeof secs, "%g", opts_.timeout_s);
            say(std::string("timed out after ") + secs + " s (--timeout); killing rank(s) " + rank_list(still));
            start_teardown(Teardown::kTimeout, 0);
        }
        if (next_signal_ && now >= next_signal_at_) {
            signal_running(next_signal_);
            next_signal_ = next_signal_ == SIGTERM ? SIGKILL : 0;
            next_signal_at_ = now + kGrace;
        }
    }

    int poll_timeout_ms(Clock::time_point now, std::optional<Clock::time_point> drain_end) const {
        std::optional<Clock::time_point> next;
        auto consider = [&](Clock::time_point t) {
            if (!next || t < *next) next = t;
        };
        if (teardown_ == Teardown::kNone && job_deadline_) consider(*job_deadline_);
        if (next_signal_) consider(next_signal_at_);
        if (drain_end) consider(*drain_end);
        if (!next) return -1;
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count() + 1;
        return static_cast<int>(std::max<long long>(0, std::min<long long>(ms, 60'000)));
    }

    void event_loop() {
        std::optional<Clock::time_point> drain_end;
        std::vector<pollfd> fds;
        std::vector<OutputTagger *> who;
        for (;;) {
            const auto now = Clock::now();
            on_deadline(now);
            bool any_pipe = false;
            for (auto &t : taggers_) any_pipe |= t->open();
            if (running_count() == 0) {
                if (!any_pipe) return;
                if (!drain_end) drain_end = now + kDrainLimit;
                if (now >= *drain_end) return; // taggers_ flush and close on destruction
            }
            fds.clear();
            who.clear();
            fds.push_back({sigfd_, POLLIN, 0});
            who.push_back(nullptr);
            for (auto &t : taggers_) {
                if (!t->open()) continue;
                fds.push_back({t->fd(), POLLIN, 0});
                who.push_back(t.get());
            }
            int n = poll(fds.data(), fds.size(), poll_timeout_ms(now, drain_end));
            if (n < 0 && errno != EINTR) {
                say(std::string("poll: ") + std::strerror(errno));
                signal_running(SIGKILL);
            }
            if (n <= 0) continue;
            // Output first, so a rank's last lines are printed before its exit report.
            for (size_t i = 1; i < fds.size(); ++i)
                if (fds[i].revents) who[i]->on_readable();
            if (fds[0].revents) drain_signals();
        }
    }

    int exit_code() const {
        if (teardown_ == Teardown::kTimeout) return kExitTimeout;
        if (teardown_ == Teardown::kSignal) return 128 + got_signal_;
        if (!killed_by_us_.empty()) {
            std::vector<int> ranks = killed_by_us_;
            std::sort(ranks.begin(), ranks.end());
            say("stopped rank(s) " + rank_list(ranks) + " that were still running", log::Level::warn);
        }
        int worst = 0;
        for (const Child &c : children_) {
            if (c.pid < 0 || c.running) continue;
            bool by_us = WIFSIGNALED(c.status) && (c.sent_mask & (uint64_t{1} << WTERMSIG(c.status)));
            if (!by_us) worst = std::max(worst, status_code(c.status));
        }
        if (teardown_ == Teardown::kLaunchError && worst == 0) return kExitLaunchFail;
        return worst;
    }

    LaunchOptions opts_;
    std::string job_;
    boot::Segment seg_;
    sigset_t saved_mask_{};
    int sigfd_ = -1;
    std::vector<Child> children_;
    std::vector<std::unique_ptr<OutputTagger>> taggers_;
    std::vector<int> killed_by_us_;
    Teardown teardown_ = Teardown::kNone;
    std::string failure_reason_ = "a rank failed";
    int failure_code_ = 1;
    int got_signal_ = 0;
    int next_signal_ = 0; // what to send at next_signal_at_ (0 = nothing)
    Clock::time_point next_signal_at_{};
    std::optional<Clock::time_point> job_deadline_;
};

} // namespace

int run_job(const LaunchOptions &opts) { return JobRunner(opts).run(); }

} // namespace viastack::launcher
