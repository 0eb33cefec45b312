// subprocess.cpp - see subprocess.hpp.
#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

extern char **environ;

namespace logp {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> merged_env(const std::vector<std::string> &add) {
    std::vector<std::string> env;
    for (char **e = environ; *e; ++e) {
        std::string kv = *e;
        std::string key = kv.substr(0, kv.find('='));
        bool overridden = false;
        for (const auto &a : add)
            if (a.substr(0, a.find('=')) == key) overridden = true;
        if (!overridden) env.push_back(kv);
    }
    env.insert(env.end(), add.begin(), add.end());
    return env;
}

std::vector<char *> c_array(std::vector<std::string> &v) {
    std::vector<char *> out;
    for (auto &s : v) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

// The CPUs vipl-run gave the job when it bound each rank to one
// (VIASTACK_JOB_CPUS, "0,1"); false when it did not.
bool job_cpuset(cpu_set_t *set) {
    const char *v = std::getenv("VIASTACK_JOB_CPUS");
    if (!v || !*v) return false;
    CPU_ZERO(set);
    for (const char *p = v; *p;) {
        char *end = nullptr;
        const long c = std::strtol(p, &end, 10);
        if (end == p || c < 0 || c >= CPU_SETSIZE) return false;
        CPU_SET(int(c), set);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return false;
    }
    return CPU_COUNT(set) > 0;
}

// Spawns with stdout+stderr on a pipe; returns pid (or -1 with errno) and the read end.
int spawn(const std::vector<std::string> &argv_in, const std::vector<std::string> &env_add, int *read_fd,
          std::string *err) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        *err = std::string("pipe: ") + std::strerror(errno);
        return -1;
    }
    std::vector<std::string> argv = argv_in, env = merged_env(env_add);
    auto cargv = c_array(argv), cenv = c_array(env);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid = -1;
    // A rank bound to one CPU (vipl-run --bind core) gives its children the
    // job's CPUs back: a peer's two processes, or a job of the layering study,
    // must not be squeezed onto this rank's CPU.  The affinity is inherited
    // through posix_spawn, so it is widened around the call.
    cpu_set_t mine, job;
    const bool widen = job_cpuset(&job) && sched_getaffinity(0, sizeof mine, &mine) == 0 &&
        sched_setaffinity(0, sizeof job, &job) == 0;
    int rc = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data());
    if (widen) sched_setaffinity(0, sizeof mine, &mine);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        *err = "cannot start " + argv_in[0] + ": " + std::strerror(rc);
        return -1;
    }
    *read_fd = fds[0];
    return pid;
}

// Reads until EOF or the deadline; returns true at EOF.
bool drain(int fd, std::string &out, Clock::time_point deadline) {
    char buf[4096];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        int r = poll(&p, 1, int(std::min<long long>(left, 1000)));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return true;
        if (out.size() < (1u << 20)) out.append(buf, std::size_t(n));
    }
}

// Waits for the child until the deadline, then kills it; returns its exit code or -1.
int reap(int pid, Clock::time_point deadline, bool *killed) {
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) return -1;
        if (Clock::now() >= deadline) {
            kill(pid, SIGKILL);
            *killed = true;
            waitpid(pid, &status, 0);
            break;
        }
        usleep(2000);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

std::vector<int> job_cpus() {
    std::vector<int> out;
    const char *v = std::getenv("VIASTACK_JOB_CPUS");
    if (!v || !*v) return out;
    for (const char *p = v; *p;) {
        char *end = nullptr;
        const long c = std::strtol(p, &end, 10);
        if (end == p || c < 0 || c >= CPU_SETSIZE || (*end && *end != ',')) return {};
        out.push_back(int(c));
        p = *end == ',' ? end + 1 : end;
    }
    return out;
}

std::string last_line(const std::string &text) {
    std::string line, last;
    std::stringstream ss(text);
    while (std::getline(ss, line))
        if (!line.empty()) last = line;
    return last;
}

std::string find_on_path(const std::string &name) {
    if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
    const char *path = std::getenv("PATH");
    std::stringstream ss(path ? path : "/usr/bin:/bin");
    std::string dir;
    while (std::getline(ss, dir, ':')) {
        if (dir.empty()) continue;
        std::string full = dir + "/" + name;
        struct stat st;
        if (stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(full.c_str(), X_OK) == 0) return full;
    }
    return "";
}

ProcessResult run_process(const std::vector<std::string> &argv, const std::vector<std::string> &env_add,
                          double timeout_s) {
    ProcessResult r;
    int fd = -1;
    int pid = spawn(argv, env_add, &fd, &r.error);
    if (pid < 0) return r;
    r.started = true;
    auto deadline = Clock::now() + std::chrono::milliseconds(long(timeout_s * 1000));
    drain(fd, r.output, deadline);
    close(fd);
    bool killed = false;
    r.exit_code = reap(pid, deadline, &killed);
    r.timed_out = killed;
    return r;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string> &argv, const std::vector<std::string> &env_add) {
    std::string err;
    pid_ = spawn(argv, env_add, &out_fd_, &err);
    if (pid_ < 0) output_ = err;
}

BackgroundProcess::~BackgroundProcess() {
    if (pid_ > 0) finish(0);
}

ProcessResult BackgroundProcess::finish(double timeout_s) {
    ProcessResult r;
    r.started = pid_ > 0;
    if (pid_ <= 0) {
        r.error = output_;
        return r;
    }
    auto deadline = Clock::now() + std::chrono::milliseconds(long(timeout_s * 1000));
    drain(out_fd_, output_, deadline);
    close(out_fd_);
    bool killed = false;
    r.exit_code = reap(pid_, deadline, &killed);
    r.timed_out = killed;
    r.output = output_;
    pid_ = -1;
    return r;
}

} // namespace logp
