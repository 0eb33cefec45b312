// wire.cpp - mapping the job's wire and the FIFO protocol (see wire.hpp).
#include "wire.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "crc.hpp"
#include "viastack_shm.hpp"

namespace nicfw {

namespace {
size_t round_pow2(size_t v) {
    size_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

// Brings every page of the wire into this process now instead of at the first
// packet through it.  A NIC's FIFO is resident memory; here the first touch of
// each 4 KiB page (64 one-slot packets) by each process costs 10-20 us on the
// project's Firecracker VM: a page fault, and also a host exit the guest does
// not count (with the guest's faults gone, MADV_POPULATE_WRITE alone, the
// stalls stayed until each page had been touched once: the guest's page tables
// appear to be shadowed by the host).  So the first lap of a fresh 1 MiB ring
// (16384 short messages) ran at a half to a quarter of the steady-state
// message rate, and a job that reopens its NICs (logp's interleaved rounds)
// measured that lap instead of the wire (docs/logp.md, "Split-C in the rounds:
// the FIFO's first lap").  So: MADV_POPULATE_WRITE (Linux 5.14+) maps the
// pages writable in one call, then one byte of each page is read (a read:
// peers may already be writing into their rings).  Zero-filled pages stay a
// valid empty ring.  A wire above 256 MiB (a large job with big rings) stays
// lazy, so open time stays bounded.
void populate(void *p, size_t bytes) {
    if (bytes > (size_t(256) << 20)) return;
#ifdef MADV_POPULATE_WRITE
    (void)madvise(p, bytes, MADV_POPULATE_WRITE);
#endif
    const auto *b = static_cast<const volatile unsigned char *>(p);
    for (size_t off = 0; off < bytes; off += 4096) (void)b[off];
}

long futex(std::atomic<uint32_t> *addr, int op, uint32_t val, const timespec *ts) {
    return syscall(SYS_futex, reinterpret_cast<uint32_t *>(addr), op, val, ts, nullptr, 0);
}
} // namespace

Wire::Wire(const std::string &job, int nprocs, size_t ring_bytes) : nprocs_(nprocs) {
    if (nprocs < 1 || nprocs > 65535) throw std::runtime_error("nicfw: job size out of range 1..65535");
    slots_ = round_pow2(ring_bytes / kSlotBytes);
    if (slots_ < 1024) slots_ = 1024;
    request_slots_ = slots_ - reply_headroom();
    stride_ = sizeof(RingCtl) + slots_ * kSlotBytes;
    bytes_ = stride_ * static_cast<size_t>(nprocs);
    void *p;
    if (job.empty()) {
        p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            throw std::runtime_error(std::string("nicfw: cannot map a private wire: ") + strerror(errno));
    } else {
        path_ = "/dev/shm/viastack-" + job + "-wire";
        // Exclusive creation, 0600, no symlink followed, owner checked (viastack_shm.hpp).
        std::string err;
        int fd = viastack::shm::open_job_file(path_, &err);
        if (fd < 0) throw std::runtime_error("nicfw: the job's wire: " + err);
        struct stat st {};
        // Every rank computes the same size; ftruncate only ever grows a fresh file.
        if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) != bytes_) {
            if (st.st_size != 0 && static_cast<size_t>(st.st_size) != bytes_) {
                close(fd);
                throw std::runtime_error("nicfw: " + path_ +
                                         " has another size: ranks disagree on "
                                         "VIPL_NICFW_RING_KB or the job size");
            }
            if (ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
                int e = errno;
                close(fd);
                throw std::runtime_error("nicfw: cannot size " + path_ + ": " + strerror(e));
            }
        }
        p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED) throw std::runtime_error("nicfw: cannot map " + path_ + ": " + strerror(errno));
    }
    base_ = static_cast<unsigned char *>(p);
    populate(base_, bytes_);
    hints_.reset(new std::atomic<uint64_t>[static_cast<size_t>(nprocs)]);
    for (int i = 0; i < nprocs; ++i) hints_[i].store(0, std::memory_order_relaxed);
    taken_at_send_.reset(new std::atomic<uint64_t>[static_cast<size_t>(nprocs)]);
    for (int i = 0; i < nprocs; ++i) taken_at_send_[i].store(~0ull, std::memory_order_relaxed);
}

Wire::~Wire() {
    if (base_) munmap(base_, bytes_);
}

bool wire_reserve_general(Wire &w, int dst, uint32_t payload, TxSlot *out, bool reply) {
    RingCtl &c = w.ctl(dst);
    const uint64_t cap = w.ring_slots();
    const uint64_t need = (kHeaderBytes + payload + kSlotBytes - 1) / kSlotBytes;
    const uint64_t limit = reply ? cap : cap - w.reply_headroom();
    uint64_t tail = c.tail.load(std::memory_order_relaxed);
    for (;;) {
        // A packet never wraps: if it would, a pad packet fills the ring's end.
        const uint64_t off = tail & (cap - 1);
        const uint64_t pad = (off + need > cap) ? cap - off : 0;
        uint64_t head = w.head_hint(dst).load(std::memory_order_acquire);
        if (tail + pad + need - head > limit) {
            head = c.head.load(std::memory_order_acquire);
            w.head_hint(dst).store(head, std::memory_order_release);
            if (tail + pad + need - head > limit) return false;
        }
        if (c.tail.compare_exchange_weak(tail, tail + pad + need, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
            if (pad) {
                auto *ph = reinterpret_cast<PacketHeader *>(&w.slots(dst)[off]);
                ph->nslots = static_cast<uint16_t>(pad > 0xffff ? 0 : pad);
                ph->op = Op::Pad;
                ph->length = static_cast<uint32_t>(pad); // authoritative for pads (may exceed 16 bits)
                reinterpret_cast<std::atomic<uint32_t> *>(&ph->tag)->store(tag_of(tail), std::memory_order_release);
            }
            wire_take_reserved(w, dst, c, tail + pad, need, out);
            if (__builtin_expect(w.die_after_reserves.load(std::memory_order_relaxed) != 0, 0) && !reply &&
                w.die_after_reserves.fetch_sub(1, std::memory_order_relaxed) == 1)
                raise(SIGKILL); // test hook: killed holding a reserved, unpublished slot
            return true;
        }
    }
}

void wire_wake(Wire &w, int dst) {
    RingCtl &c = w.ctl(dst);
    c.sleeping.store(0, std::memory_order_relaxed);
    c.doorbell.fetch_add(1, std::memory_order_release);
    futex(&c.doorbell, FUTEX_WAKE, 1, nullptr);
}

bool wire_header_sane(const Wire &w, uint64_t head, const PacketHeader *h) {
    const uint64_t cap = w.ring_slots();
    const uint64_t off = head & (cap - 1);
    if (h->op == Op::Pad) return h->length == cap - off;
    return h->nslots >= 1 && off + h->nslots <= cap && h->length <= w.max_payload() + 8 &&
        kHeaderBytes + uint64_t(h->length) <= uint64_t(h->nslots) * kSlotBytes;
}

uint64_t wire_consume(Wire &w, int me, uint64_t head, const PacketHeader *h) {
    const uint64_t cap = w.ring_slots();
    const uint64_t n = (h->op == Op::Pad) ? h->length : h->nslots;
    Slot *s = w.slots(me);
    // Clear the first word of every consumed slot but the header's: a later
    // packet's payload may have landed there, and a stale word must never look
    // published.  The header slot's word is this packet's tag, tag_of(head),
    // which no later packet at this slot expects (tag_of differs for every
    // position of this slot until 2^30 slots later): left alone, a one-slot packet's line is
    // only read by the consumer, and the producer's next write to it does not
    // have to fetch it back from the consumer's cache first.
    for (uint64_t i = 1; i < n; ++i)
        reinterpret_cast<std::atomic<uint32_t> *>(&s[(head + i) & (cap - 1)])->store(0, std::memory_order_relaxed);
    w.ctl(me).head.store(head + n, std::memory_order_release);
    w.count_taken();
    return head + n;
}

int wire_stuck_owner(Wire &w, int me, uint64_t head, uint64_t *nslots) {
    const uint64_t cap = w.ring_slots();
    if (w.ctl(me).tail.load(std::memory_order_acquire) == head) return -1; // nothing reserved
    auto *h = reinterpret_cast<PacketHeader *>(&w.slots(me)[head & (cap - 1)]);
    const uint32_t tag = reinterpret_cast<std::atomic<uint32_t> *>(&h->tag)->load(std::memory_order_acquire);
    if (!(tag & 0x80000000u) || (tag & 0x7FFF) != (head & 0x7FFF)) return -1;
    const uint16_t n = __atomic_load_n(&h->nslots, __ATOMIC_RELAXED); // written before the claim (release)
    // nslots is the reserver's own count; clamp it to the ring's end all the same
    // (a skip never goes past what a packet can occupy).
    const uint64_t off = head & (cap - 1);
    *nslots = (n >= 1 && off + n <= cap) ? n : 1;
    return static_cast<int>((tag >> 15) & 0xFFFF);
}

uint64_t wire_skip(Wire &w, int me, uint64_t head, uint64_t n) {
    const uint64_t cap = w.ring_slots();
    Slot *s = w.slots(me);
    for (uint64_t i = 0; i < n; ++i)
        reinterpret_cast<std::atomic<uint32_t> *>(&s[(head + i) & (cap - 1)])->store(0, std::memory_order_relaxed);
    w.ctl(me).head.store(head + n, std::memory_order_release);
    return head + n;
}

// Covers the header from nslots to imm (tag is written at publication, crc is
// the result) and the payload.
uint32_t packet_crc(const PacketHeader *h, const unsigned char *payload) {
    static_assert(offsetof(PacketHeader, nslots) == 4 && offsetof(PacketHeader, crc) == 28);
    return crc32c2(reinterpret_cast<const unsigned char *>(h) + 4, 24, payload, h->length);
}

uint32_t wire_sleep_prepare(Wire &w, int me) {
    RingCtl &c = w.ctl(me);
    const uint32_t bell = c.doorbell.load(std::memory_order_acquire);
    c.sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return bell;
}

void wire_sleep_commit(Wire &w, int me, uint32_t bell, unsigned timeout_us) {
    RingCtl &c = w.ctl(me);
    timespec ts{static_cast<time_t>(timeout_us / 1000000), static_cast<long>(timeout_us % 1000000) * 1000};
    futex(&c.doorbell, FUTEX_WAIT, bell, &ts);
    c.sleeping.store(0, std::memory_order_relaxed);
}

void wire_sleep_cancel(Wire &w, int me) { w.ctl(me).sleeping.store(0, std::memory_order_relaxed); }

} // namespace nicfw
