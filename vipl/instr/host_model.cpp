// host_model.cpp - the host-CPU model behind vipl_instr.h's timed scopes
// (docs/cost-model.md, "The host CPU").
//
// Why here: the layers above VIPL (AM, Split-C, FM, the channel) already mark
// their own software with timed scopes, the only hooks they have besides
// vipl.h.  When a provider's cost model emulates a slower host, those scopes
// stretch what the layer's code spent by the modelled host's slowdown, spun on
// the calling thread where the code ran - with instrumentation off as well, so
// that RTT/2 and o_s see it and not only the breakdown tables.
//
// What a scope is charged is its *self* time: from its begin to its end, less
// the nested scopes that completed meanwhile (a VIPL call inside a layer's
// scope is a provider scope: its time is the modelled hardware's and the
// emulator's, and must not be stretched).  Each thread keeps a small stack of
// open scopes keyed by their start; a scope that never ends (an early return
// on an error path) is popped when an enclosing scope ends, or dropped when
// the stack is full.  The scopes' own cost (two clock reads, the stack) is
// calibrated when the model is set and left out of the self time.
#include "vipl_instr.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

extern "C" {
int vipl_instr_timing = 0;
int vipl_host_on = 0;
}

namespace {

struct Model {
    vipl_host_model m{};
    double stretch = 0;         // slowdown - 1
    uint64_t max_self = 0;      // cycles
    uint64_t line_cycles = 0;   // one received line
    double empty = 0, nest = 0; // calibrated scope cost (cycles)
};
Model g_model;

std::atomic<uint64_t> g_scopes{0}, g_stretch{0}, g_skipped{0}, g_lines{0}, g_line_cycles{0};

struct Open {
    uint64_t key;      // the scope's start on the overhead clock (what BEGIN returned)
    uint64_t h0;       // its start on the model's clock
    uint64_t nested0;  // t_nested when it began
    uint32_t children; // scopes that ended inside it
};
constexpr int kDepth = 32;
__thread Open t_open[kDepth];
__thread int t_depth = 0;
__thread uint64_t t_nested = 0;                                // model-clock time of the completed scopes at this level
__thread uint32_t t_owe_lines_first = 0, t_owe_lines_rest = 0; // a received message not read yet
__thread double t_last_raw = 0;                                // the last closed scope's self time (calibration)

inline uint64_t now() {
    const vipl_host_model &m = g_model.m;
    return m.now ? m.now(m.ctx) : vipl_instr_now();
}

inline void spin(uint64_t cycles) {
    if (!cycles) return;
    const vipl_host_model &m = g_model.m;
    if (m.spin) {
        m.spin(m.ctx, cycles);
        return;
    }
    const uint64_t end = vipl_instr_now() + cycles;
    while (vipl_instr_now() < end) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

void set_timing() {
    __atomic_store_n(&vipl_instr_timing, (__atomic_load_n(&vipl_instr_on, __ATOMIC_RELAXED) || vipl_host_on) ? 1 : 0,
                     __ATOMIC_RELAXED);
}

// Pays what a layer's message processing reads of a received message: the
// first line in the first Flow Control / Semantics scope after the hand-over
// (the header, which every layer reads first), the rest in the next one.
uint64_t read_lines() {
    uint32_t n = 0;
    if (t_owe_lines_first) {
        n = t_owe_lines_first;
        t_owe_lines_first = 0;
    } else if (t_owe_lines_rest) {
        n = t_owe_lines_rest;
        t_owe_lines_rest = 0;
    }
    if (!n) return 0;
    const uint64_t c = uint64_t(n) * g_model.line_cycles;
    g_lines.fetch_add(n, std::memory_order_relaxed);
    g_line_cycles.fetch_add(c, std::memory_order_relaxed);
    return c;
}

int find(uint64_t key) {
    for (int i = t_depth - 1; i >= 0; --i)
        if (t_open[i].key == key) return i;
    return -1;
}

} // namespace

extern "C" {

uint64_t vipl_host_begin(void) {
    const uint64_t tsc = vipl_instr_now(); // one clock read serves both clocks (unless a test's)
    const uint64_t h0 = g_model.m.now ? now() : tsc;
    if (t_depth == kDepth) { // abandoned scopes (early returns): drop the oldest half
        std::memmove(t_open, t_open + kDepth / 2, sizeof(Open) * (kDepth / 2));
        t_depth = kDepth / 2;
    }
    uint64_t key = tsc - vipl_instr_waited;                                           // vipl_instr_clock() at tsc
    if (t_depth && t_open[t_depth - 1].key >= key) key = t_open[t_depth - 1].key + 1; // unique, increasing
    t_open[t_depth++] = Open{key, h0, t_nested, 0};
    return key;
}

void vipl_host_end(vipl_instr_counter *c, uint64_t t, int counted, int kind) {
    const uint64_t tsc1 = vipl_instr_now();
    const uint64_t h1 = g_model.m.now ? now() : tsc1;
    const int i = t ? find(t) : -1;
    if (i < 0) { // begun before the model was on (or dropped): only count it
        if (counted && c && vipl_instr_enabled() && t) vipl_instr_add(c, vipl_instr_clock() - t);
        return;
    }
    const Open o = t_open[i];
    t_depth = i; // pops it, and any scope begun inside it that never ended
    const Model &g = g_model;
    const int cat = c ? c->category : VIPL_INSTR_OTHER;
    uint64_t charge = 0;
    const double raw = double(h1 - o.h0) - double(t_nested - o.nested0) - g.empty - g.nest * o.children;
    t_last_raw = raw;
    if (kind == VIPL_SCOPE_LAYER && cat != VIPL_INSTR_FIRMWARE && cat != VIPL_INSTR_WAIT) {
        const uint64_t self = raw > 0 ? uint64_t(raw) : 0;
        if (self > g.max_self) {
            g_skipped.fetch_add(1, std::memory_order_relaxed);
        } else if (g.stretch > 0) {
            charge = uint64_t(std::llround(double(self) * g.stretch));
            g_scopes.fetch_add(1, std::memory_order_relaxed);
            g_stretch.fetch_add(charge, std::memory_order_relaxed);
        }
        if (cat == VIPL_INSTR_FLOW_CONTROL || cat == VIPL_INSTR_SEMANTICS) charge += read_lines();
        spin(charge);
    }
    if (counted && c && vipl_instr_enabled())
        vipl_instr_add(c, (charge ? vipl_instr_clock() : tsc1 - vipl_instr_waited) - t);
    // To the enclosing scope, all of this one (its charge included) is nested time.
    t_nested = o.nested0 + (now() - o.h0);
    if (t_depth) t_open[t_depth - 1].children++;
}

void vipl_host_received(uint32_t bytes) {
    if (!vipl_host_on || !g_model.line_cycles || !bytes) return;
    const uint32_t lines = (bytes + g_model.m.line_bytes - 1) / g_model.m.line_bytes;
    t_owe_lines_first = 1;
    t_owe_lines_rest = lines - 1;
}

int vipl_host_model_set(const vipl_host_model *m) {
    if (!m) {
        __atomic_store_n(&vipl_host_on, 0, __ATOMIC_RELAXED);
        set_timing();
        return 0;
    }
    if (!(m->slowdown >= 1.0) || !std::isfinite(m->slowdown) || (m->line_ns && !m->line_bytes) || !(m->max_self_ns > 0))
        return -1;
    __atomic_store_n(&vipl_host_on, 0, __ATOMIC_RELAXED);
    Model g;
    g.m = *m;
    const double cpn = m->cycles_per_ns > 0 ? m->cycles_per_ns : vipl_instr_cycles_per_ns();
    g.m.cycles_per_ns = cpn;
    g.stretch = m->slowdown - 1.0;
    g.max_self = uint64_t(m->max_self_ns * cpn);
    g.line_cycles = uint64_t(std::llround(double(m->line_ns) * cpn));
    // Calibration: the self time of an empty layer scope, and what a nested
    // empty scope adds to its parent's, with nothing stretched meanwhile.
    Model cal = g;
    cal.stretch = 0;
    cal.line_cycles = 0;
    cal.max_self = ~0ull;
    g_model = cal;
    const int saved_depth = t_depth;
    const uint64_t saved_nested = t_nested;
    auto self_of = [](int children) {
        const uint64_t t = vipl_host_begin();
        for (int k = 0; k < children; ++k) vipl_host_end(nullptr, vipl_host_begin(), 0, VIPL_SCOPE_PROVIDER);
        vipl_host_end(nullptr, t, 0, VIPL_SCOPE_PROVIDER);
        return t_last_raw;
    };
    std::vector<double> empty, nest;
    for (int r = 0; r < 301; ++r) {
        empty.push_back(self_of(0));
        nest.push_back(self_of(4));
    }
    std::nth_element(empty.begin(), empty.begin() + 150, empty.end());
    std::nth_element(nest.begin(), nest.begin() + 150, nest.end());
    t_depth = saved_depth;
    t_nested = saved_nested;
    g.empty = std::max(0.0, empty[150]);
    g.nest = std::max(0.0, (nest[150] - empty[150]) / 4);
    g_model = g;
    g_scopes = 0;
    g_stretch = 0;
    g_skipped = 0;
    g_lines = 0;
    g_line_cycles = 0;
    __atomic_store_n(&vipl_host_on, 1, __ATOMIC_RELEASE);
    set_timing();
    return 0;
}

void vipl_host_model_stats(vipl_host_stats *out) {
    out->scopes = g_scopes.load(std::memory_order_relaxed);
    out->stretch_cycles = g_stretch.load(std::memory_order_relaxed);
    out->skipped = g_skipped.load(std::memory_order_relaxed);
    out->lines = g_lines.load(std::memory_order_relaxed);
    out->line_cycles = g_line_cycles.load(std::memory_order_relaxed);
    out->empty_cycles = g_model.empty;
    out->nest_cycles = g_model.nest;
}

} // extern "C"
