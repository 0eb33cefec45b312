// dma.cpp - the shared-memory allocator behind VipxAllocMem and the copy
// engine of the single-copy bulk path (dma.hpp).
#include "dma.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "host_dma.hpp"

namespace nicfw {

namespace {
constexpr size_t kPage = 4096;
constexpr const char *kMemfdPrefix = "viastack-mem-";

// Cross-memory attach needs ptrace-attach rights over the peer.  Without Yama
// any process of the same user has them; Yama's "restricted" mode (1) allows
// it once a process names its tracers, which we do for the job's peers (any
// process of this user: what mode 0 allows anyway); modes 2 and 3 forbid it,
// and then only VipxAllocMem memory takes the bulk path.
bool allow_cross_memory_attach() {
    FILE *f = std::fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (!f) return true;
    int scope = 0;
    const bool read = std::fscanf(f, "%d", &scope) == 1;
    std::fclose(f);
    if (!read || scope == 0) return true;
    if (scope == 1) return prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0;
    return false;
}
} // namespace

// ---------------------------------------------------------------- SharedMemory
SharedMemory::~SharedMemory() {
    for (const Seg &s : segs_) {
        munmap(reinterpret_cast<void *>(s.base), s.len);
        close(s.fd);
    }
}

void *SharedMemory::alloc(size_t len, void *at) {
    if (len == 0 || len > (size_t(1) << 40)) {
        errno = EINVAL;
        return nullptr;
    }
    const size_t bytes = (len + kPage - 1) & ~(kPage - 1);
    std::lock_guard<std::mutex> g(mu_);
    const uint32_t id = next_id_;
    char name[64];
    std::snprintf(name, sizeof name, "%s%u", kMemfdPrefix, id);
    const int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return nullptr;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
        const int e = errno;
        close(fd);
        errno = e;
        return nullptr;
    }
    const int fixed = at ? MAP_FIXED_NOREPLACE | MAP_NORESERVE : 0;
    void *p = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | fixed, fd, 0);
    if (p == MAP_FAILED || (at && p != at)) { // (a kernel without MAP_FIXED_NOREPLACE took it as a hint)
        const int e = p == MAP_FAILED ? errno : EEXIST;
        if (p != MAP_FAILED) munmap(p, bytes);
        close(fd);
        errno = e;
        return nullptr;
    }
    ++next_id_;
    segs_.push_back(Seg{reinterpret_cast<uintptr_t>(p), bytes, id, fd});
    return p;
}

bool SharedMemory::free(void *p) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = std::find_if(segs_.begin(), segs_.end(),
                           [&](const Seg &s) { return s.base == reinterpret_cast<uintptr_t>(p); });
    if (it == segs_.end()) return false;
    munmap(p, it->len);
    close(it->fd);
    segs_.erase(it);
    return true;
}

ShmRef SharedMemory::find(const void *p, size_t len) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> g(mu_);
    for (const Seg &s : segs_)
        if (a >= s.base && a - s.base <= s.len && len <= s.len - (a - s.base)) return ShmRef{s.id, s.fd, s.base};
    return ShmRef{};
}

SharedMemory &shared_memory() {
    static SharedMemory *m = new SharedMemory; // never destroyed: memory stays valid to the end
    return *m;
}

// ---------------------------------------------------------------- DmaEngine
DmaEngine::DmaEngine(int my_rank)
    : rank_(my_rank), pid_(static_cast<uint32_t>(getpid())), cma_ok_(allow_cross_memory_attach()) {}

DmaEngine::~DmaEngine() {
    for (auto &[k, m] : maps_) munmap(m.base, m.len);
}

const DmaEngine::Mapping *DmaEngine::map_peer(int peer_rank, uint32_t pid, const BulkSeg &s) {
    const uint64_t key = (uint64_t(uint32_t(peer_rank)) << 32) | s.shm_id;
    if (key == last_key_ && last_map_) return last_map_; // a stream into one segment: no hash lookup
    if (auto it = maps_.find(key); it != maps_.end()) {
        last_key_ = key;
        return last_map_ = &it->second; // (the map's nodes never move)
    }
    // First use of this segment: open the peer's memfd through /proc, check it
    // is the segment named (ids are never reused, fd numbers are), map it.
    char path[64], want[64], link[128];
    std::snprintf(path, sizeof path, "/proc/%u/fd/%d", pid, s.shm_fd);
    std::snprintf(want, sizeof want, "/memfd:%s%u ", kMemfdPrefix, s.shm_id);
    const ssize_t n = readlink(path, link, sizeof link - 1);
    if (n < 0) return nullptr;
    link[n] = 0;
    if (std::strncmp(link, want, std::strlen(want)) != 0) {
        errno = EFAULT; // that fd is no longer the segment: freed under a transfer
        return nullptr;
    }
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        errno = EFAULT;
        return nullptr;
    }
    // Small segments are populated now (no page faults during transfers); a large
    // sparse one (a heap of gigabytes) is faulted in as transfers touch it.
    const int populate = st.st_size <= (64 << 20) ? MAP_POPULATE : 0;
    void *p = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED | populate, fd, 0);
    const int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        errno = e;
        return nullptr;
    }
    last_key_ = key;
    return last_map_ = &maps_.emplace(key, Mapping{static_cast<unsigned char *>(p), size_t(st.st_size)}).first->second;
}

unsigned char *DmaEngine::peer_bytes(int peer_rank, uint32_t pid, const BulkSeg &s) {
    const Mapping *m = map_peer(peer_rank, pid, s);
    if (!m) return nullptr;
    if (s.shm_off > m->len || s.len > m->len - s.shm_off) {
        errno = EFAULT;
        return nullptr;
    }
    return m->base + s.shm_off;
}

int DmaEngine::flush_cma(bool pull, uint32_t pid) {
    iovec *lv = lv_, *rv = rv_;
    uint32_t n = nb_;
    size_t left = batch_bytes_;
    nb_ = 0;
    batch_bytes_ = 0;
    while (left) {
        const ssize_t r = pull ? process_vm_readv(static_cast<pid_t>(pid), lv, n, rv, n, 0)
                               : process_vm_writev(static_cast<pid_t>(pid), lv, n, rv, n, 0);
        if (r < 0) return errno;
        if (r == 0) return EFAULT;
        left -= size_t(r);
        // A partial transfer: skip what was moved (the two lists advance together,
        // their pieces have the same lengths) and go on.
        size_t done = size_t(r);
        while (n && done >= lv->iov_len) {
            done -= lv->iov_len;
            ++lv, ++rv, --n;
        }
        if (done) {
            lv->iov_base = static_cast<char *>(lv->iov_base) + done;
            rv->iov_base = static_cast<char *>(rv->iov_base) + done;
            lv->iov_len -= done;
            rv->iov_len -= done;
        }
    }
    return 0;
}

int DmaEngine::move(bool pull, int peer_rank, uint32_t pid, const BulkSeg *rs, uint32_t nr, const iovec *local,
                    uint32_t nl, size_t total) {
    nb_ = 0;
    batch_bytes_ = 0;
    const bool self = peer_rank == rank_ && pid == pid_;
    uint32_t ri = 0, li = 0;
    size_t roff = 0, loff = 0;
    while (total) {
        while (ri < nr && roff == rs[ri].len) ++ri, roff = 0;
        while (li < nl && loff == local[li].iov_len) ++li, loff = 0;
        if (ri == nr || li == nl) return EINVAL; // the lists hold fewer bytes than announced
        const BulkSeg &s = rs[ri];
        const size_t n = std::min({size_t(s.len) - roff, local[li].iov_len - loff, total});
        unsigned char *lp = static_cast<unsigned char *>(local[li].iov_base) + loff;
        unsigned char *rp = nullptr;
        if (self) {
            rp = reinterpret_cast<unsigned char *>(s.addr) + roff;
        } else if (s.shm_id) {
            const Mapping *m = map_peer(peer_rank, pid, s);
            if (!m) return errno ? errno : EFAULT;
            if (s.shm_off > m->len || roff + n > m->len - s.shm_off) return EFAULT;
            rp = m->base + s.shm_off + roff;
        }
        if (rp) {
            if (pull) dma_to_host(lp, rp, n);
            else dma_to_host(rp, lp, n);
        } else {
            void *raddr = reinterpret_cast<void *>(s.addr + roff);
            if (nb_ && static_cast<unsigned char *>(lv_[nb_ - 1].iov_base) + lv_[nb_ - 1].iov_len == lp &&
                static_cast<unsigned char *>(rv_[nb_ - 1].iov_base) + rv_[nb_ - 1].iov_len == raddr) {
                lv_[nb_ - 1].iov_len += n; // continues the previous piece on both sides
                rv_[nb_ - 1].iov_len += n;
            } else {
                if (nb_ == kBatch)
                    if (int e = flush_cma(pull, pid)) return e;
                lv_[nb_] = iovec{lp, n};
                rv_[nb_] = iovec{raddr, n};
                ++nb_;
            }
            batch_bytes_ += n;
        }
        roff += n;
        loff += n;
        total -= n;
    }
    return nb_ ? flush_cma(pull, pid) : 0;
}

} // namespace nicfw
