// viastack_shm.hpp - opening a job's shared-memory file in /dev/shm so that no
// other local user can read, join or inject into it, written once for every
// layer that keeps one (the bootstrap segment, nicfw's wire).
//
// /dev/shm is world-writable (sticky): another user may create a job's name
// before the job does, as a file of its own (it could then map what the job
// writes) or as a symbolic link (the job would write through it, as itself, to
// wherever it points).  So a job's file is
//   - created exclusively (O_CREAT|O_EXCL) with mode 0600 by whichever rank
//     comes first, and opened by the others without O_CREAT;
//   - never followed when it is a symbolic link (O_NOFOLLOW);
//   - used only when fstat() on the open descriptor shows a regular file owned
//     by this effective user, with no group/other permission bits and one link:
//     a name pre-created by someone else is refused with a message naming the
//     path, the owner and the fix, never used.
// Job names are made unpredictable by vipl-run (pid + 32 random bits); with a
// chosen VIASTACK_JOB another user can at worst make the job refuse to start.
// Start-up path only (syscalls, strings).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace viastack::shm {

// Opens `path` (absolute, in /dev/shm) read-write, creating it empty with mode
// 0600 if it does not exist.  Returns the descriptor (O_CLOEXEC), or -1 with
// *err saying what is wrong and what to do.
// The checks a job's file must pass once open (fd on `path`): a regular file
// owned by this effective user, no group/other permission bits, one link.
// "" when it passes, else why not (for "<path> refused: <why>.").
inline std::string private_file_problem(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return std::string("fstat failed: ") + std::strerror(errno);
    if (!S_ISREG(st.st_mode)) return "it is not a regular file";
    if (st.st_uid != ::geteuid())
        return "it belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
            std::to_string(::geteuid()) + ")";
    if (st.st_mode & 077) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
        return std::string("its mode is ") + mode + ": other users may have it open (a job's file is 0600)";
    }
    if (st.st_nlink != 1) return "it has " + std::to_string(st.st_nlink) + " hard links (a job's file has one)";
    return "";
}

inline int open_job_file(const std::string &path, std::string *err) {
    const std::string fix = " Remove it (rm -f " + path +
        ") if it is a stale file of yours, or give the job "
        "another id (vipl-run picks an unpredictable one unless --job is given).";
    int fd = -1;
    // A name that disappears between the two opens (a stale file being
    // removed) is simply created on the next round.
    for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
        fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) break;
        fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT) break;
    }
    if (fd < 0) {
        const int e = errno;
        if (e == ELOOP) {
            *err = path +
                " is a symbolic link: refused (a viastack job never makes one, so someone may be "
                "redirecting the job's shared memory)." +
                fix;
        } else if (e == EACCES || e == EPERM) {
            struct stat st {};
            const bool seen = ::lstat(path.c_str(), &st) == 0;
            *err = path + " exists and this user may not open it" +
                (seen ? " (owner uid " + std::to_string(st.st_uid) + ")" : std::string()) +
                ": it belongs to another user or job." + fix;
        } else {
            *err = "cannot open " + path + ": " + std::strerror(e) + " (is /dev/shm mounted and writable?)";
        }
        return -1;
    }
    const std::string why = private_file_problem(fd);
    if (!why.empty()) {
        ::close(fd);
        *err = path + " refused: " + why + "." + fix;
        return -1;
    }
    return fd;
}

} // namespace viastack::shm
