// rt_alloc.cpp - the symmetric heap: one mapping at the same virtual address
// in every process, registered with VIPL, carved by a deterministic first-fit
// allocator.  Every processor makes the same collective calls in the same
// order, so every processor's allocator returns the same addresses; the
// collective calls check that and report a mismatch instead of corrupting.
#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <map>

#include "rt_internal.hpp"
#include "vipl_boot.h"

namespace splitc::rt {

namespace {

constexpr size_t kAlign = 64;

std::map<uintptr_t, size_t> free_blocks;  // address -> size
std::map<uintptr_t, size_t> used_blocks;

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

uintptr_t heap_alloc(size_t bytes, size_t align) {
    if (align < kAlign) align = kAlign;
    bytes = round_up(bytes ? bytes : 1, kAlign);
    for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
        uintptr_t start = round_up(it->first, align);
        uintptr_t end = it->first + it->second;
        if (start > end || end - start < bytes) continue;
        uintptr_t lo = it->first;
        free_blocks.erase(it);
        if (start > lo) free_blocks[lo] = start - lo;
        if (end > start + bytes) free_blocks[start + bytes] = end - (start + bytes);
        used_blocks[start] = bytes;
        return start;
    }
    return 0;
}

bool heap_free(uintptr_t a) {
    auto it = used_blocks.find(a);
    if (it == used_blocks.end()) return false;
    size_t n = it->second;
    used_blocks.erase(it);
    auto next = free_blocks.lower_bound(a);
    if (next != free_blocks.end() && a + n == next->first) {
        n += next->second;
        free_blocks.erase(next);
    }
    auto ins = free_blocks.emplace(a, n).first;
    if (ins != free_blocks.begin()) {
        auto prev = std::prev(ins);
        if (prev->first + prev->second == a) {
            prev->second += n;
            free_blocks.erase(ins);
        }
    }
    return true;
}

struct StaticObject {
    void **slot;
    size_t bytes;
    size_t align;
};
constexpr int kMaxStatics = 1024;
StaticObject statics[kMaxStatics];
int nstatics = 0;

// Candidate heap addresses: far above the PIE/brk area (0x55..-0x56..) and
// below the mmap area (0x7f..), all inside 47-bit user space.
const uintptr_t kCandidates[] = {0x5c0000000000, 0x5e0000000000, 0x640000000000,
                                 0x6a0000000000, 0x4c0000000000, 0x3c0000000000};

// Every processor must agree; with one processor there is nothing to ask.
bool all_agree(int ok) {
    if (g.procs == 1) return ok != 0;
    std::vector<int> all(size_t(g.procs));
    if (vipl_boot_allgather(&ok, sizeof ok, all.data()) != VIPL_BOOT_OK) return false;
    for (int v : all)
        if (!v) return false;
    return true;
}

}  // namespace

bool heap_map(size_t bytes) {
    std::vector<uintptr_t> cands(std::begin(kCandidates), std::end(kCandidates));
    if (const char *e = std::getenv("SPLITC_HEAP_ADDR")) cands.assign(1, uintptr_t(std::strtoull(e, nullptr, 0)));
    for (uintptr_t want : cands) {
        void *p = mmap(reinterpret_cast<void *>(want), bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
        int ok = p == reinterpret_cast<void *>(want);
        if (p != MAP_FAILED && !ok) munmap(p, bytes);  // a kernel that ignored the hint
        if (all_agree(ok)) {
            g.heap.lo = want;
            g.heap.hi = want + bytes;
            heap_allocator_reset(g.heap.lo, g.heap.hi);
            return true;
        }
        if (ok) munmap(p, bytes);
    }
    report(SPLITC_ERR_INIT,
           "could not map the %zu-byte symmetric heap at one address on every processor (tried %zu "
           "addresses from %#lx); set SPLITC_HEAP_ADDR=0x... to a free range or lower SPLITC_HEAP_SIZE",
           bytes, cands.size(), (unsigned long)cands[0]);
    return false;
}

void heap_unmap() {
    if (g.heap.lo) munmap(reinterpret_cast<void *>(g.heap.lo), g.heap.hi - g.heap.lo);
    g.heap = Segment{};
    free_blocks.clear();
    used_blocks.clear();
}

void heap_allocator_reset(uintptr_t lo, uintptr_t hi) {
    free_blocks.clear();
    used_blocks.clear();
    free_blocks[lo] = hi - lo;
}

void place_static_objects() {
    for (int i = 0; i < nstatics; ++i) {
        uintptr_t a = heap_alloc(statics[i].bytes, statics[i].align);
        if (!a)
            report(SPLITC_ERR_NO_MEMORY, "static spread object %d (%zu bytes) does not fit the symmetric heap; "
                   "raise SPLITC_HEAP_SIZE", i, statics[i].bytes);
        *statics[i].slot = reinterpret_cast<void *>(a);
    }
}

}  // namespace splitc::rt

using namespace splitc::rt;

extern "C" {

void splitc_register_static(void **slot, size_t bytes_per_proc, size_t align) {
    if (!slot || (align & (align - 1))) {
        report(SPLITC_ERR_BAD_ARGUMENT, "splitc_register_static: null slot or alignment %zu not a power of two", align);
        return;
    }
    if (!g.initialized) {
        if (nstatics == kMaxStatics) {
            report(SPLITC_ERR_BAD_ARGUMENT, "more than %d static spread objects", kMaxStatics);
            return;
        }
        statics[nstatics++] = StaticObject{slot, bytes_per_proc, align};
        return;
    }
    // After start-up: collective, like all_spread_malloc.
    uintptr_t a = heap_alloc(bytes_per_proc, align);
    if (!a) {
        report(SPLITC_ERR_NO_MEMORY, "static spread object of %zu bytes does not fit the symmetric heap", bytes_per_proc);
        return;
    }
    std::memset(reinterpret_cast<void *>(a), 0, bytes_per_proc);
    *slot = reinterpret_cast<void *>(a);
    splitc_barrier();
}

splitc_sptr_t splitc_all_spread_malloc(size_t nblocks, size_t blocksize) {
    splitc_sptr_t null{0};
    if (!g.initialized && g.procs != 1) {
        report(SPLITC_ERR_NOT_INITIALIZED, "all_spread_malloc called before splitc_init");
        return null;
    }
    if (!g.heap.lo) {
        report(SPLITC_ERR_NOT_INITIALIZED, "all_spread_malloc: no symmetric heap (call splitc_init first)");
        return null;
    }
    size_t rows = (nblocks + size_t(g.procs) - 1) / size_t(g.procs);
    uintptr_t a = 0;
    bool sane = nblocks != 0 && blocksize != 0 && rows <= SIZE_MAX / blocksize;
    if (sane) a = heap_alloc(rows * blocksize, kAlign);
    // One round checks that every processor passed the same arguments and got
    // the same address (it also keeps anyone from touching the block before
    // its owner has zeroed it).
    if (a) std::memset(reinterpret_cast<void *>(a), 0, rows * blocksize);
    CollPayload mine{int64_t(nblocks), int64_t(blocksize), int64_t(a)};
    CollPayload hi = all_reduce(kOpMaxL, mine);
    CollPayload lo = all_reduce(kOpMinL, mine);
    if (hi.a != lo.a || hi.b != lo.b) {
        if (a) heap_free(a);
        report(SPLITC_ERR_COLLECTIVE_MISMATCH,
               "all_spread_malloc(%zu, %zu): processors passed different arguments (nblocks %lld..%lld, "
               "blocksize %lld..%lld)", nblocks, blocksize, (long long)lo.a, (long long)hi.a,
               (long long)lo.b, (long long)hi.b);
        return null;
    }
    if (!sane) {
        report(SPLITC_ERR_BAD_ARGUMENT, "all_spread_malloc(%zu, %zu): need nblocks > 0 and blocksize > 0",
               nblocks, blocksize);
        return null;
    }
    if (hi.c != lo.c || lo.c == 0) {
        if (a) heap_free(a);
        if (lo.c == 0)
            report(SPLITC_ERR_NO_MEMORY,
                   "all_spread_malloc(%zu, %zu): %zu bytes per processor do not fit the symmetric heap "
                   "(%zu bytes free); raise SPLITC_HEAP_SIZE", nblocks, blocksize, rows * blocksize,
                   splitc_heap_available());
        else
            report(SPLITC_ERR_COLLECTIVE_MISMATCH,
                   "all_spread_malloc: processors got different addresses; every processor must make the "
                   "same all_spread_malloc/all_spread_free calls in the same order");
        return null;
    }
    return splitc_sptr_from_gptr(splitc_toglobal(0, reinterpret_cast<void *>(a)));
}

void splitc_all_spread_free(splitc_sptr_t s) {
    uintptr_t a = uintptr_t(s.bits & SPLITC_ADDR_MASK);
    // Nobody may still be reading or writing the block.
    splitc_barrier();
    CollPayload mine{int64_t(a), 0, 0};
    CollPayload hi = all_reduce(kOpMaxL, mine);
    CollPayload lo = all_reduce(kOpMinL, mine);
    if (hi.a != lo.a) {
        report(SPLITC_ERR_COLLECTIVE_MISMATCH, "all_spread_free: processors passed different pointers");
        return;
    }
    if (splitc_sptr_proc(s) != 0 || !heap_free(a))
        report(SPLITC_ERR_BAD_ARGUMENT,
               "all_spread_free(%#lx on processor %d): not a pointer returned by all_spread_malloc",
               (unsigned long)a, splitc_sptr_proc(s));
}

size_t splitc_heap_available(void) {
    size_t best = 0;
    for (auto &b : free_blocks) best = b.second > best ? b.second : best;
    return best;
}

}  // extern "C"
