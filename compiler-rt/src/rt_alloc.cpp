// rt_alloc.cpp - the symmetric heap: one mapping at the same virtual address
// in every process, registered with VIPL, carved by a deterministic first-fit
// allocator from the bottom (static spread objects, all_spread_malloc) and by
// a stack from the top (automatic spread arrays, splitc_scope_alloc).  Every
// processor makes the same collective calls in the same order, so every
// processor's allocator returns the same addresses; all_spread_malloc checks
// that and reports a mismatch instead of corrupting.
#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <map>

#include "rt_internal.hpp"
#include "vipl_boot.h"

namespace splitc::rt {

namespace {

constexpr size_t kAlign = 64;

std::map<uintptr_t, size_t> free_blocks; // address -> size
std::map<uintptr_t, size_t> used_blocks;
// The scope stack occupies [scope_top, heap.hi); that range is not in
// free_blocks, so first-fit allocations never land in it.
uintptr_t scope_top = 0;

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
    size_t (*bytes_fn)(void); // when the size depends on PROCS
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

// Gives the heap's pages back: to the NIC they came from, or to the kernel.
void release_heap_pages(uintptr_t lo, size_t bytes, VIP_NIC_HANDLE nic) {
    if (nic) VipxFreeMem(nic, reinterpret_cast<void *>(lo));
    else munmap(reinterpret_cast<void *>(lo), bytes);
}

} // namespace

bool heap_map(size_t bytes, bool quiet) {
    std::vector<uintptr_t> cands(std::begin(kCandidates), std::end(kCandidates));
    if (const char *e = std::getenv("SPLITC_HEAP_ADDR")) cands.assign(1, uintptr_t(std::strtoull(e, nullptr, 0)));
    for (uintptr_t want : cands) {
        int ok = 0;
        if (g.nic) {
            // The NIC's own memory (VipxAllocMemAt): on the emulated NIC a shared-memory
            // segment the peers' NICs map once, so bulk transfers into and out
            // of the heap are one memcpy instead of a cross-memory-attach call.
            ok = VipxAllocMemAt(g.nic, reinterpret_cast<void *>(want), bytes) == VIP_SUCCESS;
        } else {
            void *p = mmap(reinterpret_cast<void *>(want), bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
            ok = p == reinterpret_cast<void *>(want);
            if (p != MAP_FAILED && !ok) munmap(p, bytes); // a kernel that ignored the hint
        }
        if (all_agree(ok)) {
            g.heap.lo = want;
            g.heap.hi = want + bytes;
            g.heap_nic = g.nic;
            heap_allocator_reset(g.heap.lo, g.heap.hi);
            return true;
        }
        if (ok) release_heap_pages(want, bytes, g.nic);
    }
    if (quiet) return false;
    report(SPLITC_ERR_INIT,
           "could not map the %zu-byte symmetric heap at one address on every processor (tried %zu "
           "addresses from %#lx); set SPLITC_HEAP_ADDR=0x... to a free range or lower SPLITC_HEAP_SIZE",
           bytes, cands.size(), (unsigned long)cands[0]);
    return false;
}

void heap_unmap() {
    if (g.heap.lo) release_heap_pages(g.heap.lo, g.heap.hi - g.heap.lo, g.heap_nic);
    g.heap = Segment{};
    g.heap_nic = nullptr;
    free_blocks.clear();
    used_blocks.clear();
    scope_top = 0;
}

void heap_allocator_reset(uintptr_t lo, uintptr_t hi) {
    free_blocks.clear();
    used_blocks.clear();
    free_blocks[lo] = hi - lo;
    scope_top = hi;
}

void place_static_objects() {
    for (int i = 0; i < nstatics; ++i) {
        // The size callback runs now that PROCS and MYPROC are set.
        size_t bytes = statics[i].bytes_fn ? statics[i].bytes_fn() : statics[i].bytes;
        uintptr_t a = heap_alloc(bytes, statics[i].align);
        if (!a)
            report(SPLITC_ERR_NO_MEMORY,
                   "static spread object %d needs %zu bytes per processor but only %zu of "
                   "the %zu-byte symmetric heap are free; raise SPLITC_HEAP_SIZE",
                   i, bytes, splitc_heap_available(), size_t(g.heap.hi - g.heap.lo));
        // Fresh mappings are zero, but a heap reused after splitc_finalize
        // and splitc_init may not be.
        else std::memset(reinterpret_cast<void *>(a), 0, bytes);
        *statics[i].slot = reinterpret_cast<void *>(a);
    }
}

} // namespace splitc::rt

using namespace splitc::rt;

extern "C" {

namespace {

// Blocks per processor (the row count) for nblocks spread blocks, rounded up
// without computing nblocks + PROCS - 1, which wraps for huge nblocks.
size_t rows_for(size_t nblocks) {
    const size_t p = size_t(g.procs);
    return nblocks / p + (nblocks % p != 0);
}

void register_static(const char *who, void **slot, size_t bytes, size_t (*fn)(void), size_t align) {
    if (!slot || (align & (align - 1))) {
        report(SPLITC_ERR_BAD_ARGUMENT, "%s: null slot or alignment %zu not a power of two", who, align);
        return;
    }
    if (!g.initialized) {
        if (nstatics == kMaxStatics) {
            report(SPLITC_ERR_BAD_ARGUMENT, "%s: more than %d static spread objects", who, kMaxStatics);
            return;
        }
        statics[nstatics++] = StaticObject{slot, bytes, fn, align};
        return;
    }
    // After start-up: collective, like all_spread_malloc.
    if (fn) bytes = fn();
    uintptr_t a = heap_alloc(bytes, align);
    if (!a) {
        report(SPLITC_ERR_NO_MEMORY,
               "%s: a static spread object of %zu bytes per processor does not fit the "
               "symmetric heap (%zu of %zu bytes free); raise SPLITC_HEAP_SIZE",
               who, bytes, splitc_heap_available(), size_t(g.heap.hi - g.heap.lo));
        return;
    }
    std::memset(reinterpret_cast<void *>(a), 0, bytes);
    *slot = reinterpret_cast<void *>(a);
    splitc_barrier();
}

} // namespace

void splitc_register_static(void **slot, size_t bytes_per_proc, size_t align) {
    register_static("splitc_register_static", slot, bytes_per_proc, nullptr, align);
}

void splitc_register_static_fn(void **slot, size_t (*bytes_per_proc)(void), size_t align) {
    if (!bytes_per_proc) {
        report(SPLITC_ERR_BAD_ARGUMENT, "splitc_register_static_fn: null size function");
        return;
    }
    register_static("splitc_register_static_fn", slot, 0, bytes_per_proc, align);
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
    size_t rows = rows_for(nblocks);
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
               "blocksize %lld..%lld)",
               nblocks, blocksize, (long long)lo.a, (long long)hi.a, (long long)lo.b, (long long)hi.b);
        return null;
    }
    if (!sane) {
        report(SPLITC_ERR_BAD_ARGUMENT, "all_spread_malloc(%zu, %zu): need nblocks > 0 and blocksize > 0", nblocks,
               blocksize);
        return null;
    }
    if (hi.c != lo.c || lo.c == 0) {
        if (a) heap_free(a);
        if (lo.c == 0)
            report(SPLITC_ERR_NO_MEMORY,
                   "all_spread_malloc(%zu, %zu): %zu bytes per processor do not fit the %zu-byte symmetric "
                   "heap (%zu bytes free); raise SPLITC_HEAP_SIZE",
                   nblocks, blocksize, rows * blocksize, size_t(g.heap.hi - g.heap.lo), splitc_heap_available());
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
               "all_spread_free(%#lx on processor %d): not a pointer returned by all_spread_malloc", (unsigned long)a,
               splitc_sptr_proc(s));
}

size_t splitc_heap_available(void) {
    size_t best = 0;
    for (auto &b : free_blocks) best = b.second > best ? b.second : best;
    return best;
}

size_t splitc_heap_size(void) { return size_t(g.heap.hi - g.heap.lo); }

splitc_scope_t splitc_scope_enter(void) { return splitc_scope_t{size_t(scope_top)}; }

void *splitc_scope_alloc(size_t nblocks, size_t blocksize, size_t align) {
    if (!g.heap.lo) {
        report(SPLITC_ERR_NOT_INITIALIZED, "splitc_scope_alloc: no symmetric heap (call splitc_init first)");
        return nullptr;
    }
    if (align & (align - 1)) {
        report(SPLITC_ERR_BAD_ARGUMENT, "splitc_scope_alloc(%zu, %zu, %zu): the alignment must be a power of two",
               nblocks, blocksize, align);
        return nullptr;
    }
    if (align < kAlign) align = kAlign;
    size_t rows = rows_for(nblocks);
    bool overflow = blocksize != 0 && rows > SIZE_MAX / blocksize;
    // A zero-sized array still gets a distinct, non-null address.
    size_t bytes = overflow ? SIZE_MAX : rows * blocksize != 0 ? rows * blocksize : 1;
    if (g.check_collectives) {
        CollPayload mine{int64_t(nblocks), int64_t(blocksize), int64_t(align)};
        CollPayload hi = all_reduce(kOpMaxL, mine), lo = all_reduce(kOpMinL, mine);
        if (hi.a != lo.a || hi.b != lo.b || hi.c != lo.c) {
            report(SPLITC_ERR_COLLECTIVE_MISMATCH,
                   "splitc_scope_alloc(%zu, %zu, %zu): processors passed different arguments (nblocks "
                   "%lld..%lld, blocksize %lld..%lld); every processor must declare the same automatic spread "
                   "arrays in the same order",
                   nblocks, blocksize, align, (long long)lo.a, (long long)hi.a, (long long)lo.b, (long long)hi.b);
            return nullptr;
        }
    }
    // The stack grows down into the free block that ends at its bottom.  Every
    // processor holds the same free list, so all reach the same verdict and
    // none waits in a barrier the others skip.
    uintptr_t new_top = 0;
    auto it = free_blocks.empty() ? free_blocks.end() : std::prev(free_blocks.end());
    bool fits = it != free_blocks.end() && it->first + it->second == scope_top && !overflow &&
        bytes <= scope_top - it->first && ((new_top = (scope_top - bytes) & ~uintptr_t(align - 1)) >= it->first);
    if (!fits) {
        size_t room = it != free_blocks.end() && it->first + it->second == scope_top ? it->second : 0;
        if (overflow)
            report(SPLITC_ERR_NO_MEMORY,
                   "splitc_scope_alloc(%zu, %zu): the size overflows; automatic spread arrays live in the "
                   "symmetric heap (SPLITC_HEAP_SIZE)",
                   nblocks, blocksize);
        else
            report(SPLITC_ERR_NO_MEMORY,
                   "automatic spread array of %zu blocks of %zu bytes needs %zu bytes per processor but only %zu "
                   "are free below the scope stack in the %zu-byte symmetric heap; raise SPLITC_HEAP_SIZE (to at "
                   "least %zuM)",
                   nblocks, blocksize, bytes, room, size_t(g.heap.hi - g.heap.lo),
                   (size_t(g.heap.hi - g.heap.lo) + bytes - room + (size_t(1) << 20) - 1) >> 20);
        return nullptr;
    }
    if (new_top == it->first) free_blocks.erase(it);
    else it->second = new_top - it->first;
    scope_top = new_top;
    splitc_barrier();
    return reinterpret_cast<void *>(new_top);
}

void splitc_scope_leave(splitc_scope_t *scope) {
    if (!scope) {
        report(SPLITC_ERR_BAD_ARGUMENT, "splitc_scope_leave(NULL): pass the splitc_scope_t from splitc_scope_enter");
        return;
    }
    uintptr_t mark = uintptr_t(scope->mark);
    if (mark == scope_top) return; // the scope allocated nothing (or the heap is gone)
    if (mark < scope_top || mark > g.heap.hi || !g.heap.lo) {
        report(SPLITC_ERR_BAD_ARGUMENT,
               "splitc_scope_leave: mark %#lx is not on the scope stack [%#lx, %#lx); scopes must be left in "
               "the reverse order of splitc_scope_enter, each once",
               (unsigned long)mark, (unsigned long)scope_top, (unsigned long)g.heap.hi);
        return;
    }
    // Give [scope_top, mark) back to the free block just below, if any.
    auto it = free_blocks.empty() ? free_blocks.end() : std::prev(free_blocks.end());
    if (it != free_blocks.end() && it->first + it->second == scope_top) it->second += mark - scope_top;
    else free_blocks[scope_top] = mark - scope_top;
    scope_top = mark;
}

} // extern "C"
