// launcher_test - runs vipl-run on boot_test_child and checks what really
// happened: exit codes, messages, /dev/shm cleanup, timing, signal handling.
#include <algorithm>
#include <sched.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "observe.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct RunResult {
    int code = -1; // exit code, or 128+signal
    std::string out, err;
    double secs = 0;
};

std::string slurp(const std::string &path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string temp_path(const char *what) { return "/tmp/launcher_test-" + std::to_string(getpid()) + "-" + what; }

// Runs vipl-run with args; `during` (if given) is called with its pid and the
// path of its stdout file while it runs.  Never waits more than 60 s.
RunResult run_vipl(const std::vector<std::string> &args, const std::vector<std::string> &env = {},
                   const std::function<void(pid_t, const std::string &)> &during = nullptr) {
    const std::string out = temp_path("out"), err = temp_path("err");
    auto t0 = Clock::now();
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        for (const auto &kv : env) putenv(strdup(kv.c_str()));
        std::vector<char *> argv{const_cast<char *>(VIPL_RUN_PATH)};
        for (const auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
        argv.push_back(nullptr);
        execv(VIPL_RUN_PATH, argv.data());
        _exit(99);
    }
    RunResult r;
    if (during) during(pid, out);
    int status = 0;
    if (!boot_test::wait_child_until(pid, t0 + 60s, &status)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ADD_FAILURE() << "vipl-run did not finish in 60 s";
    }
    r.secs = std::chrono::duration<double>(Clock::now() - t0).count();
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    unlink(out.c_str());
    unlink(err.c_str());
    return r;
}

std::vector<std::string> child(std::vector<std::string> head, std::vector<std::string> action) {
    head.push_back(BOOT_CHILD_PATH);
    head.insert(head.end(), action.begin(), action.end());
    return head;
}

std::vector<std::string> job_files(const std::string &job) {
    std::vector<std::string> files;
    std::string prefix = "viastack-" + job + "-";
    if (DIR *d = opendir("/dev/shm")) {
        while (struct dirent *e = readdir(d))
            if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) files.push_back(e->d_name);
        closedir(d);
    }
    return files;
}

std::string match1(const std::string &text, const std::string &re) {
    std::smatch m;
    return std::regex_search(text, m, std::regex(re)) ? m[1].str() : "";
}

int count(const std::string &text, const std::string &needle) {
    int n = 0;
    for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
    return n;
}

// Waits until the file holds `lines` lines (children report "ready").
bool wait_lines(const std::string &path, int lines) {
    for (auto t0 = Clock::now(); Clock::now() - t0 < 20s; std::this_thread::sleep_for(10ms))
        if (count(slurp(path), "\n") >= lines) return true;
    return false;
}

bool all_gone(const std::vector<pid_t> &pids) {
    for (auto t0 = Clock::now(); Clock::now() - t0 < 5s; std::this_thread::sleep_for(10ms)) {
        bool alive = false;
        for (pid_t p : pids) alive |= kill(p, 0) == 0;
        if (!alive) return true;
    }
    return false;
}

TEST(Launcher, ChildExitCodePropagates) {
    RunResult r = run_vipl(child({"-n", "3"}, {"exit", "1", "3"}));
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("rank 1 (pid"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("exited with code 3"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("stopped rank(s) 0,2"), std::string::npos) << r.err;
    EXPECT_LT(r.secs, 10);
}

// vipl_boot_init/finalize are reference counted: a library finalizing its
// use (splitc_finalize, FM_finalize) leaves the program's collectives working.
TEST(Launcher, LibraryFinalizeKeepsTheProgramsBootService) {
    RunResult r = run_vipl(child({"-n", "3"}, {"nested"}));
    EXPECT_EQ(r.code, 0) << r.err;
}

TEST(Launcher, PeersBlockedInBarrierLearnOfTheFailureAtOnce) {
    RunResult r = run_vipl(child({"-n", "3"}, {"exit", "2", "3", "wait"}));
    EXPECT_EQ(r.code, 3) << r.err;
    // The peers return from their barrier with the launcher's abort mark and
    // exit on their own, before any SIGTERM.
    EXPECT_EQ(count(r.err, "interrupted: vipl-run aborted the job"), 2) << r.err;
    EXPECT_EQ(r.err.find("stopped rank"), std::string::npos) << r.err;
}

TEST(Launcher, KilledChildGives128PlusSignalAndShmIsRemoved) {
    RunResult r = run_vipl(child({"-n", "3"}, {"kill", "1", "9"}));
    EXPECT_EQ(r.code, 137) << r.err;
    EXPECT_NE(r.err.find("rank 1 (pid"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("killed by signal 9"), std::string::npos) << r.err;
    std::string job = match1(r.out, "job=(\\S+)");
    ASSERT_FALSE(job.empty()) << r.out;
    EXPECT_EQ(match1(r.out, "files=(\\d+)"), "4") << "boot segment + 3 test files expected";
    EXPECT_TRUE(job_files(job).empty()) << "left behind: " << job_files(job).front();
}

// SIGABRT rather than SIGSEGV: sanitizer builds turn a SIGSEGV into exit(1).
TEST(Launcher, AbortSignalGives134) {
    RunResult r = run_vipl(child({"-n", "2"}, {"kill", "0", "6"}));
    EXPECT_EQ(r.code, 134) << r.err;
    EXPECT_TRUE(job_files(match1(r.out, "job=(\\S+)")).empty());
}

TEST(Launcher, TimeoutKillsHangingJob) {
    RunResult r = run_vipl(child({"-n", "3", "--timeout", "1"}, {"hang"}));
    EXPECT_EQ(r.code, 124) << r.err;
    EXPECT_NE(r.err.find("timed out after 1 s"), std::string::npos) << r.err;
    EXPECT_GE(r.secs, 0.9);
    EXPECT_LT(r.secs, 6);
    std::string job = match1(r.out, "job=(\\S+)");
    ASSERT_FALSE(job.empty()) << r.out;
    EXPECT_TRUE(job_files(job).empty());
}

TEST(Launcher, TimeoutEscalatesToSigkillForRanksIgnoringSigterm) {
    RunResult r = run_vipl(child({"-n", "2", "--timeout", "0.5"}, {"hang", "ignore-term"}));
    EXPECT_EQ(r.code, 124) << r.err;
    EXPECT_GE(r.secs, 1.4); // 0.5 s timeout + 1 s SIGTERM grace
    EXPECT_LT(r.secs, 6);
    EXPECT_TRUE(job_files(match1(r.out, "job=(\\S+)")).empty());
}

TEST(Launcher, AbortEndsJobWithItsCodeAndWakesPeers) {
    RunResult r = run_vipl(child({"-n", "4"}, {"abort", "2", "9"}));
    EXPECT_EQ(r.code, 9) << r.err;
    EXPECT_NE(r.err.find("aborting the job with code 9: test abort reason"), std::string::npos) << r.err;
    EXPECT_EQ(count(r.err, "rank 2 aborted the job (code 9): test abort reason"), 3) << r.err;
    // Each waiting peer got an error from its barrier well before the
    // launcher's grace period (1 s) would have ended it with SIGTERM.
    std::regex peer("peer \\d: barrier returned -4 after (\\d+) ms");
    int peers = 0;
    for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), peer); it != std::sregex_iterator(); ++it) {
        ++peers;
        EXPECT_LT(std::stoi((*it)[1].str()), 900);
    }
    EXPECT_EQ(peers, 3) << r.err;
}

TEST(Launcher, BootTimeoutNamesTheMissingRank) {
    RunResult r = run_vipl(child({"-n", "3"}, {"boot-timeout", "1"}), {"VIASTACK_BOOT_TIMEOUT=0.5"});
    EXPECT_EQ(r.code, 5) << r.err;
    // Whichever peer times out first exits; the other may then be woken by the
    // launcher's abort mark instead of its own timeout.
    EXPECT_GE(count(r.err, "barrier timed out after 0.5 s (VIASTACK_BOOT_TIMEOUT): rank 1 did not arrive"), 1) << r.err;
    EXPECT_EQ(count(r.err, "barrier returned -4"), 2) << r.err;
    EXPECT_LT(r.secs, 10);
}

TEST(Launcher, TagOutputPrefixesEveryLine) {
    RunResult r = run_vipl(child({"-n", "2", "--tag-output"}, {"print", "3"}));
    EXPECT_EQ(r.code, 0) << r.err;
    std::istringstream out(r.out);
    std::regex line("\\[(\\d)\\] out \\d of rank (\\d)");
    int lines = 0;
    for (std::string l; std::getline(out, l); ++lines) {
        std::smatch m;
        ASSERT_TRUE(std::regex_match(l, m, line)) << l;
        EXPECT_EQ(m[1].str(), m[2].str());
    }
    EXPECT_EQ(lines, 6);
    EXPECT_NE(r.err.find("[1] err 2 of rank 1\n"), std::string::npos) << r.err;
}

TEST(Launcher, TagOutputKeepsEveryLineOfABusyJob) {
    RunResult r = run_vipl(child({"-n", "4", "--tag-output"}, {"print", "20000"}));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(count(r.out, "\n"), 80000);
    EXPECT_EQ(count(r.err, "\n"), 80000);
    for (int rank = 0; rank < 4; ++rank) {
        std::string p = std::string("[").append(std::to_string(rank)).append("] out ");
        EXPECT_EQ(count(r.out, p), 20000) << "rank " << rank;
        EXPECT_NE(r.out.find(p + "19999 of rank " + std::to_string(rank) + "\n"), std::string::npos);
    }
}

TEST(Launcher, TagOutputFlushesALastLineWithoutNewline) {
    RunResult r = run_vipl({"-n", "1", "--tag-output", "--", "sh", "-c", "printf 'no newline'"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "[0] no newline\n");
}

// --bind core: each rank alone on its own CPU, the i-th of vipl-run's own,
// with the job's CPUs named; refused (usage error, nothing started) with more
// ranks than CPUs.
TEST(Launcher, BindCorePutsEachRankOnACpuOfItsOwn) {
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    const int n = int(std::min<size_t>(cpus.size(), 2));
    RunResult r = run_vipl({"-n", std::to_string(n), "--bind", "core", "--tag-output", "--", "sh", "-c",
                            "echo cpus $(grep Cpus_allowed_list /proc/self/status | cut -f2) job $VIASTACK_JOB_CPUS"});
    ASSERT_EQ(r.code, 0) << r.err;
    std::string job;
    for (int i = 0; i < n; ++i) {
        if (i) job += ',';
        job += std::to_string(cpus[size_t(i)]);
    }
    for (int i = 0; i < n; ++i) {
        std::string want = "[";
        want += std::to_string(i);
        want += "] cpus ";
        want += std::to_string(cpus[size_t(i)]);
        want += " job ";
        want += job;
        want += '\n';
        EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
    }
    RunResult over = run_vipl({"-n", std::to_string(cpus.size() + 1), "--bind", "core", "true"});
    EXPECT_EQ(over.code, 2);
    EXPECT_NE(over.err.find("use --bind none"), std::string::npos) << over.err;
    RunResult none = run_vipl({"-n", "1", "--", "sh", "-c", "echo job=$VIASTACK_JOB_CPUS"});
    EXPECT_NE(none.out.find("job=\n"), std::string::npos) << none.out; // no binding by default
}

TEST(Launcher, WithoutTagOutputChildrenWriteDirectly) {
    RunResult r = run_vipl(child({"-n", "2"}, {"print", "1"}));
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("out 0 of rank 1\n"), std::string::npos);
    EXPECT_EQ(r.out.find("["), std::string::npos);
}

TEST(Launcher, EnvironmentAndOptionsReachChildren) {
    RunResult r = run_vipl(child({"-n", "3", "--provider", "verbs", "--mode", "inline"}, {"env"}),
                           {"VIASTACK_JOB=stale", "VIPL_PROVIDER=nicfw"});
    EXPECT_EQ(r.code, 0) << r.err;
    std::string job = match1(r.out, "job=(\\S+)");
    EXPECT_TRUE(std::regex_match(job, std::regex("\\d+-[0-9a-f]{8}"))) << job;
    for (int rank = 0; rank < 3; ++rank)
        EXPECT_NE(r.out.find("rank=" + std::to_string(rank) + " size=3 job=" + job + " provider=verbs mode=inline\n"),
                  std::string::npos)
            << r.out;
    EXPECT_TRUE(job_files(job).empty());
}

TEST(Launcher, BadOptionsExitTwoWithAMessage) {
    const std::vector<std::vector<std::string>> bad = {{"-n", "0", "true"},
                                                       {"--bogus", "-n", "2", "true"},
                                                       {"-n", "2"},
                                                       {"-n", "2", "--provider", "ib", "true"},
                                                       {"-n", "2", "--mode", "fast", "true"},
                                                       {"-n", "2", "--timeout", "-1", "true"},
                                                       {"true"},
                                                       {"-n", "abc", "true"}};
    for (const auto &args : bad) {
        RunResult r = run_vipl(args);
        EXPECT_EQ(r.code, 2) << args[0] << " " << (args.size() > 1 ? args[1] : "");
        EXPECT_NE(r.err.find("vipl-run:"), std::string::npos) << r.err;
    }
    EXPECT_EQ(run_vipl({"--help"}).code, 0);
}

// --boot and its companions: bad combinations are usage errors (exit 2, a
// message naming the option), never a started job.
TEST(Launcher, BootOptionsAreValidated) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
        {{"-n", "2", "--world", "4", "true"}, "--world requires --boot"},
        {{"-n", "2", "--first-rank", "2", "true"}, "--first-rank requires --boot"},
        {{"-n", "2", "--job", "j", "true"}, "--job requires --boot"},
        {{"-n", "2", "--boot", "tcp:127.0.0.1:7000", "true"}, "--boot requires --job"},
        {{"-n", "2", "--job", "j", "--boot", "tcp:127.0.0.1", "true"}, "must be tcp:<host>:<port>"},
        {{"-n", "2", "--job", "j", "--boot", "127.0.0.1:7000", "true"}, "must start with 'tcp:'"},
        {{"-n", "2", "--job", "j", "--boot", "tcp:h:65536", "true"}, "not a number in 1..65535"},
        {{"-n", "2", "--job", "a b", "--boot", "tcp:h:1", "true"}, "[A-Za-z0-9._-]"},
        {{"-n", "3", "--world", "4", "--first-rank", "2", "--job", "j", "--boot", "tcp:h:1", "true"},
         "--first-rank 2 with -n 3 needs ranks up to 4, but --world is 4"},
        {{"-n", "3", "--job", "j", "--boot", "tcp:h:1", "--first-rank", "1", "true"}, "but --world is 3"},
        {{"-n", "1", "--world", "0", "--job", "j", "--boot", "tcp:h:1", "true"}, "--world"},
    };
    for (const auto &[args, msg] : bad) {
        RunResult r = run_vipl(args);
        EXPECT_EQ(r.code, 2) << msg;
        EXPECT_NE(r.err.find("vipl-run: "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(msg), std::string::npos) << r.err;
        EXPECT_LT(r.secs, 5);
    }
}

// A VIASTACK_BOOT left in the environment must not turn a single-host job
// into a TCP one (it would wait for a rank 0 nobody started).
TEST(Launcher, InheritedVIASTACK_BOOTIsIgnoredWithoutBoot) {
    RunResult r = run_vipl(child({"-n", "2"}, {"env"}), {"VIASTACK_BOOT=tcp:127.0.0.1:1"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("rank=1 size=2"), std::string::npos) << r.out;
    EXPECT_LT(r.secs, 5);
}

// With --boot, one vipl-run can also run a whole job alone (world = -n).
TEST(Launcher, BootWithOneLauncherRunsTheWholeJob) {
    for (int attempt = 0; attempt < 5; ++attempt) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
        close(fd);
        const std::string job = "solo" + std::to_string(getpid());
        RunResult r = run_vipl(
            child({"-n", "3", "--job", job, "--boot", "tcp:127.0.0.1:" + std::to_string(ntohs(a.sin_port))}, {"env"}));
        if (r.err.find("the port is in use") != std::string::npos) continue; // lost a race for the port
        EXPECT_EQ(r.code, 0) << r.err;
        for (int rank = 0; rank < 3; ++rank)
            EXPECT_NE(r.out.find("rank=" + std::to_string(rank) + " size=3 job=" + job + " "), std::string::npos)
                << r.out;
        EXPECT_TRUE(job_files(job).empty());
        return;
    }
    ADD_FAILURE() << "no free port in 5 attempts";
}

TEST(Launcher, MissingProgramExits127) {
    RunResult r = run_vipl({"-n", "2", "/nonexistent/program"});
    EXPECT_EQ(r.code, 127);
    EXPECT_NE(r.err.find("cannot execute '/nonexistent/program'"), std::string::npos) << r.err;
}

TEST(Launcher, DoubleDashAllowsProgramArgumentsThatLookLikeOptions) {
    RunResult r = run_vipl({"-n", "1", "--", "sh", "-c", "echo $0", "--tag-output"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "--tag-output\n");
}

void check_signal_forwarding(int sig) {
    std::vector<pid_t> pids;
    std::string job;
    RunResult r = run_vipl(child({"-n", "3"}, {"hang"}), {}, [&](pid_t vipl, const std::string &out) {
        ASSERT_TRUE(wait_lines(out, 3));
        std::string text = slurp(out);
        job = match1(text, "job=(\\S+)");
        std::regex pid_re("pid=(\\d+)");
        for (auto it = std::sregex_iterator(text.begin(), text.end(), pid_re); it != std::sregex_iterator(); ++it)
            pids.push_back(std::stoi((*it)[1].str()));
        EXPECT_EQ(job_files(job).size(), 1u) << "boot segment exists while the job runs";
        kill(vipl, sig);
    });
    EXPECT_EQ(r.code, 128 + sig) << r.err;
    EXPECT_LT(r.secs, 10);
    EXPECT_EQ(pids.size(), 3u);
    EXPECT_TRUE(all_gone(pids));
    EXPECT_TRUE(job_files(job).empty());
}

TEST(Launcher, SigtermIsForwardedAndShmRemoved) { check_signal_forwarding(SIGTERM); }
TEST(Launcher, SigintIsForwardedAndShmRemoved) { check_signal_forwarding(SIGINT); }

// vipl-run itself SIGKILLed: it cannot clean up, but its children must not
// survive it (PR_SET_PDEATHSIG), so the job still cannot hang.
TEST(Launcher, ChildrenDieWithASigkilledLauncher) {
    std::vector<pid_t> pids;
    std::string job;
    run_vipl(child({"-n", "2"}, {"hang"}), {}, [&](pid_t vipl, const std::string &out) {
        ASSERT_TRUE(wait_lines(out, 2));
        std::string text = slurp(out);
        job = match1(text, "job=(\\S+)");
        std::regex pid_re("pid=(\\d+)");
        for (auto it = std::sregex_iterator(text.begin(), text.end(), pid_re); it != std::sregex_iterator(); ++it)
            pids.push_back(std::stoi((*it)[1].str()));
        kill(vipl, SIGKILL);
    });
    EXPECT_EQ(pids.size(), 2u);
    EXPECT_TRUE(all_gone(pids));
    for (const auto &f : job_files(job)) unlink(("/dev/shm/" + f).c_str());
}

// 3 ranks wait ~1.5 s in a barrier for a sleeping rank 0 on a 2-core box: they
// must sleep (futex), not spin.
TEST(Launcher, WaitingInABarrierDoesNotBurnCpu) {
    RunResult r = run_vipl(child({"-n", "4"}, {"idle-wait", "1500"}));
    ASSERT_EQ(r.code, 0) << r.err;
    std::regex cpu("cpu-ms (\\d) (\\d+)");
    int ranks = 0;
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), cpu); it != std::sregex_iterator(); ++it) {
        ++ranks;
        EXPECT_LT(std::stol((*it)[2].str()), 300) << "rank " << (*it)[1] << " used CPU while waiting";
    }
    EXPECT_EQ(ranks, 4) << r.out;
    EXPECT_GE(r.secs, 1.4);
}

// Without vipl-run: three processes given the environment by hand, started at
// different times, create the segment lazily and still agree.
TEST(Bootstrap, SegmentIsCreatedLazilyByRanksStartingAtDifferentTimes) {
    const std::string job = "lazy-" + std::to_string(getpid());
    std::vector<pid_t> pids;
    for (int rank = 0; rank < 3; ++rank) {
        pid_t p = fork();
        if (p == 0) {
            // The stagger is the scenario: rank 2 first, rank 0 last.
            usleep(static_cast<useconds_t>((2 - rank) * 200'000));
            setenv("VIASTACK_JOB", job.c_str(), 1);
            setenv("VIASTACK_RANK", std::to_string(rank).c_str(), 1);
            setenv("VIASTACK_SIZE", "3", 1);
            setenv("VIASTACK_BOOT_TIMEOUT", "20", 1);
            execl(BOOT_CHILD_PATH, BOOT_CHILD_PATH, "gather", "100", nullptr);
            _exit(99);
        }
        pids.push_back(p);
    }
    for (pid_t p : pids) {
        int status = 0;
        waitpid(p, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    }
    auto files = job_files(job);
    EXPECT_EQ(files, std::vector<std::string>{"viastack-" + job + "-boot"});
    for (const auto &f : files) unlink(("/dev/shm/" + f).c_str());
}

TEST(Bootstrap, AllgatherUnderLauncherWithEightRanks) {
    RunResult r = run_vipl(child({"-n", "8"}, {"gather", "200"}));
    EXPECT_EQ(r.code, 0) << r.err;
}

} // namespace
