// rt_ops.cpp - Split-C memory operations: read/write, get/put, store, their
// bulk forms, and the sync family.  Local targets are served with plain
// loads and stores; remote ones become requests (rt_msg.cpp), and bulk ones
// from SPLITC_RDMA_MIN bytes RDMA writes/reads (rt_bulk.cpp).  The scalar
// read/write/get/put here are the out-of-line halves (splitc_*_N_slow) of the
// inline functions in splitc_rt.h: they see every remote access and every bad
// pointer, and local accesses the inline test did not take.
#include <algorithm>

#include "rt_internal.hpp"

using namespace splitc::rt;

namespace {

[[gnu::cold]] bool bad_gptr(splitc_gptr_t gp, size_t n, size_t align, const char *op) {
    uint64_t addr = gp.bits & SPLITC_ADDR_MASK;
    unsigned proc = unsigned(gp.bits >> SPLITC_ADDR_BITS);
    if (addr != 0 && proc < unsigned(g.procs) && !g.initialized && g.procs > 1)
        report(SPLITC_ERR_NOT_INITIALIZED, "%s: the runtime has been shut down (splitc_finalize)", op);
    else if (addr == 0) report(SPLITC_ERR_NULL_POINTER, "%s through a null global pointer (processor %u)", op, proc);
    else if (proc >= unsigned(g.procs))
        report(SPLITC_ERR_BAD_PROC, "%s: global pointer names processor %u but PROCS is %d", op, proc, g.procs);
    else if (addr & (align - 1))
        report(SPLITC_ERR_MISALIGNED, "%s of %zu bytes at address %#llx on processor %u: not %zu-byte aligned", op, n,
               (unsigned long long)addr, proc, align);
    else
        report(SPLITC_ERR_OUT_OF_SEGMENT,
               "%s of %zu bytes at %#llx on processor %u: the range is not in the symmetric heap "
               "[%#lx, %#lx) or the static data [%#lx, %#lx); remote data must come from "
               "all_spread_malloc or static storage",
               op, n, (unsigned long long)addr, proc, (unsigned long)g.heap.lo, (unsigned long)g.heap.hi,
               (unsigned long)g.statics.lo, (unsigned long)g.statics.hi);
    return false;
}

// Valid: non-null, processor in range, aligned, and (if remote) inside the
// memory every processor has at the same address and registered.
inline bool check(splitc_gptr_t gp, size_t n, size_t align, const char *op) {
    uint64_t addr = gp.bits & SPLITC_ADDR_MASK;
    unsigned proc = unsigned(gp.bits >> SPLITC_ADDR_BITS);
    if (__builtin_expect(addr != 0 && proc < g.live_procs && (addr & (align - 1)) == 0 &&
                             (int(proc) == g.me || remote_addressable(addr, n)),
                         1))
        return true;
    return bad_gptr(gp, n, align, op);
}

inline bool check_local(const void *p, size_t n, const char *op) {
    if (__builtin_expect(p != nullptr || n == 0, 1)) return true;
    report(SPLITC_ERR_NULL_POINTER, "%s: the local buffer is null", op);
    return false;
}

inline int proc_of(splitc_gptr_t gp) { return int(gp.bits >> SPLITC_ADDR_BITS); }
inline uint64_t addr_of(splitc_gptr_t gp) { return gp.bits & SPLITC_ADDR_MASK; }

inline void wait_blocking() {
    while (g.blocking_pending) wait_step();
}

template <class T>
inline T read_scalar(splitc_gptr_t gp) {
    if (!check(gp, sizeof(T), sizeof(T), "read")) return 0;
    int proc = proc_of(gp);
    if (proc == g.me) return *reinterpret_cast<const volatile T *>(addr_of(gp));
    T v;
    ++g.blocking_pending;
    send_request(proc, kReadReq, 0, addr_of(gp), nullptr, sizeof(T), reinterpret_cast<uint64_t>(&v));
    wait_blocking();
    return v;
}

template <class T>
inline void write_scalar(splitc_gptr_t gp, T v) {
    if (!check(gp, sizeof(T), sizeof(T), "write")) return;
    int proc = proc_of(gp);
    if (proc == g.me) {
        *reinterpret_cast<volatile T *>(addr_of(gp)) = v;
        return;
    }
    ++g.blocking_pending;
    send_request(proc, kWriteReq, 0, addr_of(gp), &v, sizeof(T), 0);
    wait_blocking();
}

template <class T>
inline void get_scalar(void *dst, splitc_gptr_t gp) {
    if (!check(gp, sizeof(T), sizeof(T), "get") || !check_local(dst, 1, "get")) return;
    int proc = proc_of(gp);
    if (proc == g.me) {
        std::memcpy(dst, reinterpret_cast<const void *>(addr_of(gp)), sizeof(T));
        return;
    }
    ++g.splitphase_pending;
    send_request(proc, kGetReq, 0, addr_of(gp), nullptr, sizeof(T), reinterpret_cast<uint64_t>(dst));
}

template <class T>
inline void put_scalar(splitc_gptr_t gp, T v) {
    if (!check(gp, sizeof(T), sizeof(T), "put")) return;
    int proc = proc_of(gp);
    if (proc == g.me) {
        *reinterpret_cast<volatile T *>(addr_of(gp)) = v;
        return;
    }
    ++g.splitphase_pending;
    send_request(proc, kPutReq, 0, addr_of(gp), &v, sizeof(T), 0);
}

inline void store_local(uint64_t addr, const void *src, size_t n) {
    std::memmove(reinterpret_cast<void *>(addr), src, n);
    g.store_sent += int64_t(n);
    g.store_recv += int64_t(n);
    g.store_avail += int64_t(n);
}

template <class T>
inline void store_scalar(splitc_gptr_t gp, T v) {
    if (!check(gp, sizeof(T), sizeof(T), "store")) return;
    int proc = proc_of(gp);
    if (proc == g.me) {
        store_local(addr_of(gp), &v, sizeof(T));
        return;
    }
    g.store_sent += int64_t(sizeof(T));
    send_request(proc, kStoreReq, 0, addr_of(gp), &v, sizeof(T), 0);
}

// Splits [0, n) into messages of at most max_payload bytes.
template <class F>
inline void for_each_fragment(size_t n, F &&f) {
    size_t step = g.max_payload;
    for (size_t off = 0; off < n; off += step) f(off, uint32_t(n - off < step ? n - off : step));
}

} // namespace

extern "C" {

uint8_t splitc_read_1_slow(splitc_gptr_t gp) { return read_scalar<uint8_t>(gp); }
uint16_t splitc_read_2_slow(splitc_gptr_t gp) { return read_scalar<uint16_t>(gp); }
uint32_t splitc_read_4_slow(splitc_gptr_t gp) { return read_scalar<uint32_t>(gp); }
uint64_t splitc_read_8_slow(splitc_gptr_t gp) { return read_scalar<uint64_t>(gp); }
void splitc_write_1_slow(splitc_gptr_t gp, uint8_t v) { write_scalar(gp, v); }
void splitc_write_2_slow(splitc_gptr_t gp, uint16_t v) { write_scalar(gp, v); }
void splitc_write_4_slow(splitc_gptr_t gp, uint32_t v) { write_scalar(gp, v); }
void splitc_write_8_slow(splitc_gptr_t gp, uint64_t v) { write_scalar(gp, v); }

void splitc_get_1_slow(void *dst, splitc_gptr_t gp) { get_scalar<uint8_t>(dst, gp); }
void splitc_get_2_slow(void *dst, splitc_gptr_t gp) { get_scalar<uint16_t>(dst, gp); }
void splitc_get_4_slow(void *dst, splitc_gptr_t gp) { get_scalar<uint32_t>(dst, gp); }
void splitc_get_8_slow(void *dst, splitc_gptr_t gp) { get_scalar<uint64_t>(dst, gp); }
void splitc_put_1_slow(splitc_gptr_t gp, uint8_t v) { put_scalar(gp, v); }
void splitc_put_2_slow(splitc_gptr_t gp, uint16_t v) { put_scalar(gp, v); }
void splitc_put_4_slow(splitc_gptr_t gp, uint32_t v) { put_scalar(gp, v); }
void splitc_put_8_slow(splitc_gptr_t gp, uint64_t v) { put_scalar(gp, v); }

void splitc_store_1(splitc_gptr_t gp, uint8_t v) { store_scalar(gp, v); }
void splitc_store_2(splitc_gptr_t gp, uint16_t v) { store_scalar(gp, v); }
void splitc_store_4(splitc_gptr_t gp, uint32_t v) { store_scalar(gp, v); }
void splitc_store_8(splitc_gptr_t gp, uint64_t v) { store_scalar(gp, v); }

void splitc_bulk_read(void *dst, splitc_gptr_t src, size_t n) {
    if (n == 0 || !check(src, n, 1, "bulk_read") || !check_local(dst, n, "bulk_read")) return;
    int proc = proc_of(src);
    if (proc == g.me) {
        std::memmove(dst, reinterpret_cast<const void *>(addr_of(src)), n);
        return;
    }
    if (bulk_by_rdma(n) && rdma_read(proc, dst, addr_of(src), n, false)) {
        wait_blocking();
        return;
    }
    for_each_fragment(n, [&](size_t off, uint32_t len) {
        ++g.blocking_pending;
        send_request(proc, kReadReq, 0, addr_of(src) + off, nullptr, len, reinterpret_cast<uint64_t>(dst) + off);
    });
    wait_blocking();
}

void splitc_bulk_write(splitc_gptr_t dst, const void *src, size_t n) {
    if (n == 0 || !check(dst, n, 1, "bulk_write") || !check_local(src, n, "bulk_write")) return;
    int proc = proc_of(dst);
    if (proc == g.me) {
        std::memmove(reinterpret_cast<void *>(addr_of(dst)), src, n);
        return;
    }
    if (bulk_by_rdma(n) && rdma_write(proc, addr_of(dst), src, n)) {
        // The acknowledgement of the request behind the data: it is in place.
        ++g.blocking_pending;
        send_notice(proc, kWriteReq, addr_of(dst), 0);
        wait_blocking();
        return;
    }
    for_each_fragment(n, [&](size_t off, uint32_t len) {
        ++g.blocking_pending;
        send_request(proc, kWriteReq, 0, addr_of(dst) + off, static_cast<const uint8_t *>(src) + off, len, 0);
    });
    wait_blocking();
}

void splitc_bulk_get(void *dst, splitc_gptr_t src, size_t n) {
    if (n == 0 || !check(src, n, 1, "bulk_get") || !check_local(dst, n, "bulk_get")) return;
    int proc = proc_of(src);
    if (proc == g.me) {
        std::memmove(dst, reinterpret_cast<const void *>(addr_of(src)), n);
        return;
    }
    if (bulk_by_rdma(n) && rdma_read(proc, dst, addr_of(src), n, true)) return;
    for_each_fragment(n, [&](size_t off, uint32_t len) {
        ++g.splitphase_pending;
        send_request(proc, kGetReq, 0, addr_of(src) + off, nullptr, len, reinterpret_cast<uint64_t>(dst) + off);
    });
}

void splitc_bulk_put(splitc_gptr_t dst, const void *src, size_t n) {
    if (n == 0 || !check(dst, n, 1, "bulk_put") || !check_local(src, n, "bulk_put")) return;
    int proc = proc_of(dst);
    if (proc == g.me) {
        std::memmove(reinterpret_cast<void *>(addr_of(dst)), src, n);
        return;
    }
    if (bulk_by_rdma(n) && rdma_write(proc, addr_of(dst), src, n)) {
        // Confirmed at the next sync, by one acknowledged request behind all
        // the puts to this peer since the last one (rt_bulk.cpp, confirm_puts).
        put_unconfirmed(proc, addr_of(dst));
        // Only a source in global memory (the heap, static data) may be read
        // after the call (docs/splitc.md, "Completion rules"); any other -
        // the stack temporary of a C++ put(p, value), a malloc'd buffer - is
        // read by the NIC before we return: its RDMA writes complete first,
        // as bulk_store's do.  (Found by ASan with puts from 4 KiB by RDMA:
        // the NIC's thread read a put's temporary after its scope.)
        VIP_MEM_HANDLE mh;
        if (!registered_handle(src, n, &mh)) drain_sends(proc);
        return;
    }
    // Fragments from registered memory go out as gather segments, without a
    // copy; the acknowledgement (awaited by sync) proves the data was taken.
    for_each_fragment(n, [&](size_t off, uint32_t len) {
        ++g.splitphase_pending;
        send_request(proc, kPutReq, 0, addr_of(dst) + off, static_cast<const uint8_t *>(src) + off, len, 0);
    });
}

void splitc_bulk_store(splitc_gptr_t dst, const void *src, size_t n) {
    if (n == 0 || !check(dst, n, 1, "bulk_store") || !check_local(src, n, "bulk_store")) return;
    int proc = proc_of(dst);
    if (proc == g.me) {
        store_local(addr_of(dst), src, n);
        return;
    }
    g.store_sent += int64_t(n);
    if (bulk_by_rdma(n) && rdma_write(proc, addr_of(dst), src, n)) {
        // Notices count the bytes at the target (at most 1 GiB each: len is 32 bits).
        for (size_t off = 0; off < n; off += size_t(1) << 30)
            send_notice(proc, kStoreRdma, addr_of(dst) + off, uint32_t(std::min(n - off, size_t(1) << 30)));
        // Nothing acknowledges a store: wait for the RDMA writes themselves
        // (complete once the target has the data), so src may be reused.
        drain_sends(proc);
        return;
    }
    for_each_fragment(n, [&](size_t off, uint32_t len) {
        send_request(proc, kStoreReq, 0, addr_of(dst) + off, static_cast<const uint8_t *>(src) + off, len, 0);
    });
    // No acknowledgement will tell us when a gathered source was read, so
    // wait for the sends themselves: the caller may then reuse src.
    VIP_MEM_HANDLE mh;
    if (registered_handle(src, n, &mh)) drain_sends(proc);
}

void splitc_sync(void) {
    if (__builtin_expect(g.unconfirmed_peers != 0, 0)) confirm_puts();
    while (g.splitphase_pending) wait_step();
}

void splitc_store_sync(size_t nbytes) {
    while (g.store_avail < int64_t(nbytes)) wait_step();
    g.store_avail -= int64_t(nbytes);
}

void splitc_reset_store_sync(void) { g.store_avail = 0; }

int64_t splitc_store_bytes_arrived(void) { return g.store_avail; }

void splitc_poll(void) {
    if (g.initialized) poll();
}

size_t splitc_max_payload(void) { return g.max_payload; }
size_t splitc_rdma_min(void) { return g.rdma_chunk ? g.rdma_min : 0; }
int splitc_credits(void) { return int(g.credits); }
int splitc_store_ack_interval(void) { return int(g.store_ack_every); }

} // extern "C"
