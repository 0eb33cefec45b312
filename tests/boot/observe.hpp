// observe.hpp - what the boot tests wait for, observed instead of slept for:
// a child process's exit (through a pidfd, so the wait wakes at the exit) and a
// TCP port's state (from /proc/net/tcp, without connecting to it, which would
// itself be a joiner the test did not ask for).
#pragma once

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace boot_test {

// Waits until child `pid` exits or `deadline` passes.  True (and *status set)
// once it was reaped; false at the deadline, the child still running.
inline bool wait_child_until(pid_t pid, std::chrono::steady_clock::time_point deadline, int *status) {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) return waitpid(pid, status, 0) == pid; // gone already, or no pidfd: block
    bool exited = false;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{fd, POLLIN, 0};
        const int r = poll(&p, 1, static_cast<int>(left.count()));
        if (r > 0) {
            exited = true;
            break;
        }
        if (r < 0 && errno != EINTR) break;
    }
    close(fd);
    return exited && waitpid(pid, status, 0) == pid;
}

// How many sockets with local port `port` are in TCP state `st` (hex code of
// /proc/net/tcp: 0A listening, 01 established), IPv4 and IPv6.
inline int tcp_sockets(int port, const char *st) {
    int n = 0;
    for (const char *file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(file);
        std::string line;
        std::getline(in, line); // header
        while (std::getline(in, line)) {
            std::istringstream f(line);
            std::string slot, local, remote, state;
            f >> slot >> local >> remote >> state;
            const size_t colon = local.rfind(':');
            if (colon == std::string::npos) continue;
            if (std::stoi(local.substr(colon + 1), nullptr, 16) == port && state == st) ++n;
        }
    }
    return n;
}

// Polls until pred() holds or `ms` pass; yields between polls.
template <class Pred>
bool poll_until(Pred &&pred, int ms) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!pred()) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(ms)) return false;
        std::this_thread::yield();
    }
    return true;
}

} // namespace boot_test
