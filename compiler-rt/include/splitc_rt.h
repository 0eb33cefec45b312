/*
 * splitc_rt.h - the Split-C compiler runtime ABI (plain C, stable).
 *
 * A Split-C translator turns Split-C source into C that calls exactly the
 * functions below; the C++ embedding (splitc/include/splitc/splitc.hpp) is a
 * typed layer over the same calls.  Everything here is C: no C++ types, no
 * structs passed by pointer on the data path, names prefixed splitc_.
 *
 * Model (docs/splitc.md has the full story):
 *   - SPMD: PROCS processes (splitc_procs()), this one is MYPROC (splitc_myproc()).
 *   - A global pointer is (processor, local address), packed in 64 bits.
 *     Global-pointer arithmetic moves the address and keeps the processor.
 *   - A spread pointer has the same representation; adding 1 moves to the same
 *     address on the next processor, and from the last processor wraps to
 *     processor 0 at the next element (address + element size).
 *   - Remote data must live in the symmetric heap (all_spread_malloc, static
 *     spread data) or in the program's static data, which sit at the same local
 *     address on every process.  Local accesses may use any local address.
 *
 * Operation families, per scalar size (1, 2, 4, 8 bytes; float and double
 * have typed wrappers) and for byte ranges of any size ("bulk", also used for
 * structs):
 *   read / write        synchronous: return when the value is read / written
 *   get  / put          split-phase: complete at the next splitc_sync()
 *   store               one-way: completion is counted at the target
 *                       (splitc_store_sync, splitc_all_store_sync)
 *
 * Errors (null pointer, processor out of range, misaligned scalar address,
 * remote address outside the symmetric heap and static data, bad sizes) go to
 * the error handler; the default prints the problem and aborts the whole job.
 * A handler installed with splitc_set_error_handler may return, in which case
 * the offending operation does nothing (reads return 0).  Network failures
 * always end the job after the handler has run.
 *
 * Threads: one thread per process calls the runtime.
 */
#ifndef SPLITC_RT_H
#define SPLITC_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPLITC_RT_ABI_VERSION 1

/* The inline functions of this header.  In C they are GNU `extern inline`
 * (gnu_inline in every dialect): inlined where the compiler inlines, and
 * otherwise calls to the out-of-line copies libsplitc exports (rt_inline.c
 * compiles this header with SPLITC_RT_OUT_OF_LINE_ defined).  Being
 * non-static, they may be called from a program's own GNU89 or C99 `inline`
 * functions without gcc's "static but used in inline function which is not
 * static" (which `static inline` drew once per such function); the code at a
 * call site that inlines is the same.  C++ keeps `static inline`. */
#if defined(__cplusplus)
#define SPLITC_INLINE_ static inline
#elif defined(SPLITC_RT_OUT_OF_LINE_)
#define SPLITC_INLINE_
#else
#define SPLITC_INLINE_ extern __inline__ __attribute__((__gnu_inline__))
#endif

/* ---- processes -------------------------------------------------------- */
/* Set by splitc_init; read them through the accessors. */
extern int splitc_rt_procs;
extern int splitc_rt_myproc;
/* Split-C's PROCSLOG: log2(PROCS) when PROCS is a power of two, otherwise -1,
 * so programs that need a power of two test PROCSLOG < 0 and refuse to run. */
extern int splitc_rt_procslog;

SPLITC_INLINE_ int splitc_procs(void) { return splitc_rt_procs; }
SPLITC_INLINE_ int splitc_myproc(void) { return splitc_rt_myproc; }
SPLITC_INLINE_ int splitc_procslog(void) { return splitc_rt_procslog; }
/* Split-C's on_one: true on processor 0 only. */
SPLITC_INLINE_ int splitc_on_one(void) { return splitc_rt_myproc == 0; }

/* The language names as rvalues (a program cannot assign to PROCS).  The same
 * token sequences are in <split-c/split-c.h>, so both may be included. */
#ifdef SPLITC_LANGUAGE_NAMES
#ifndef PROCS
#define PROCS ((int)splitc_rt_procs)
#define MYPROC ((int)splitc_rt_myproc)
#define PROCSLOG ((int)splitc_rt_procslog)
#define on_one if (MYPROC == 0)
#endif
#endif

/* ---- global and spread pointers ------------------------------------------ */
/* bits 63..48: processor, bits 47..0: local address (user-space addresses of
 * x86-64 and 48-bit aarch64 fit).  The all-zero value is the null pointer. */
typedef struct splitc_gptr {
    uint64_t bits;
} splitc_gptr_t;
typedef struct splitc_sptr {
    uint64_t bits;
} splitc_sptr_t;

#define SPLITC_ADDR_BITS 48
#define SPLITC_ADDR_MASK ((((uint64_t)1) << SPLITC_ADDR_BITS) - 1)
#define SPLITC_MAX_PROCS 65536
#define SPLITC_GPTR_NULL_INIT                                                                                          \
    { 0 }

SPLITC_INLINE_ splitc_gptr_t splitc_toglobal(int proc, const void *addr) {
    splitc_gptr_t g;
    g.bits = ((uint64_t)(uint16_t)proc << SPLITC_ADDR_BITS) | ((uint64_t)(uintptr_t)addr & SPLITC_ADDR_MASK);
    return g;
}
SPLITC_INLINE_ int splitc_toproc(splitc_gptr_t g) { return (int)(g.bits >> SPLITC_ADDR_BITS); }
/* The local address part (meaningful on processor splitc_toproc(g)). */
SPLITC_INLINE_ void *splitc_tolocal(splitc_gptr_t g) { return (void *)(uintptr_t)(g.bits & SPLITC_ADDR_MASK); }
SPLITC_INLINE_ int splitc_gptr_is_null(splitc_gptr_t g) { return (g.bits & SPLITC_ADDR_MASK) == 0; }
SPLITC_INLINE_ int splitc_gptr_is_local(splitc_gptr_t g) { return splitc_toproc(g) == splitc_rt_myproc; }
SPLITC_INLINE_ int splitc_gptr_equal(splitc_gptr_t a, splitc_gptr_t b) { return a.bits == b.bits; }
/* g + nbytes: same processor. */
SPLITC_INLINE_ splitc_gptr_t splitc_gptr_add(splitc_gptr_t g, int64_t nbytes) {
    splitc_gptr_t r;
    r.bits = (g.bits & ~SPLITC_ADDR_MASK) | ((g.bits + (uint64_t)nbytes) & SPLITC_ADDR_MASK);
    return r;
}
/* Byte difference of two global pointers on the same processor. */
SPLITC_INLINE_ int64_t splitc_gptr_diff(splitc_gptr_t a, splitc_gptr_t b) {
    return (int64_t)(a.bits & SPLITC_ADDR_MASK) - (int64_t)(b.bits & SPLITC_ADDR_MASK);
}

SPLITC_INLINE_ splitc_sptr_t splitc_sptr_from_gptr(splitc_gptr_t g) {
    splitc_sptr_t s;
    s.bits = g.bits;
    return s;
}
SPLITC_INLINE_ splitc_gptr_t splitc_sptr_to_gptr(splitc_sptr_t s) {
    splitc_gptr_t g;
    g.bits = s.bits;
    return g;
}
SPLITC_INLINE_ int splitc_sptr_proc(splitc_sptr_t s) { return (int)(s.bits >> SPLITC_ADDR_BITS); }
SPLITC_INLINE_ void *splitc_sptr_addr(splitc_sptr_t s) { return (void *)(uintptr_t)(s.bits & SPLITC_ADDR_MASK); }

/* s + n elements of elemsize bytes: processor advances cyclically, the address
 * advances by elemsize each time the processor wraps past PROCS-1. */
SPLITC_INLINE_ splitc_sptr_t splitc_sptr_add(splitc_sptr_t s, int64_t n, size_t elemsize) {
    int64_t P = splitc_rt_procs;
    int64_t t = (int64_t)splitc_sptr_proc(s) + n;
    int64_t q = t / P, r = t % P;
    if (r < 0) {
        r += P;
        q -= 1;
    }
    uint64_t addr = ((s.bits & SPLITC_ADDR_MASK) + (uint64_t)(q * (int64_t)elemsize)) & SPLITC_ADDR_MASK;
    splitc_sptr_t o;
    o.bits = ((uint64_t)r << SPLITC_ADDR_BITS) | addr;
    return o;
}
/* Number of elements from b to a (a - b), for pointers into one spread object. */
SPLITC_INLINE_ int64_t splitc_sptr_diff(splitc_sptr_t a, splitc_sptr_t b, size_t elemsize) {
    int64_t rows = ((int64_t)(a.bits & SPLITC_ADDR_MASK) - (int64_t)(b.bits & SPLITC_ADDR_MASK)) / (int64_t)elemsize;
    return rows * splitc_rt_procs + (splitc_sptr_proc(a) - splitc_sptr_proc(b));
}

/* ---- start-up and shut-down ------------------------------------------------ */
/* Joins the job (vipl_boot), opens the NIC, maps and registers the symmetric
 * heap, connects one VI per peer.  Collective.  Returns 0, or -1 after printing
 * why (the job is also aborted unless a returning error handler is set).
 * Environment: SPLITC_HEAP_SIZE (bytes, K/M/G suffix; default: half of this
 * host's physical memory shared among the job's processes on the host, at
 * most 1G on providers whose registration pins memory; see
 * docs/splitc.md), SPLITC_CHECK_COLLECTIVES=1 (scope allocations check
 * argument agreement with a reduction),
 * SPLITC_CREDITS (default 32, 16 where registration pins memory),
 * SPLITC_MAX_MSG (default 4096),
 * SPLITC_SEND_CQ=1 (reap sends through a send completion queue, as in the
 * paper), SPLITC_RECV_CQ=1 (use the receive CQ even with a single peer), SPLITC_SPIN=n (yield the CPU after n idle polls while waiting;
 * default: a window that adapts to whether peers share this core). */
int splitc_init(int *argc, char ***argv);
/* Collective: barrier, drain, disconnect, leave the job.  Idempotent. */
void splitc_finalize(void);
int splitc_initialized(void);
/* init + fn(argc, argv) on every processor + finalize; returns fn's result
 * (non-zero on any processor makes vipl-run report failure). */
int splitc_run(int argc, char **argv, int (*fn)(int, char **));
/* The program's entry point, called on every processor by the main() in the
 * splitc_rt_main library (link it, or call splitc_run yourself). */
int splitc_main(int argc, char **argv);

/* Static spread data: a translator emits, for each static spread object, a
 * constructor calling splitc_register_static(&slot, bytes_per_processor, align)
 * before main.  splitc_init places the objects, in registration order, at the
 * bottom of the symmetric heap (so at the same address on every processor,
 * since every processor runs the same binary) and stores the address in *slot.
 * Registering after init allocates immediately and is then collective. */
void splitc_register_static(void **slot, size_t bytes_per_proc, size_t align);
/* The same for objects whose size depends on PROCS (file-scope
 * `double u[PROCS*4]::[8];`): splitc_init calls bytes_per_proc() once PROCS and
 * MYPROC are set and places the object with the others, in the same
 * registration order.  Memory is zeroed (C static semantics). */
void splitc_register_static_fn(void **slot, size_t (*bytes_per_proc)(void), size_t align);

/* ---- errors ------------------------------------------------------------------ */
typedef enum splitc_error {
    SPLITC_OK = 0,
    SPLITC_ERR_NULL_POINTER,        /* global pointer (or local buffer) is null */
    SPLITC_ERR_BAD_PROC,            /* processor outside 0..PROCS-1 */
    SPLITC_ERR_MISALIGNED,          /* scalar address not a multiple of its size */
    SPLITC_ERR_OUT_OF_SEGMENT,      /* remote range not in symmetric heap / static data */
    SPLITC_ERR_BAD_ARGUMENT,        /* e.g. zero block size, free of a non-spread pointer */
    SPLITC_ERR_NOT_INITIALIZED,     /* call before splitc_init */
    SPLITC_ERR_NO_MEMORY,           /* symmetric heap exhausted */
    SPLITC_ERR_COLLECTIVE_MISMATCH, /* processors disagree on a collective's arguments */
    SPLITC_ERR_NETWORK,             /* a VIPL call failed or a peer went away */
    SPLITC_ERR_INIT                 /* start-up failed */
} splitc_error_t;

typedef void (*splitc_error_handler_t)(splitc_error_t code, const char *message, void *ctx);
/* Installs h (NULL restores the default: print and abort the job); returns the old one. */
splitc_error_handler_t splitc_set_error_handler(splitc_error_handler_t h, void *ctx);
const char *splitc_error_string(splitc_error_t code);
/* Code of the last error reported on this processor (SPLITC_OK if none); clears it. */
splitc_error_t splitc_take_last_error(void);
/* Reports an error found by compiled code or a language layer (e.g. an array
 * index out of bounds) through the same handler. */
void splitc_report_error(splitc_error_t code, const char *message);

/* ---- scalar read / write, get / put, store -------------------------------------
 * splitc_{read,write,get,put}_N (N = 1, 2, 4, 8 bytes) are inline: a local,
 * non-null, aligned access (the common case of a translated program touching
 * its own part of a spread array) is a plain load or store at the call site;
 * anything else calls the out-of-line splitc_*_N_slow, which serves remote
 * processors and reports every error (null pointer, processor out of range,
 * misalignment, address outside the global segment, null destination).  The
 * test below accepts exactly the pointers the out-of-line check accepts as
 * local, so no error goes unreported.  splitc_store_N stays out of line: a
 * local store must also count its bytes for store_sync, and that counter,
 * updated through memory after a store that may alias it, made the inline
 * version slower than the call (3.3 against 2.6 ns, docs/splitc.md).
 *
 *   read_N(g)          synchronous read          write_N(g, v)  synchronous write
 *   get_N(&l, g)       l := *g (done at sync)    put_N(g, v)    *g := v (done at sync)
 *   store_N(g, v)      *g :- v (counted at the target by store_sync/all_store_sync) */

/* The processor whose pointers may take the local fast path: MYPROC while the
 * runtime is up (and processor 0 for a job of one before splitc_init), -1 when
 * no pointer may (after splitc_finalize on processors other than 0). */
extern int splitc_rt_fast_proc;

/* Accesses through these types may alias any object (a float read as 4 bytes). */
typedef uint8_t __attribute__((__may_alias__)) splitc_alias_u1_;
typedef uint16_t __attribute__((__may_alias__)) splitc_alias_u2_;
typedef uint32_t __attribute__((__may_alias__)) splitc_alias_u4_;
typedef uint64_t __attribute__((__may_alias__)) splitc_alias_u8_;

SPLITC_INLINE_ int splitc_local_fast_(splitc_gptr_t g, uint64_t align) {
    uint64_t a = g.bits & SPLITC_ADDR_MASK;
    return (g.bits >> SPLITC_ADDR_BITS) == (uint64_t)(int64_t)splitc_rt_fast_proc && a != 0 && (a & (align - 1)) == 0;
}
#define SPLITC_LOCAL_ADDR_(g) ((uintptr_t)((g).bits & SPLITC_ADDR_MASK))

/* One definition per size: the out-of-line declarations and the inline fast
 * paths.  Local accesses are volatile, like the out-of-line ones, so a loop
 * polling a word that peers write keeps re-reading it. */
#define SPLITC_SCALAR_OPS_(N, T)                                                                                       \
    T splitc_read_##N##_slow(splitc_gptr_t g);                                                                         \
    void splitc_write_##N##_slow(splitc_gptr_t g, T v);                                                                \
    void splitc_get_##N##_slow(void *dst, splitc_gptr_t g);                                                            \
    void splitc_put_##N##_slow(splitc_gptr_t g, T v);                                                                  \
    void splitc_store_##N(splitc_gptr_t g, T v);                                                                       \
    SPLITC_INLINE_ T splitc_read_##N(splitc_gptr_t g) {                                                                \
        if (__builtin_expect(splitc_local_fast_(g, N), 1))                                                             \
            return *(const volatile splitc_alias_u##N##_ *)SPLITC_LOCAL_ADDR_(g);                                      \
        return splitc_read_##N##_slow(g);                                                                              \
    }                                                                                                                  \
    SPLITC_INLINE_ void splitc_write_##N(splitc_gptr_t g, T v) {                                                       \
        if (__builtin_expect(splitc_local_fast_(g, N), 1))                                                             \
            *(volatile splitc_alias_u##N##_ *)SPLITC_LOCAL_ADDR_(g) = v;                                               \
        else splitc_write_##N##_slow(g, v);                                                                            \
    }                                                                                                                  \
    SPLITC_INLINE_ void splitc_get_##N(void *dst, splitc_gptr_t g) {                                                   \
        if (__builtin_expect(dst != NULL && splitc_local_fast_(g, N), 1))                                              \
            __builtin_memcpy(dst, (const void *)SPLITC_LOCAL_ADDR_(g), N);                                             \
        else splitc_get_##N##_slow(dst, g);                                                                            \
    }                                                                                                                  \
    SPLITC_INLINE_ void splitc_put_##N(splitc_gptr_t g, T v) {                                                         \
        if (__builtin_expect(splitc_local_fast_(g, N), 1))                                                             \
            *(volatile splitc_alias_u##N##_ *)SPLITC_LOCAL_ADDR_(g) = v;                                               \
        else splitc_put_##N##_slow(g, v);                                                                              \
    }
SPLITC_SCALAR_OPS_(1, uint8_t)
SPLITC_SCALAR_OPS_(2, uint16_t)
SPLITC_SCALAR_OPS_(4, uint32_t)
SPLITC_SCALAR_OPS_(8, uint64_t)

/* ---- bulk (any size; also structs) ------------------------------------------------ */
void splitc_bulk_read(void *dst, splitc_gptr_t src, size_t nbytes);        /* blocking */
void splitc_bulk_write(splitc_gptr_t dst, const void *src, size_t nbytes); /* blocking */
/* Complete at splitc_sync(); dst is written until then. */
void splitc_bulk_get(void *dst, splitc_gptr_t src, size_t nbytes);
/* Complete at splitc_sync().  A src in global memory (the heap, static data)
 * must not change before then; any other src may be reused on return. */
void splitc_bulk_put(splitc_gptr_t dst, const void *src, size_t nbytes);
/* Complete at a store sync on the target; src may be reused on return. */
void splitc_bulk_store(splitc_gptr_t dst, const void *src, size_t nbytes);

/* ---- completion ------------------------------------------------------------------- */
/* Waits for every get/put (and bulk get/put) this processor issued. */
void splitc_sync(void);
/* Waits until nbytes of stores have arrived here since the last reset, then
 * subtracts nbytes from that count. */
void splitc_store_sync(size_t nbytes);
void splitc_reset_store_sync(void);
/* Bytes stored into this processor and not yet consumed by splitc_store_sync. */
int64_t splitc_store_bytes_arrived(void);
/* Collective: returns when every store issued anywhere before the call has
 * arrived (global bytes stored == bytes received); resets the store_sync count. */
void splitc_all_store_sync(void);
/* Serve incoming requests once (for long compute loops). */
void splitc_poll(void);

/* ---- memory ------------------------------------------------------------------------- */
/* Collective: nblocks blocks of blocksize bytes; block b lives on processor
 * b mod PROCS at the same local address on every processor (base + (b / PROCS) *
 * blocksize).  Returns a spread pointer to block 0 (processor 0). */
splitc_sptr_t splitc_all_spread_malloc(size_t nblocks, size_t blocksize);
/* Collective: frees what splitc_all_spread_malloc returned. */
void splitc_all_spread_free(splitc_sptr_t s);
/* Bytes of symmetric heap still free (largest block). */
size_t splitc_heap_available(void);
/* Size of the symmetric heap in bytes (SPLITC_HEAP_SIZE or the default). */
size_t splitc_heap_size(void);

/* Automatic spread arrays (`int histo[PROCS]::[k];` as a local variable).  A
 * translator brackets the block that declares them with
 *
 *     splitc_scope_t s __attribute__((cleanup(splitc_scope_leave))) = splitc_scope_enter();
 *     int *histo = splitc_scope_alloc(PROCS, k * sizeof(int), _Alignof(int));
 *
 * so the release runs on every way out of the block.  The arrays live on a
 * stack kept at the top of the symmetric heap, growing down; spread
 * allocations and static spread objects grow up from the bottom.
 *
 * splitc_scope_enter  local: remembers the stack top.
 * splitc_scope_alloc  collective: nblocks blocks of blocksize bytes laid out
 *                     like splitc_all_spread_malloc (block b on processor
 *                     b mod PROCS at base + (b / PROCS) * blocksize); returns
 *                     the local base, the same address on every processor.
 *                     Not zeroed (C automatic storage).  A deterministic bump
 *                     of the stack with no agreement round (set
 *                     SPLITC_CHECK_COLLECTIVES=1 to check the arguments with a
 *                     reduction); ends with one splitc_barrier(), so no peer
 *                     writes a block before its owner has entered the scope.
 *                     align: a power of two, 0 for the default (64).  Out of
 *                     space: SPLITC_ERR_NO_MEMORY, returns NULL.
 * splitc_scope_leave  local: pops the stack back to scope->mark.  Peers must be
 *                     done with this processor's blocks (a barrier before the
 *                     end of the block, as in Split-C). */
typedef struct splitc_scope {
    size_t mark;
} splitc_scope_t;
splitc_scope_t splitc_scope_enter(void);
void *splitc_scope_alloc(size_t nblocks, size_t blocksize, size_t align);
void splitc_scope_leave(splitc_scope_t *scope);

/* ---- collectives ----------------------------------------------------------------------- */
void splitc_barrier(void);
/* Reductions, one function per operation and type:
 *
 *   T splitc_all_reduce_to_one_OP_S(T v)   result defined on processor 0
 *                                          (returned everywhere)
 *   T splitc_all_reduce_to_all_OP_S(T v)   result on every processor
 *
 *   OP  add mul max min    for every S
 *       and or xor         for the integer S only
 *   S   i int, l long, u unsigned, ul unsigned long, f float, d double
 *
 * Values are combined on processor 0 in rank order, so floating-point results
 * are bit-identical on every processor and every run.  Integer add and mul
 * wrap like unsigned arithmetic of the type's width.  Older names kept:
 * splitc_all_reduce_to_{one,all}_{add,max,min} (long) and _{dadd,dmax,dmin}
 * (double).  Every processor must call the same functions in the same order;
 * a mismatch of operation or type is reported as SPLITC_ERR_COLLECTIVE_MISMATCH. */
#define SPLITC_FOR_INTEGER_TYPES_(X, A) X(A, i, int) X(A, l, long) X(A, u, unsigned) X(A, ul, unsigned long)
#define SPLITC_FOR_ALL_TYPES_(X, A) SPLITC_FOR_INTEGER_TYPES_(X, A) X(A, f, float) X(A, d, double)
/* X(OP, S, T) for every valid (operation, type) pair. */
/* A list of macro calls: clang-format cannot lay it out stably. */
/* clang-format off */
#define SPLITC_FOR_REDUCTIONS_(X)                                                                  \
    SPLITC_FOR_ALL_TYPES_(X, add) SPLITC_FOR_ALL_TYPES_(X, mul) SPLITC_FOR_ALL_TYPES_(X, max)      \
    SPLITC_FOR_ALL_TYPES_(X, min) SPLITC_FOR_INTEGER_TYPES_(X, and) SPLITC_FOR_INTEGER_TYPES_(X, or) \
    SPLITC_FOR_INTEGER_TYPES_(X, xor)
/* clang-format on */
#define SPLITC_DECLARE_REDUCTION_(OP, S, T)                                                                            \
    T splitc_all_reduce_to_one_##OP##_##S(T v);                                                                        \
    T splitc_all_reduce_to_all_##OP##_##S(T v);
SPLITC_FOR_REDUCTIONS_(SPLITC_DECLARE_REDUCTION_)

long splitc_all_reduce_to_one_add(long v);
long splitc_all_reduce_to_one_max(long v);
long splitc_all_reduce_to_one_min(long v);
double splitc_all_reduce_to_one_dadd(double v);
double splitc_all_reduce_to_one_dmax(double v);
double splitc_all_reduce_to_one_dmin(double v);
long splitc_all_reduce_to_all_add(long v);
long splitc_all_reduce_to_all_max(long v);
long splitc_all_reduce_to_all_min(long v);
double splitc_all_reduce_to_all_dadd(double v);
double splitc_all_reduce_to_all_dmax(double v);
double splitc_all_reduce_to_all_dmin(double v);

/* Broadcasts: processor 0's value, everywhere.  splitc_all_bcast_S(T) for
 * every S above; splitc_all_bcast (long) and splitc_all_bcast_d are the old
 * names; _p for local pointers (meaningful when processor 0's address is valid
 * everywhere, e.g. in the symmetric heap), _gptr for global pointers. */
#define SPLITC_DECLARE_BCAST_(A, S, T) T splitc_all_bcast_##S(T v);
SPLITC_FOR_ALL_TYPES_(SPLITC_DECLARE_BCAST_, _)
long splitc_all_bcast(long v);
void *splitc_all_bcast_p(void *v);
splitc_gptr_t splitc_all_bcast_gptr(splitc_gptr_t v);

/* Inclusive prefix sums in rank order: processor p gets v(0) + ... + v(p)
 * (doubles added left to right, so the result does not depend on timing). */
int splitc_all_scan_add_i(int v);
long splitc_all_scan_add_l(long v);
double splitc_all_scan_add_d(double v);
/* Wall-clock seconds (monotonic). */
double splitc_get_seconds(void);

/* ---- typed wrappers ---------------------------------------------------------------------- */
SPLITC_INLINE_ float splitc_read_f(splitc_gptr_t g) {
    uint32_t u = splitc_read_4(g);
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}
SPLITC_INLINE_ double splitc_read_d(splitc_gptr_t g) {
    uint64_t u = splitc_read_8(g);
    double d;
    __builtin_memcpy(&d, &u, 8);
    return d;
}
SPLITC_INLINE_ void splitc_write_f(splitc_gptr_t g, float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    splitc_write_4(g, u);
}
SPLITC_INLINE_ void splitc_write_d(splitc_gptr_t g, double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, 8);
    splitc_write_8(g, u);
}
SPLITC_INLINE_ void splitc_put_f(splitc_gptr_t g, float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    splitc_put_4(g, u);
}
SPLITC_INLINE_ void splitc_put_d(splitc_gptr_t g, double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, 8);
    splitc_put_8(g, u);
}
SPLITC_INLINE_ void splitc_store_f(splitc_gptr_t g, float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    splitc_store_4(g, u);
}
SPLITC_INLINE_ void splitc_store_d(splitc_gptr_t g, double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, 8);
    splitc_store_8(g, u);
}
/* Global pointers stored in global memory are 8-byte values. */
SPLITC_INLINE_ splitc_gptr_t splitc_read_gptr(splitc_gptr_t g) {
    splitc_gptr_t r;
    r.bits = splitc_read_8(g);
    return r;
}
SPLITC_INLINE_ void splitc_write_gptr(splitc_gptr_t g, splitc_gptr_t v) { splitc_write_8(g, v.bits); }
SPLITC_INLINE_ void splitc_put_gptr(splitc_gptr_t g, splitc_gptr_t v) { splitc_put_8(g, v.bits); }
SPLITC_INLINE_ void splitc_store_gptr(splitc_gptr_t g, splitc_gptr_t v) { splitc_store_8(g, v.bits); }
/* Structs of any size are bulk transfers. */
SPLITC_INLINE_ void splitc_read_struct(void *dst, splitc_gptr_t g, size_t n) { splitc_bulk_read(dst, g, n); }
SPLITC_INLINE_ void splitc_write_struct(splitc_gptr_t g, const void *src, size_t n) { splitc_bulk_write(g, src, n); }

/* ---- introspection ------------------------------------------------------------------------- */
/* Largest payload one message carries (bulk transfers above it are fragmented). */
size_t splitc_max_payload(void);
/* Bulk transfers of at least this many bytes go by RDMA straight between the
 * two processes' memory (SPLITC_RDMA_MIN, default 4 KiB); 0: never (off, or
 * a NIC without RDMA read at reliable delivery). */
size_t splitc_rdma_min(void);
/* Request credits per peer (k) and the store-acknowledge interval (k/2). */
int splitc_credits(void);
int splitc_store_ack_interval(void);

#ifdef __cplusplus
}
#endif
#endif /* SPLITC_RT_H */
