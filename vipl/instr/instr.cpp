// instr.cpp - the process-wide registry behind vipl_instr.h.
//
// Design (why it looks like this):
//  * Counters are static structs owned by the code that times something.  The
//    first add on a counter links it onto one process list under a mutex; every
//    later add is two relaxed atomic adds and never touches the registry.
//  * The runtime switch is a plain int read on every timed scope, so it is set
//    once by a static initializer from VIASTACK_INSTR (and by vipl_instr_enable).
//  * TSC cycles are converted to ns with a rate measured once, lazily, against
//    CLOCK_MONOTONIC (VIASTACK_TSC_GHZ overrides it, e.g. on a VM with an
//    unstable TSC or for reproducible tests).
//  * Counters that share a name (the same primitive timed from two translation
//    units, or a scope in a header) are reported as one primitive: snapshot,
//    find, the table and the JSON dump sum them.
#include "vipl_instr.h"
#include "viastack_log.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

extern "C" {
int vipl_instr_on = 0;
__thread uint64_t vipl_instr_waited = 0;
__thread uint64_t vipl_instr_offloaded = 0;
}

namespace {

std::mutex g_registry_mutex;          // guards g_head and linking
vipl_instr_counter *g_head = nullptr; // process list of registered counters

std::once_flag g_calibrate_once;
double g_cycles_per_ns = 1.0;

const char *const kCategoryNames[VIPL_INSTR_NCATEGORIES] = {
    "Base VI", "Event Notification", "Flow Control", "Semantics", "Firmware", "Other", "Waiting"};

// Waits (vipl_instr.h): their counter, and the per-thread ring of the
// completions a provider made visible (what, when it arrived, from when the
// host's check that found it counts as overhead).
vipl_instr_counter g_wait = {"vipl.wait (not arrived)", VIPL_INSTR_WAIT, 0, 0, 0, 0};
constexpr unsigned kArrivals = 16;
struct Arrival {
    const void *key;
    uint64_t at, seen;
    uint64_t offloaded; // vipl_instr_offloaded as it stood at `seen`
};
__thread Arrival t_arrivals[kArrivals];
__thread unsigned t_arrival_next = 0;

// Offload sections (vipl_instr.h, "NIC work"): their counter, and this
// thread's open section (depth, TSC at its start).
vipl_instr_counter g_offload = {"vipl.nic work (inline firmware)", VIPL_INSTR_FIRMWARE, 0, 0, 0, 0};
__thread int t_off_depth = 0;
__thread uint64_t t_off_start = 0;

// vipl_instr_offloaded as it stood at TSC time `tsc`, as far as this thread
// knows it: inside an open section, the part of it before `tsc` counts too.
uint64_t offloaded_at(uint64_t tsc) {
    if (t_off_depth && tsc > t_off_start) return vipl_instr_offloaded + (tsc - t_off_start);
    return vipl_instr_offloaded;
}

uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Returns the TSC rate in cycles per ns, or 0 when no usable rate is found.
double measure_cycles_per_ns() {
    if (const char *s = std::getenv("VIASTACK_TSC_GHZ"); s && *s) {
        char *end = nullptr;
        double v = std::strtod(s, &end);
        if (end != s && *end == '\0' && v > 0 && v < 1000) return v;
        viastack::log::warn(viastack::log::Layer::vipl,
                            "instr: ignoring VIASTACK_TSC_GHZ={} (want a positive number of GHz, e.g. 2.4)", s);
    }
#if defined(__aarch64__)
    uint64_t freq;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(freq));
    if (freq) return double(freq) / 1e9;
#endif
    // Three 5 ms windows; keep the median rate.  Each end point brackets the
    // TSC read between two clock reads so a preemption there shows up as a
    // wide bracket and that sample is simply one of the three.
    double rates[3];
    for (double &rate : rates) {
        uint64_t a0 = monotonic_ns();
        uint64_t c0 = vipl_instr_now();
        uint64_t b0 = monotonic_ns();
        uint64_t a1, c1, b1;
        do {
            a1 = monotonic_ns();
            c1 = vipl_instr_now();
            b1 = monotonic_ns();
        } while (a1 - a0 < 5000000);
        double ns = double(a1 + b1) / 2 - double(a0 + b0) / 2;
        rate = ns > 0 ? double(c1 - c0) / ns : 0;
    }
    std::sort(rates, rates + 3);
    return rates[1];
}

struct Merged {
    const char *name; // the first counter's own static string: outlives any snapshot
    int category;
    uint64_t count;
    uint64_t cycles;
};

// Sums same-name counters; sorted by category, then name.
std::vector<Merged> collect() {
    std::map<std::pair<int, std::string_view>, Merged> by_key;
    {
        std::lock_guard<std::mutex> lock(g_registry_mutex);
        for (vipl_instr_counter *c = g_head; c; c = c->next) {
            int cat = (c->category >= 0 && c->category < VIPL_INSTR_NCATEGORIES) ? c->category : VIPL_INSTR_OTHER;
            const char *name = c->name ? c->name : "(unnamed)";
            auto [it, fresh] = by_key.try_emplace({cat, name}, Merged{name, cat, 0, 0});
            it->second.count += __atomic_load_n(&c->count, __ATOMIC_RELAXED);
            it->second.cycles += __atomic_load_n(&c->cycles, __ATOMIC_RELAXED);
        }
    }
    std::vector<Merged> out;
    out.reserve(by_key.size());
    for (auto &kv : by_key) out.push_back(std::move(kv.second));
    return out;
}

int env_rank() {
    const char *r = std::getenv("VIASTACK_RANK");
    if (!r || !*r) return 0; // a process started without a launcher is rank 0 of 1
    char *end = nullptr;
    long v = std::strtol(r, &end, 10);
    return (end != r && *end == '\0' && v >= 0) ? int(v) : 0;
}

std::string expand_rank(const char *path) {
    std::string out;
    for (const char *p = path; *p; ++p) {
        if (p[0] == '%' && p[1] == 'r') {
            out += std::to_string(env_rank());
            ++p;
        } else {
            out += *p;
        }
    }
    return out;
}

void dump_at_exit() {
    const char *path = std::getenv("VIASTACK_INSTR_DUMP");
    if (!path || !*path) return;
    if (vipl_instr_dump_json(path) != 0)
        viastack::log::error(viastack::log::Layer::vipl, "instr: could not write VIASTACK_INSTR_DUMP={}: {}", path,
                             std::strerror(errno));
}

// Start-up: the runtime switch and the exit-time dump.
struct StartUp {
    StartUp() {
        if (const char *on = std::getenv("VIASTACK_INSTR"); on && *on && std::strcmp(on, "0") != 0)
            vipl_instr_on = vipl_instr_timing = 1;
        if (const char *path = std::getenv("VIASTACK_INSTR_DUMP"); path && *path) std::atexit(dump_at_exit);
    }
} g_start_up;

} // namespace

extern "C" {

void vipl_instr_register(vipl_instr_counter *c) {
    if (!c) return;
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    if (__atomic_load_n(&c->registered, __ATOMIC_ACQUIRE)) return; // another thread won
    c->next = g_head;
    g_head = c;
    __atomic_store_n(&c->registered, 1, __ATOMIC_RELEASE);
}

void vipl_instr_wait(uint64_t cycles) {
    if (!cycles) return;
    vipl_instr_waited += cycles;
    vipl_instr_add(&g_wait, cycles);
}

void vipl_instr_arrived(const void *key, uint64_t at, uint64_t seen) {
    t_arrivals[t_arrival_next++ % kArrivals] = Arrival{key, at, seen, offloaded_at(seen)};
}

void vipl_instr_offload_begin(void) {
    if (t_off_depth++ == 0) t_off_start = vipl_instr_now();
}

void vipl_instr_offload_end(void) {
    if (t_off_depth == 0 || --t_off_depth != 0) return;
    const uint64_t now = vipl_instr_now();
    if (now <= t_off_start) return;
    const uint64_t cycles = now - t_off_start;
    vipl_instr_offloaded += cycles;
    vipl_instr_waited += cycles; // off the overhead clock
    vipl_instr_add(&g_offload, cycles);
}

namespace {
int take_arrival(const void *key, uint64_t *at, uint64_t *seen, uint64_t *offloaded) {
    // Oldest first: a CQ's entries are taken in the order they arrived.
    for (unsigned i = 0; i < kArrivals; ++i) {
        Arrival &a = t_arrivals[(t_arrival_next + i) % kArrivals];
        if (a.key == key && a.at) {
            *at = a.at;
            *seen = a.seen;
            *offloaded = a.offloaded;
            a = Arrival{nullptr, 0, 0, 0};
            return 1;
        }
    }
    return 0;
}
} // namespace

int vipl_instr_take_arrival(const void *key, uint64_t *at, uint64_t *seen) {
    uint64_t offloaded;
    return take_arrival(key, at, seen, &offloaded);
}

void vipl_instr_call_waited(uint64_t t, const void *key, int found) {
    vipl_instr_call_waited_since(t, vipl_instr_offloaded, key, found);
}

void vipl_instr_call_waited_since(uint64_t t, uint64_t offloaded0, const void *key, int found) {
    // t is on the overhead clock: back to TSC time at the call's start (the
    // call declared no wait yet, but its offload sections moved the clock).
    const uint64_t now = vipl_instr_now();
    const uint64_t off = vipl_instr_offloaded >= offloaded0 ? vipl_instr_offloaded - offloaded0 : 0;
    const uint64_t start = t + vipl_instr_waited - off;
    // The part of [start, end) that was neither overhead nor NIC work.
    auto declare = [&](uint64_t end, uint64_t off_in) {
        if (end > start && end - start > off_in) vipl_instr_wait(end - start - off_in);
    };
    if (now <= start) return;
    if (!found) {
        declare(now, off); // nothing had arrived: all of it
        return;
    }
    // Arrived after the call began: the call waited until the host's check
    // that saw it (anything before - spinning, or the thread not running -
    // is waiting; the check itself and what follows are overhead).  NIC work
    // the call ran before that check is neither.
    uint64_t at, seen, seen_off = 0;
    if (take_arrival(key, &at, &seen, &seen_off) && at > start && seen > start)
        declare(seen < now ? seen : now, seen_off > offloaded0 ? seen_off - offloaded0 : 0);
}

void vipl_instr_enable(int on) {
    __atomic_store_n(&vipl_instr_on, on ? 1 : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&vipl_instr_timing, (on || __atomic_load_n(&vipl_host_on, __ATOMIC_RELAXED)) ? 1 : 0,
                     __ATOMIC_RELAXED);
}

void vipl_instr_reset(void) {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    for (vipl_instr_counter *c = g_head; c; c = c->next) {
        __atomic_store_n(&c->count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&c->cycles, 0, __ATOMIC_RELAXED);
    }
}

double vipl_instr_cycles_per_ns(void) {
    std::call_once(g_calibrate_once, [] {
        double r = measure_cycles_per_ns();
        if (r > 0) g_cycles_per_ns = r;
    });
    return g_cycles_per_ns;
}

const char *vipl_instr_category_name(int category) {
    if (category < 0 || category >= VIPL_INSTR_NCATEGORIES) return "Unknown";
    return kCategoryNames[category];
}

size_t vipl_instr_snapshot(vipl_instr_sample *out, size_t max) {
    std::vector<Merged> all = collect();
    if (out) {
        double rate = vipl_instr_cycles_per_ns();
        for (size_t i = 0; i < all.size() && i < max; ++i)
            out[i] = vipl_instr_sample{all[i].name, all[i].category, all[i].count, all[i].cycles,
                                       double(all[i].cycles) / rate};
    }
    return all.size();
}

int vipl_instr_find(const char *name, vipl_instr_sample *out) {
    if (!name) return -1;
    const char *stable = nullptr;
    int category = VIPL_INSTR_OTHER;
    uint64_t count = 0, cycles = 0;
    {
        std::lock_guard<std::mutex> lock(g_registry_mutex);
        for (vipl_instr_counter *c = g_head; c; c = c->next) {
            if (!c->name || std::strcmp(c->name, name) != 0) continue;
            if (!stable) {
                stable = c->name;
                category = c->category;
            }
            count += __atomic_load_n(&c->count, __ATOMIC_RELAXED);
            cycles += __atomic_load_n(&c->cycles, __ATOMIC_RELAXED);
        }
    }
    if (!stable) return -1;
    if (out) *out = vipl_instr_sample{stable, category, count, cycles, double(cycles) / vipl_instr_cycles_per_ns()};
    return 0;
}

void vipl_instr_print_table(FILE *f) {
    if (!f) return;
    std::vector<Merged> all = collect();
    double rate = vipl_instr_cycles_per_ns();
    // Host overhead excludes the Firmware category (that time is spent by the
    // (emulated) NIC, not by the host CPU the breakdown tables are about) and
    // the waits (latency, not overhead).
    uint64_t host_cycles = 0;
    for (const Merged &m : all)
        if (m.category != VIPL_INSTR_FIRMWARE && m.category != VIPL_INSTR_WAIT) host_cycles += m.cycles;
    std::string s = fmt::format("viastack instrumentation (rank {}, TSC {:.3f} GHz{})\n", env_rank(), rate,
                                vipl_instr_enabled() ? "" : ", switch off");
    s += fmt::format("  {:<34} {:>10} {:>14} {:>10} {:>10} {:>7}\n", "primitive", "count", "total ns", "mean ns",
                     "mean cyc", "% host");
    int cat = -1;
    for (const Merged &m : all) {
        if (m.category != cat) {
            cat = m.category;
            uint64_t cat_cycles = 0;
            for (const Merged &x : all)
                if (x.category == cat) cat_cycles += x.cycles;
            s += fmt::format("{} ({:.0f} ns total)\n", vipl_instr_category_name(cat), double(cat_cycles) / rate);
        }
        double mean_cyc = m.count ? double(m.cycles) / double(m.count) : 0.0;
        std::string pct = (m.category == VIPL_INSTR_FIRMWARE || m.category == VIPL_INSTR_WAIT || host_cycles == 0)
            ? std::string("-")
            : fmt::format("{:.1f}", 100.0 * double(m.cycles) / double(host_cycles));
        s += fmt::format("  {:<34} {:>10} {:>14.0f} {:>10.1f} {:>10.1f} {:>7}\n", m.name, m.count,
                         double(m.cycles) / rate, mean_cyc / rate, mean_cyc, pct);
    }
    if (all.empty()) s += "  (no counters registered)\n";
    std::fputs(s.c_str(), f);
}

int vipl_instr_dump_json(const char *path) {
    if (!path || !*path) {
        errno = EINVAL;
        return -1;
    }
    std::vector<Merged> all = collect();
    double rate = vipl_instr_cycles_per_ns();
    nlohmann::json doc;
    doc["tsc_ghz"] = rate;
    doc["rank"] = env_rank();
    doc["enabled"] = vipl_instr_enabled() != 0;
    nlohmann::json counters = nlohmann::json::array();
    for (const Merged &m : all) {
        double ns_total = double(m.cycles) / rate;
        counters.push_back({{"name", m.name},
                            {"category", vipl_instr_category_name(m.category)},
                            {"category_id", m.category},
                            {"count", m.count},
                            {"cycles", m.cycles},
                            {"ns_total", ns_total},
                            {"ns_mean", m.count ? ns_total / double(m.count) : 0.0}});
    }
    doc["counters"] = std::move(counters);
    std::string file = expand_rank(path);
    std::ofstream out(file, std::ios::trunc);
    if (!out) return -1; // errno from open()
    out << doc.dump(2) << '\n';
    out.flush();
    if (!out) {
        if (!errno) errno = EIO;
        return -1;
    }
    return 0;
}

} // extern "C"
