// soak_driver - runs the soak programs (am_soak, splitc_soak) under vipl-run
// and checks what a soak must show (issue #16): every rank exits 0, the
// counts are exact (the programs check them and print their errors), each
// rank's open descriptors after finalize equal those before init, resident
// memory does not grow from the middle round to the last beyond a bound
// (growth there scales with the messages of the second half: a leak),
// and no /dev/shm/viastack-<job>-* file is left after the job.  It reports
// messages, wall time and peak resident memory per rank.
//
//   soak_driver --vipl-run PATH --am PATH --splitc PATH -n N
//               --am-requests R --splitc-ops S [--rounds K] [--timeout SEC]
//               [--max-rss-growth-kb KB]
//
// Exit code 0 when both programs pass every check, 1 otherwise, 2 on bad usage.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

struct Options {
    std::string vipl_run, am, splitc;
    int np = 0;
    long am_requests = 0, splitc_ops = 0, rounds = 4, timeout = 300, max_rss_growth_kb = 256;
};

struct RankLine {
    int fds_before = -1, fds_after = -1, shm_maps_during = -1, shm_maps_after = -1;
    long rss_half = -1, rss_last = -1, anon_half = -1, anon_last = -1, shmem_last = -1, hwm = -1, errors = -1;
};

std::set<std::string> shm_listing() {
    std::set<std::string> names;
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator("/dev/shm", ec)) {
        std::string n = e.path().filename().string();
        if (n.rfind("viastack-", 0) == 0) names.insert(n);
    }
    return names;
}

// Runs argv, echoing and collecting its merged stdout and stderr; returns the
// wait status and, in *child, the child's pid.
int run(const std::vector<std::string> &argv, std::string *out, pid_t *child) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    *child = pid;
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        std::vector<char *> args;
        for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        std::fprintf(stderr, "soak_driver: cannot run %s: %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) {
        out->append(buf, size_t(n));
        fwrite(buf, 1, size_t(n), stdout);
        fflush(stdout);
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

// One program's run and checks; returns the number of failed checks.
int soak(const Options &o, const std::string &what, const std::string &prog, long count) {
    std::printf("=== soak_driver: %s, %d processes, %ld, %ld rounds ===\n", what.c_str(), o.np, count, o.rounds);
    std::fflush(stdout);
    const auto shm_before = shm_listing();
    std::string out;
    pid_t launcher = -1;
    const auto t0 = std::chrono::steady_clock::now();
    int status = run({o.vipl_run, "-n", std::to_string(o.np), "--timeout", std::to_string(o.timeout), prog,
                      std::to_string(count), std::to_string(o.rounds)},
                     &out, &launcher);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto shm_after = shm_listing();

    std::vector<std::string> failures;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        failures.push_back("vipl-run exit code " + std::to_string(code) +
                           (code == 124 ? " (timed out: a deadlock, or far too slow for --timeout)" : ""));
    }
    // Per-rank lines.
    std::map<int, RankLine> ranks;
    const std::regex rank_re("soak-rank " + what +
                             " ([0-9]+): fds_before=(-?[0-9]+) fds_after=(-?[0-9]+) shm_maps_during=(-?[0-9]+) "
                             "shm_maps_after=(-?[0-9]+) rss_half_kb=(-?[0-9]+) "
                             "rss_last_kb=(-?[0-9]+) anon_half_kb=(-?[0-9]+) anon_last_kb=(-?[0-9]+) "
                             "shmem_last_kb=(-?[0-9]+) hwm_kb=(-?[0-9]+) errors=(-?[0-9]+)");
    for (std::sregex_iterator it(out.begin(), out.end(), rank_re), end; it != end; ++it) {
        const auto &m = *it;
        RankLine l{std::stoi(m[2]),  std::stoi(m[3]),  std::stoi(m[4]), std::stoi(m[5]),
                   std::stol(m[6]),  std::stol(m[7]),  std::stol(m[8]), std::stol(m[9]),
                   std::stol(m[10]), std::stol(m[11]), std::stol(m[12])};
        if (!ranks.emplace(std::stoi(m[1]), l).second)
            failures.push_back("rank " + std::string(m[1]) + " reported twice");
    }
    if (int(ranks.size()) != o.np)
        failures.push_back(std::to_string(ranks.size()) + " of " + std::to_string(o.np) + " ranks reported");
    long hwm_max = 0, hwm_min = -1, growth_max = 0, rss_growth_max = 0, shmem_max = 0;
    int fds_min = -1, fds_max = -1;
    for (const auto &[r, l] : ranks) {
        if (l.errors != 0)
            failures.push_back("rank " + std::to_string(r) + ": " + std::to_string(l.errors) + " errors");
        if (l.fds_before < 0 || l.fds_after != l.fds_before)
            failures.push_back("rank " + std::to_string(r) + ": " + std::to_string(l.fds_after) +
                               " descriptors after finalize, " + std::to_string(l.fds_before) + " before init");
        if (l.shm_maps_during <= 0)
            failures.push_back("rank " + std::to_string(r) + ": no /dev/shm/viastack-* mapping seen while running");
        if (l.shm_maps_after != 0)
            failures.push_back("rank " + std::to_string(r) + ": " + std::to_string(l.shm_maps_after) +
                               " /dev/shm/viastack-* mapping(s) left after finalize");
        // Private memory (RssAnon): what a leak of the heap or of mappings grows.
        // Shared pages of the job's wire are counted in RSS as a rank first
        // touches them (RssShmem), which is not a leak; they are reported.
        const long growth = l.anon_last - l.anon_half;
        if (l.anon_half < 0 || growth > o.max_rss_growth_kb)
            failures.push_back("rank " + std::to_string(r) + ": private resident memory (RssAnon) grew by " +
                               std::to_string(growth) + " kB from the middle round to the last (bound " +
                               std::to_string(o.max_rss_growth_kb) + ")");
        // VmHWM lags the resident count by the kernel's per-thread RSS caching:
        // the peak is the largest of it and the samples.
        const long peak = std::max({l.hwm, l.rss_half, l.rss_last});
        hwm_max = std::max(hwm_max, peak);
        hwm_min = hwm_min < 0 ? peak : std::min(hwm_min, peak);
        growth_max = std::max(growth_max, growth);
        rss_growth_max = std::max(rss_growth_max, l.rss_last - l.rss_half);
        shmem_max = std::max(shmem_max, l.shmem_last);
        fds_min = fds_min < 0 ? l.fds_before : std::min(fds_min, l.fds_before);
        fds_max = std::max(fds_max, l.fds_before);
    }
    // Summary line from rank 0: message count, job id, shm files seen while running.
    std::smatch m;
    const std::regex sum_re(what +
                            "_soak: .* ([0-9]+) (messages|operations), ([0-9.]+) s, .*?([0-9]+) errors, "
                            "shm_files=([0-9]+) job=([A-Za-z0-9._-]+)");
    std::string job, messages = "?", inner_time = "?";
    if (!std::regex_search(out, m, sum_re)) {
        failures.push_back("no summary line from rank 0");
    } else {
        messages = m[1];
        inner_time = m[3];
        job = m[6];
        if (std::stol(m[1]) < count) failures.push_back("fewer messages than asked for: " + std::string(m[1]));
        if (std::stol(m[4]) != 0) failures.push_back(std::string(m[4]) + " errors in the job");
        if (std::stol(m[5]) == 0) failures.push_back("no viastack-" + job + "-* shm file seen while running");
    }
    // vipl-run names its job "<its pid>-<random>" (docs/launcher.md), so the
    // job's files are known even when no rank got as far as reporting the id.
    const std::string job_prefix = "viastack-" + std::to_string(launcher) + "-";
    if (!job.empty() && ("viastack-" + job + "-").rfind(job_prefix, 0) != 0)
        failures.push_back("job id " + job + " is not vipl-run's (pid " + std::to_string(launcher) + ")");
    if (job.empty()) job = std::to_string(launcher) + "-*";
    // Shared memory: nothing of this job left; new files of other jobs (other
    // users of the machine) are only listed.
    int left = 0;
    std::string others;
    for (const auto &n : shm_after) {
        if (shm_before.count(n)) continue;
        if (n.rfind(job_prefix, 0) == 0) {
            failures.push_back("/dev/shm/" + n + " left after the job");
            ++left;
        } else {
            others += " " + n;
        }
    }
    std::printf(
        "soak_driver: %s: %s %s in %s s inside the program, %.1f s wall for the job; peak RSS per rank "
        "%ld..%ld kB; growth middle->last round at most %ld kB private (RssAnon), %ld kB RSS; shared wire pages "
        "resident (RssShmem) at most %ld kB; open fds before init %d..%d, after finalize: %s; "
        "shm: %d file(s) of job %s left (%zu viastack-* before, %zu after)%s%s\n",
        what.c_str(), messages.c_str(), what == "am" ? "messages" : "operations", inner_time.c_str(), wall, hwm_min,
        hwm_max, growth_max, rss_growth_max, shmem_max, fds_min, fds_max,
        std::all_of(ranks.begin(), ranks.end(), [](auto &p) { return p.second.fds_after == p.second.fds_before; })
            ? "the same on every rank"
            : "DIFFERENT",
        left, job.c_str(), shm_before.size(), shm_after.size(),
        others.empty() ? "" : "; other jobs' new files (ignored):", others.c_str());
    for (const auto &f : failures) std::printf("soak_driver: %s: FAIL: %s\n", what.c_str(), f.c_str());
    std::fflush(stdout);
    return int(failures.size());
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "soak_driver: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--vipl-run") o.vipl_run = next();
        else if (a == "--am") o.am = next();
        else if (a == "--splitc") o.splitc = next();
        else if (a == "-n") o.np = std::atoi(next().c_str());
        else if (a == "--am-requests") o.am_requests = std::atol(next().c_str());
        else if (a == "--splitc-ops") o.splitc_ops = std::atol(next().c_str());
        else if (a == "--rounds") o.rounds = std::atol(next().c_str());
        else if (a == "--timeout") o.timeout = std::atol(next().c_str());
        else if (a == "--max-rss-growth-kb") o.max_rss_growth_kb = std::atol(next().c_str());
        else {
            std::fprintf(stderr, "soak_driver: unknown option %s (see the comment at the top of soak_driver.cpp)\n",
                         a.c_str());
            return 2;
        }
    }
    if (o.vipl_run.empty() || o.np < 2 || o.rounds < 2 || o.timeout < 1 || (o.am.empty() && o.splitc.empty()) ||
        (!o.am.empty() && o.am_requests < 1) || (!o.splitc.empty() && o.splitc_ops < 1)) {
        std::fprintf(stderr,
                     "usage: soak_driver --vipl-run PATH [--am PATH --am-requests R] [--splitc PATH --splitc-ops S] "
                     "-n N (N >= 2) [--rounds K (K >= 2)] [--timeout SEC] [--max-rss-growth-kb KB]\n");
        return 2;
    }
    int failed = 0;
    if (!o.am.empty()) failed += soak(o, "am", o.am, o.am_requests);
    if (!o.splitc.empty()) failed += soak(o, "splitc", o.splitc, o.splitc_ops);
    std::printf("soak_driver: %s (%d failed checks)\n", failed ? "FAIL" : "PASS", failed);
    return failed ? 1 : 0;
}
