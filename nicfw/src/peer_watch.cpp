// peer_watch.cpp - watching peer processes through pidfds (peer_watch.hpp).
#include "peer_watch.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace nicfw {

PeerWatch::PeerWatch(Wire &wire, int rank)
    : wire_(wire), rank_(rank), fds_(size_t(wire.nprocs()), -1), pids_(size_t(wire.nprocs()), 0),
      gone_(size_t(wire.nprocs()), 0) {
    wire_.ctl(rank).pid.store(static_cast<uint32_t>(getpid()), std::memory_order_release);
}

PeerWatch::~PeerWatch() {
    for (int fd : fds_)
        if (fd >= 0) close(fd);
}

bool PeerWatch::dead(int nic) {
    if (nic < 0 || nic >= wire_.nprocs() || nic == rank_) return false;
    if (gone_[size_t(nic)]) return true;
    const uint32_t pid = wire_.ctl(nic).pid.load(std::memory_order_acquire);
    if (!pid) return false; // not opened yet
    int &fd = fds_[size_t(nic)];
    if (fd >= 0 && pids_[size_t(nic)] != pid) { // the rank reopened in another process
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        const long r = syscall(SYS_pidfd_open, pid_t(pid), 0);
        if (r < 0) {
            if (errno == ESRCH) return gone_[size_t(nic)] = 1, true;
            // No pidfds (old kernel, seccomp): signal 0 tells a live process (or a zombie).
            return kill(pid_t(pid), 0) != 0 && errno == ESRCH ? (gone_[size_t(nic)] = 1, true) : false;
        }
        fd = static_cast<int>(r);
        pids_[size_t(nic)] = pid;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) return gone_[size_t(nic)] = 1, true;
    return false;
}

} // namespace nicfw
