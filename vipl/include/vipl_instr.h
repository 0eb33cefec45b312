/*
 * vipl_instr.h - per-primitive overhead instrumentation, used by every layer.
 *
 * A counter names one primitive ("VipPostSend", "VipCQDone(recv)",
 * "firmware.send", "am.credit_wait", ...) and a category (the groups of the
 * overhead-breakdown tables: Base VI, Event Notification, Flow Control,
 * Semantics; plus Firmware and Other).  Each counter accumulates, per process,
 * the number of timed intervals and their total TSC cycles.
 *
 * Waiting is not overhead ([Begel01] §7.3 breaks down host overhead; the time
 * a host spends waiting for a message that has not arrived is latency).  Every
 * timed interval is measured on a per-thread overhead clock,
 * vipl_instr_clock() = TSC - the cycles this thread has spent waiting, so an
 * interval never includes a wait, however it nests.  Waits are declared where
 * they are known: the VIPL front declares a Done that finds nothing (the whole
 * call), and the part of a successful Done or Wait that ran before its
 * completion became visible, which a provider reports with
 * vipl_instr_arrived() (nicfw's cost model: the modelled time the NIC wrote
 * it).  The waits are counted on "vipl.wait (not arrived)" (category Waiting).
 *
 * NIC work is not host overhead either, where a provider emulates a NIC on the
 * host's threads but models the NIC's time apart (nicfw's inline firmware
 * under a hardware-cost profile: the modelled NIC ran its own firmware, and
 * its time is charged on the model's NIC timeline).  The provider brackets
 * that work with vipl_instr_offload_begin/end; it is left off the overhead
 * clock like a wait, and counted on a Firmware counter.
 *
 * Switches:
 *   compile time  VIASTACK_INSTR_COMPILED (CMake option VIASTACK_INSTR); when 0
 *                 every macro below expands to nothing.
 *   run time      VIASTACK_INSTR=1 in the environment (or vipl_instr_enable(1)).
 *                 When off, a timed scope costs one predictable branch on a global.
 *   dump at exit  VIASTACK_INSTR_DUMP=path.json ("%r" in the path becomes the rank)
 *
 * The host-CPU model (docs/cost-model.md, "The host CPU").  A provider
 * whose cost model emulates an older host (nicfw's lanai7 profile: a 550 MHz
 * Pentium III) turns it on with vipl_host_model_set().  Then the same timed
 * scopes, whether or not instrumentation is on, stretch the layers' own
 * software: at the end of every scope of a layer above VIPL, its self time
 * (what it ran outside nested scopes; VIPL calls are nested provider scopes)
 * is spun once more times (slowdown - 1), and the first Flow Control or
 * Semantics scopes after a message was handed over pay the uncached reads of
 * its lines (vipl_host_received).  Provider scopes (the VIPL front) close with
 * VIPL_INSTR_PROVIDER_END: they nest but are never stretched, their hardware
 * being modelled by the provider itself.  A scope whose END is conditional
 * (a poll that found nothing is not counted) closes with the _IF form, so
 * its time still nests.  Off, a scope is one branch on vipl_instr_timing.
 *
 * Usage (C):
 *   VIPL_INSTR_DEFINE(c_post, "VipPostSend", VIPL_INSTR_BASE_VI);
 *   VIPL_INSTR_BEGIN(t);  ... work ...  VIPL_INSTR_END(c_post, t);
 * Usage (C++):
 *   VIPL_INSTR_SCOPE("am.credit_wait", VIPL_INSTR_FLOW_CONTROL);
 */
#ifndef VIPL_INSTR_H
#define VIPL_INSTR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifndef VIASTACK_INSTR_COMPILED
#define VIASTACK_INSTR_COMPILED 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    VIPL_INSTR_BASE_VI = 0,      /* VipPostSend, VipSendDone, VipRecvDone, VipPostRecv */
    VIPL_INSTR_EVENT = 1,        /* VipCQDone(send/recv), waits */
    VIPL_INSTR_FLOW_CONTROL = 2, /* credits, descriptor recycling, send bookkeeping */
    VIPL_INSTR_SEMANTICS = 3,    /* build descriptors, copy data, run handlers */
    VIPL_INSTR_FIRMWARE = 4,     /* NIC firmware phases (not host overhead) */
    VIPL_INSTR_OTHER = 5,
    VIPL_INSTR_WAIT = 6, /* waiting for what has not arrived (not host overhead) */
    VIPL_INSTR_NCATEGORIES = 7
} vipl_instr_category;

typedef struct vipl_instr_counter {
    const char *name;
    int category;
    int registered;  /* set once the counter is on the process list */
    uint64_t count;  /* intervals timed */
    uint64_t cycles; /* total TSC cycles */
    struct vipl_instr_counter *next;
} vipl_instr_counter;

/* A read-out of one counter. */
typedef struct {
    const char *name;
    int category;
    uint64_t count;
    uint64_t cycles;
    double ns; /* cycles converted with the calibrated TSC rate */
} vipl_instr_sample;

extern int vipl_instr_on; /* the runtime switch; read it through vipl_instr_enabled() */
/* Instrumentation or the host-CPU model on: timed scopes read the clock. */
extern int vipl_instr_timing;
/* The host-CPU model is on (vipl_host_model_set). */
extern int vipl_host_on;

static inline int vipl_instr_enabled(void) { return __builtin_expect(vipl_instr_on, 0); }

static inline uint64_t vipl_instr_now(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}

/* Cycles this thread has spent waiting (see the top); only grows, only while enabled. */
extern __thread uint64_t vipl_instr_waited;
/* The overhead clock every timed interval is measured on. */
static inline uint64_t vipl_instr_clock(void) { return vipl_instr_now() - vipl_instr_waited; }

/* Another processor's work run on this thread (see "NIC work" at the top):
 * the cycles this thread has spent in offload sections.  They are part of
 * vipl_instr_waited as well (the overhead clock leaves them out); kept apart
 * so that a Done call can tell them from the part of itself that waited. */
extern __thread uint64_t vipl_instr_offloaded;
/* Brackets an offload section (nestable: the outermost counts); its time goes
 * on the counter "vipl.nic work (inline firmware)" (category Firmware) and
 * off the overhead clock.  Call only with instrumentation on, and end what
 * was begun. */
void vipl_instr_offload_begin(void);
void vipl_instr_offload_end(void);

void vipl_instr_register(vipl_instr_counter *c);
static inline void vipl_instr_add(vipl_instr_counter *c, uint64_t cycles) {
    if (__builtin_expect(!c->registered, 0)) vipl_instr_register(c);
    __atomic_fetch_add(&c->count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->cycles, cycles, __ATOMIC_RELAXED);
}

/* This thread waited `cycles` (TSC) for something that had not arrived. */
void vipl_instr_wait(uint64_t cycles);
/* A provider made a completion visible to this thread: `key` names what
 * completed (the VIP_DESCRIPTOR*, or the provider's vipl::prov::Cq* for a CQ
 * entry), `at` (TSC) is when it arrived, `seen` when the host's check that
 * finds it began (its cost from then on is overhead).  Kept in a small
 * per-thread ring (the last 16). */
void vipl_instr_arrived(const void *key, uint64_t at, uint64_t seen);
/* The oldest remembered arrival of `key` (removed): 1, or 0 if none. */
int vipl_instr_take_arrival(const void *key, uint64_t *at, uint64_t *seen);
/* A VIPL call that began at overhead-clock time `t` returned `key` (rc: found
 * or not): declares the call's waiting part.  Only with instrumentation on.
 * `offloaded0` is vipl_instr_offloaded at the call's start: the offload
 * sections the call ran are neither overhead nor waiting, and are not
 * declared twice.  vipl_instr_call_waited assumes the call ran none. */
void vipl_instr_call_waited_since(uint64_t t, uint64_t offloaded0, const void *key, int found);
void vipl_instr_call_waited(uint64_t t, const void *key, int found);

/* ---- the host-CPU model (see the top; docs/cost-model.md) ---- */
typedef struct vipl_host_model {
    double slowdown;     /* >= 1: the modelled host's time per unit of this host's time in layer code */
    double max_self_ns;  /* a scope's self time above this is a preemption, not software: not stretched */
    uint32_t line_bytes; /* a received message is read in lines of this size ... */
    uint32_t line_ns;    /* ... each an uncached read (the NIC wrote it by DMA) */
    /* For tests: the model's clock and spin, in the model's "cycles"
     * (NULL: the TSC, busy-waited), and cycles per ns (0: the calibrated TSC rate). */
    uint64_t (*now)(void *ctx);
    void (*spin)(void *ctx, uint64_t cycles);
    void *ctx;
    double cycles_per_ns;
} vipl_host_model;
/* What the host-CPU model has charged, process-wide (since it was set). */
typedef struct {
    uint64_t scopes;         /* layer scopes stretched */
    uint64_t stretch_cycles; /* ... by this much in total */
    uint64_t skipped;        /* layer scopes too long to be software (max_self_ns) */
    uint64_t lines;          /* received-message lines read uncached */
    uint64_t line_cycles;    /* ... costing this much */
    double empty_cycles;     /* calibrated self time of an empty scope, not stretched */
    double nest_cycles;      /* calibrated time a nested scope leaks into its parent's self time */
} vipl_host_stats;
/* Turns the model on with *m (copied; calibrates the scopes' own cost), or
 * off with NULL.  Returns 0, or -1 for bad parameters (slowdown < 1,
 * line_ns without line_bytes). */
int vipl_host_model_set(const vipl_host_model *m);
void vipl_host_model_stats(vipl_host_stats *out);
/* A provider handed a message of `bytes` the NIC wrote by DMA to this thread:
 * the layer's next Flow Control / Semantics scopes read it (its first line,
 * then the rest).  Replaces what this thread had not read yet.  No-op off. */
void vipl_host_received(uint32_t bytes);
/* Scope internals (the macros below): begin returns the scope's start on the
 * overhead clock; end closes the scope begun at t, stretches it if it is a
 * layer's, and adds it to c if `counted` (and instrumentation is on). */
enum { VIPL_SCOPE_LAYER = 0, VIPL_SCOPE_PROVIDER = 1 };
uint64_t vipl_host_begin(void);
void vipl_host_end(vipl_instr_counter *c, uint64_t t, int counted, int kind);

static inline uint64_t vipl_instr_begin_(void) { return vipl_host_on ? vipl_host_begin() : vipl_instr_clock(); }
static inline void vipl_instr_end_(vipl_instr_counter *c, uint64_t t, int counted, int kind) {
    if (vipl_host_on) vipl_host_end(c, t, counted, kind);
    else if (counted && c && vipl_instr_enabled() && t) vipl_instr_add(c, vipl_instr_clock() - t);
}

void vipl_instr_enable(int on);
void vipl_instr_reset(void);                        /* zero every counter */
double vipl_instr_cycles_per_ns(void);              /* TSC rate, calibrated once */
const char *vipl_instr_category_name(int category); /* "Base VI", "Event Notification", ... */
/* Copies up to max samples (sorted by category, then name); returns the total number. */
size_t vipl_instr_snapshot(vipl_instr_sample *out, size_t max);
/* Looks one counter up by name; returns 0 and fills *out, or -1. */
int vipl_instr_find(const char *name, vipl_instr_sample *out);
void vipl_instr_print_table(FILE *f);       /* human-readable table, grouped by category */
int vipl_instr_dump_json(const char *path); /* machine-readable; 0 on success */

#if VIASTACK_INSTR_COMPILED
#define VIPL_INSTR_DEFINE(var, name, cat) static vipl_instr_counter var = {name, cat, 0, 0, 0, 0}
#define VIPL_INSTR_BEGIN(t) uint64_t t = __builtin_expect(vipl_instr_timing, 0) ? vipl_instr_begin_() : 0
#define VIPL_INSTR_END(var, t) VIPL_INSTR_END_IF(var, t, 1)
/* Closes the scope always; counts it on var only if `counted`. */
#define VIPL_INSTR_END_IF(var, t, counted)                                                                             \
    do {                                                                                                               \
        if (__builtin_expect(vipl_instr_timing, 0)) vipl_instr_end_(&(var), (t), (counted), VIPL_SCOPE_LAYER);         \
    } while (0)
/* The VIPL front's scopes: the provider's time, never stretched by the host-CPU model. */
#define VIPL_INSTR_PROVIDER_END_IF(var, t, counted)                                                                    \
    do {                                                                                                               \
        if (__builtin_expect(vipl_instr_timing, 0)) vipl_instr_end_(&(var), (t), (counted), VIPL_SCOPE_PROVIDER);      \
    } while (0)
#define VIPL_INSTR_PROVIDER_END(var, t) VIPL_INSTR_PROVIDER_END_IF(var, t, 1)
/* A Done/Wait call begun at t returned key (found) or nothing: declare its waiting part. */
#define VIPL_INSTR_WAITED(t, key, found)                                                                               \
    do {                                                                                                               \
        if (vipl_instr_enabled() && (t)) vipl_instr_call_waited((t), (key), (found));                                  \
    } while (0)
/* The same for a call that may run offload sections (the VIPL front's Done and
 * Wait calls): begin it with VIPL_INSTR_CALL_BEGIN(t), declare with this. */
#define VIPL_INSTR_CALL_BEGIN(t)                                                                                       \
    VIPL_INSTR_BEGIN(t);                                                                                               \
    const uint64_t t##_off_ = t ? vipl_instr_offloaded : 0
#define VIPL_INSTR_CALL_WAITED(t, key, found)                                                                          \
    do {                                                                                                               \
        if (vipl_instr_enabled() && (t)) vipl_instr_call_waited_since((t), t##_off_, (key), (found));                  \
    } while (0)
#else
#define VIPL_INSTR_DEFINE(var, name, cat) static const int var##_unused_ = 0
#define VIPL_INSTR_BEGIN(t)                                                                                            \
    do {                                                                                                               \
    } while (0)
#define VIPL_INSTR_END(var, t)                                                                                         \
    do {                                                                                                               \
    } while (0)
#define VIPL_INSTR_END_IF(var, t, counted)                                                                             \
    do {                                                                                                               \
    } while (0)
#define VIPL_INSTR_PROVIDER_END_IF(var, t, counted)                                                                    \
    do {                                                                                                               \
    } while (0)
#define VIPL_INSTR_PROVIDER_END(var, t)                                                                                \
    do {                                                                                                               \
    } while (0)
#define VIPL_INSTR_WAITED(t, key, found)                                                                               \
    do {                                                                                                               \
    } while (0)
#define VIPL_INSTR_CALL_BEGIN(t)                                                                                       \
    do {                                                                                                               \
    } while (0)
#define VIPL_INSTR_CALL_WAITED(t, key, found)                                                                          \
    do {                                                                                                               \
    } while (0)
#endif

#ifdef __cplusplus
} /* extern "C" */

/* Not `namespace vipl::instr`: the header is public and compiles as C++11. */
namespace vipl {
namespace instr {
/* RAII timed scope: starts on construction, adds on destruction. */
class Scope {
public:
    explicit Scope(vipl_instr_counter &c) noexcept
        : c_(c), t0_(__builtin_expect(vipl_instr_timing, 0) ? vipl_instr_begin_() : 0) {}
    ~Scope() {
        if (__builtin_expect(vipl_instr_timing, 0)) vipl_instr_end_(&c_, t0_, 1, VIPL_SCOPE_LAYER);
    }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

private:
    vipl_instr_counter &c_;
    uint64_t t0_;
};
}
} // namespace vipl::instr

#if VIASTACK_INSTR_COMPILED
#define VIPL_INSTR_CAT2_(a, b) a##b
#define VIPL_INSTR_CAT_(a, b) VIPL_INSTR_CAT2_(a, b)
#define VIPL_INSTR_SCOPE(name, cat)                                                                                    \
    static vipl_instr_counter VIPL_INSTR_CAT_(vipl_instr_c_, __LINE__) = {name, cat, 0, 0, 0, 0};                      \
    ::vipl::instr::Scope VIPL_INSTR_CAT_(vipl_instr_s_, __LINE__)(VIPL_INSTR_CAT_(vipl_instr_c_, __LINE__))
#else
#define VIPL_INSTR_SCOPE(name, cat)                                                                                    \
    do {                                                                                                               \
    } while (0)
#endif
#endif /* __cplusplus */

#endif /* VIPL_INSTR_H */
