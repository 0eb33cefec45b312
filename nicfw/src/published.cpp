// published.cpp - the protection table's published part (published.hpp): made
// by its owner, mapped read-only by peers, read through a seqlock.
#include "published.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "protection.hpp"

namespace nicfw {

namespace {
template <class T>
void put(T &field, T v) {
    __atomic_store_n(&field, v, __ATOMIC_RELAXED);
}
template <class T>
T get(const T &field) {
    return __atomic_load_n(&field, __ATOMIC_RELAXED);
}
} // namespace

size_t PublishedTable::bytes() {
    return sizeof(PubHeader) + sizeof(PubVi) * kMaxVi + sizeof(PubRegion) * (size_t(kMaxRegions) + 1);
}

PublishedTable::PublishedTable() : owner_(true) {
    fd_ = memfd_create("viastack-nic-table", MFD_CLOEXEC);
    if (fd_ < 0 || ftruncate(fd_, off_t(bytes())) != 0)
        throw std::runtime_error(std::string("nicfw: cannot make the published protection table (memfd): ") +
                                 std::strerror(errno));
    void *p = mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED)
        throw std::runtime_error(std::string("nicfw: cannot map the published protection table: ") +
                                 std::strerror(errno));
    base_ = static_cast<unsigned char *>(p);
    auto *h = reinterpret_cast<PubHeader *>(base_);
    h->nvis = kMaxVi;
    h->nregions = kMaxRegions;
    vis_ = reinterpret_cast<PubVi *>(base_ + sizeof(PubHeader));
    regions_ = reinterpret_cast<PubRegion *>(base_ + sizeof(PubHeader) + sizeof(PubVi) * kMaxVi);
    __atomic_store_n(&h->magic, kPubMagic, __ATOMIC_RELEASE);
}

PublishedTable::PublishedTable(uint32_t pid, int fd) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%u/fd/%d", pid, fd);
    const int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return;
    void *p = mmap(nullptr, bytes(), PROT_READ, MAP_SHARED, f, 0);
    close(f);
    if (p == MAP_FAILED) return;
    const auto *h = static_cast<const PubHeader *>(p);
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kPubMagic || h->nvis != kMaxVi ||
        h->nregions != kMaxRegions) { // not a table of this build (the fd was reused)
        munmap(p, bytes());
        return;
    }
    base_ = static_cast<unsigned char *>(p);
    vis_ = reinterpret_cast<PubVi *>(base_ + sizeof(PubHeader));
    regions_ = reinterpret_cast<PubRegion *>(base_ + sizeof(PubHeader) + sizeof(PubVi) * kMaxVi);
}

PublishedTable::~PublishedTable() {
    if (base_) munmap(base_, bytes());
    if (owner_ && fd_ >= 0) close(fd_);
}

void PublishedTable::publish_region(uint32_t idx, const Region &r) {
    PubRegion &e = regions_[idx];
    const uint32_t s = e.seq.load(std::memory_order_relaxed);
    e.seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    put(e.handle, r.handle.load(std::memory_order_relaxed));
    put(e.base, uint64_t(r.base));
    put(e.len, uint64_t(r.len));
    put(e.ptag_id, r.ptag_id);
    put(e.flags, (r.rdma_write ? kPubWrite : 0) | (r.rdma_read ? kPubRead : 0));
    put(e.shm_id, r.shm.id);
    put(e.shm_fd, r.shm.fd);
    put(e.shm_off, uint64_t(r.shm.id ? r.base - r.shm.base : 0));
    e.seq.store(s + 2, std::memory_order_release);
}

void PublishedTable::retire_region(uint32_t idx) {
    PubRegion &e = regions_[idx];
    const uint32_t s = e.seq.load(std::memory_order_relaxed);
    e.seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    put(e.handle, 0u);
    put(e.flags, 0u);
    e.seq.store(s + 2, std::memory_order_release);
}

bool PublishedTable::read_region(uint32_t mh, RegionView *out) const {
    const uint32_t idx = mh & 0xffff;
    if (idx == 0 || idx > kMaxRegions) return false;
    const PubRegion &e = regions_[idx];
    for (int tries = 0; tries < 64; ++tries) {
        const uint32_t s1 = e.seq.load(std::memory_order_acquire);
        if (s1 & 1) {
            __builtin_ia32_pause();
            continue;
        }
        RegionView v{get(e.handle), get(e.ptag_id), get(e.flags), get(e.shm_id),
                     get(e.shm_fd), get(e.base),    get(e.len),   get(e.shm_off)};
        std::atomic_thread_fence(std::memory_order_acquire);
        if (e.seq.load(std::memory_order_relaxed) != s1) continue;
        if (v.handle != mh) return false;
        *out = v;
        return true;
    }
    return false;
}

} // namespace nicfw
