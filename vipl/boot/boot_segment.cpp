// boot_segment.cpp - opening, sizing and futex helpers of the bootstrap segment.
#include "boot_segment.hpp"

#include "viastack_shm.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

namespace viastack::boot {

std::string shm_name(const std::string &job, const char *what) { return "/viastack-" + job + "-" + what; }

bool valid_job_id(const std::string &job) {
    if (job.empty() || job.size() > 128) return false;
    for (char c : job) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
            c == '-';
        if (!ok) return false;
    }
    return job != "." && job != "..";
}

int unlink_job_files(const std::string &job) {
    if (!valid_job_id(job)) return 0;
    const std::string prefix = "viastack-" + job + "-";
    DIR *dir = opendir("/dev/shm");
    if (!dir) return 0;
    int removed = 0;
    while (struct dirent *e = readdir(dir)) {
        if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
        std::string path = std::string("/dev/shm/") + e->d_name;
        if (unlink(path.c_str()) == 0) ++removed;
    }
    closedir(dir);
    return removed;
}

// Every /dev/shm path some process of ours has open or mapped.
static void paths_in_use(const std::string &prefix, std::vector<std::string> *out) {
    DIR *proc = opendir("/proc");
    if (!proc) return;
    while (struct dirent *p = readdir(proc)) {
        if (p->d_name[0] < '0' || p->d_name[0] > '9') continue;
        const std::string base = std::string("/proc/") + p->d_name;
        if (FILE *f = std::fopen((base + "/maps").c_str(), "r")) {
            char line[4096];
            while (std::fgets(line, sizeof line, f))
                if (const char *at = std::strstr(line, prefix.c_str())) {
                    std::string path(at);
                    path.erase(path.find_last_not_of(" \n") + 1);
                    const std::string deleted = " (deleted)";
                    if (path.size() > deleted.size() &&
                        path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0)
                        path.erase(path.size() - deleted.size());
                    out->push_back(path);
                }
            std::fclose(f);
        }
        if (DIR *fds = opendir((base + "/fd").c_str())) {
            while (struct dirent *fd = readdir(fds)) {
                char target[PATH_MAX];
                ssize_t n = readlink((base + "/fd/" + fd->d_name).c_str(), target, sizeof target - 1);
                if (n <= 0) continue;
                target[n] = 0;
                if (std::strncmp(target, prefix.c_str(), prefix.size()) == 0) out->push_back(target);
            }
            closedir(fds);
        }
    }
    closedir(proc);
}

int reap_dead_job_files(const std::string &family, const std::string &keep, int min_age_s) {
    const std::string name_prefix = "viastack-" + family;
    const std::string keep_prefix = "viastack-" + keep + "-";
    DIR *dir = opendir("/dev/shm");
    if (!dir) return 0;
    std::vector<std::string> candidates;
    const time_t now = std::time(nullptr);
    while (struct dirent *e = readdir(dir)) {
        if (std::strncmp(e->d_name, name_prefix.c_str(), name_prefix.size()) != 0) continue;
        if (std::strncmp(e->d_name, keep_prefix.c_str(), keep_prefix.size()) == 0) continue;
        std::string path = std::string("/dev/shm/") + e->d_name;
        struct stat st {};
        if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) continue;
        if (now - st.st_mtime < min_age_s) continue;
        candidates.push_back(path);
    }
    closedir(dir);
    if (candidates.empty()) return 0;
    std::vector<std::string> used;
    paths_in_use("/dev/shm/" + name_prefix, &used);
    int removed = 0;
    for (const std::string &path : candidates)
        if (std::find(used.begin(), used.end(), path) == used.end() && unlink(path.c_str()) == 0) ++removed;
    return removed;
}

size_t Segment::bytes_for(uint32_t n) {
    size_t off = sizeof(SegmentHeader);
    off += (size_t{n} * sizeof(std::atomic<uint32_t>) + kLine - 1) / kLine * kLine;
    off += (2 * size_t{n} * sizeof(RankSlot) + kLine - 1) / kLine * kLine;
    off += 2 * size_t{n} * VIPL_BOOT_MAX_ITEM;
    return off;
}

std::atomic<uint32_t> &Segment::epoch(uint32_t rank) {
    auto *e = reinterpret_cast<std::atomic<uint32_t> *>(base_ + sizeof(SegmentHeader));
    return e[rank];
}

RankSlot &Segment::slot(unsigned parity, uint32_t rank) {
    size_t off = sizeof(SegmentHeader) + (size_t{n_} * sizeof(std::atomic<uint32_t>) + kLine - 1) / kLine * kLine;
    auto *s = reinterpret_cast<RankSlot *>(base_ + off);
    return s[size_t{parity} * n_ + rank];
}

unsigned char *Segment::data(unsigned parity, uint32_t rank) {
    size_t off = sizeof(SegmentHeader) + (size_t{n_} * sizeof(std::atomic<uint32_t>) + kLine - 1) / kLine * kLine +
        (2 * size_t{n_} * sizeof(RankSlot) + kLine - 1) / kLine * kLine;
    return base_ + off + (size_t{parity} * n_ + rank) * VIPL_BOOT_MAX_ITEM;
}

bool Segment::open(const std::string &job, uint32_t n, std::string *err) {
    close();
    if (!valid_job_id(job)) {
        *err = "job id '" + job + "' is not a valid file-name part ([A-Za-z0-9._-], 1..128 chars)";
        return false;
    }
    if (n == 0 || n > kMaxJobSize) {
        *err = "job size " + std::to_string(n) + " out of range 1.." + std::to_string(kMaxJobSize);
        return false;
    }
    const std::string name = shm_name(job, "boot");
    const size_t want = bytes_for(n);
    // Exclusive creation, 0600, no symlink followed, owner checked: another
    // local user can neither pre-create nor open the segment (viastack_shm.hpp).
    int fd = viastack::shm::open_job_file("/dev/shm" + name, err);
    if (fd < 0) return false;
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        *err = "fstat(/dev/shm" + name + "): " + std::strerror(errno);
        ::close(fd);
        return false;
    }
    // Never shrink: a shorter file would SIGBUS ranks that mapped it already.
    if (static_cast<size_t>(st.st_size) > want) {
        *err = "/dev/shm" + name + " is " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(want) +
            " for a job of " + std::to_string(n) +
            " (ranks disagree on VIASTACK_SIZE, or a stale file from another job)";
        ::close(fd);
        return false;
    }
    if (static_cast<size_t>(st.st_size) < want && ftruncate(fd, static_cast<off_t>(want)) != 0) {
        *err = "ftruncate(/dev/shm" + name + "): " + std::strerror(errno);
        ::close(fd);
        return false;
    }
    void *p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
        *err = "mmap(/dev/shm" + name + "): " + std::strerror(errno);
        return false;
    }
    base_ = static_cast<unsigned char *>(p);
    hdr_ = reinterpret_cast<SegmentHeader *>(p);
    bytes_ = want;
    n_ = n;
    uint32_t expect = 0;
    if (!hdr_->size.compare_exchange_strong(expect, n) && expect != n) {
        *err = "job size mismatch: segment says " + std::to_string(expect) + ", this process says " + std::to_string(n);
        close();
        return false;
    }
    return true;
}

void Segment::close() {
    if (base_) munmap(base_, bytes_);
    base_ = nullptr;
    hdr_ = nullptr;
    bytes_ = 0;
    n_ = 0;
}

Segment::~Segment() { close(); }

void Segment::wake_all() {
    hdr_->wake_seq.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&hdr_->wake_seq), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void Segment::wait_seq(uint32_t seen, long timeout_ns) {
    struct timespec ts {
        timeout_ns / 1000000000L, timeout_ns % 1000000000L
    };
    // EAGAIN (word already changed), EINTR and ETIMEDOUT all mean "look again".
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&hdr_->wake_seq), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void Segment::mark_aborted(int32_t rank, int32_t code, const char *why) {
    uint32_t expect = kRunning;
    if (hdr_->abort_state.compare_exchange_strong(expect, kClaiming, std::memory_order_acq_rel)) {
        hdr_->abort_rank = rank;
        hdr_->abort_code = code;
        std::snprintf(hdr_->abort_reason, sizeof hdr_->abort_reason, "%s", why ? why : "");
        hdr_->abort_state.store(kPublished, std::memory_order_release);
    }
    wake_all();
}

std::string Segment::abort_message() {
    // The claimer writes three fields between claiming and publishing; wait a
    // moment for it rather than print half-written text.
    for (int i = 0; i < 1000 && hdr_->abort_state.load(std::memory_order_acquire) == kClaiming; ++i) usleep(100);
    if (hdr_->abort_state.load(std::memory_order_acquire) != kPublished) return "the job was aborted";
    std::string who =
        hdr_->abort_rank == kAbortByLauncher ? std::string("vipl-run") : "rank " + std::to_string(hdr_->abort_rank);
    std::string reason(hdr_->abort_reason, strnlen(hdr_->abort_reason, sizeof hdr_->abort_reason));
    return who + " aborted the job (code " + std::to_string(hdr_->abort_code) + ")" +
        (reason.empty() ? "" : ": " + reason);
}

} // namespace viastack::boot
