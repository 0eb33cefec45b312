// rt_coll.cpp - barrier, reductions, broadcast and all_store_sync over the
// runtime's own messages: every processor sends its contribution to
// processor 0 (kCollUp), which combines them in rank order (so double sums
// are identical on every run) and sends the result back (kCollDown).
// Collective messages are replyless requests, credited like stores.
#include <time.h>

#include "rt_internal.hpp"

namespace splitc::rt {

namespace {

inline double as_d(int64_t v) { double d; std::memcpy(&d, &v, 8); return d; }
inline int64_t from_d(double d) { int64_t v; std::memcpy(&v, &d, 8); return v; }

int64_t combine1(uint16_t op, int64_t x, int64_t y) {
    switch (op) {
    case kOpAddL: return int64_t(uint64_t(x) + uint64_t(y));  // wraps, never UB
    case kOpMaxL: return x > y ? x : y;
    case kOpMinL: return x < y ? x : y;
    case kOpAddD: return from_d(as_d(x) + as_d(y));
    case kOpMaxD: return from_d(as_d(x) > as_d(y) ? as_d(x) : as_d(y));
    case kOpMinD: return from_d(as_d(x) < as_d(y) ? as_d(x) : as_d(y));
    default: return x;  // kOpNone: processor 0's value (broadcast, barrier)
    }
}

CollPayload combine(uint16_t op, const CollPayload &x, const CollPayload &y) {
    return CollPayload{combine1(op, x.a, y.a), combine1(op, x.b, y.b), combine1(op, x.c, y.c)};
}

const char *op_name(uint16_t op) {
    static const char *names[] = {"barrier/broadcast", "add", "max", "min", "dadd", "dmax", "dmin"};
    return op < sizeof names / sizeof names[0] ? names[op] : "?";
}

// Processors called different collectives at the same point: their results
// would be garbage, so say so (the collective still completes everywhere).
[[gnu::cold]] void mismatch(uint16_t mine, uint16_t theirs, int who) {
    report(SPLITC_ERR_COLLECTIVE_MISMATCH,
           "collective #%llu: this processor ran a %s reduction but processor %d ran a %s one; every "
           "processor must call the same collectives in the same order",
           (unsigned long long)g.coll.seq - 1, op_name(mine), who, op_name(theirs));
}

}  // namespace

void on_coll_up(int from, uint64_t seq, uint16_t op, const CollPayload &v) {
    CollState &c = g.coll;
    unsigned par = unsigned(seq & 1);
    c.vals[par][size_t(from)] = v;
    c.ops[par][size_t(from)] = op;
    ++c.arrivals[par];
}

void on_coll_down(uint64_t seq, uint16_t op, const CollPayload &v) {
    CollState &c = g.coll;
    unsigned par = unsigned(seq & 1);
    c.result[par] = v;
    c.down_op[par] = op;
    c.down[par] = true;
}

// A processor can be at most one collective ahead of another (it needs the
// previous result from processor 0 first), so two parity slots suffice.
CollPayload all_reduce(uint16_t op, CollPayload mine) {
    if (g.procs == 1) return mine;
    CollState &c = g.coll;
    uint64_t seq = c.seq++;
    unsigned par = unsigned(seq & 1);
    uint32_t idle = 0;
    if (g.me == 0) {
        c.vals[par][0] = mine;
        while (c.arrivals[par] < uint32_t(g.procs - 1)) wait_step(idle);
        c.arrivals[par] = 0;
        for (int r = 1; r < g.procs; ++r)
            if (c.ops[par][size_t(r)] != op) mismatch(op, c.ops[par][size_t(r)], r);
        CollPayload acc = c.vals[par][0];
        for (int r = 1; r < g.procs; ++r) acc = combine(op, acc, c.vals[par][size_t(r)]);
        for (int r = 1; r < g.procs; ++r) send_request(r, kCollDown, op, seq, &acc, sizeof acc, 0);
        return acc;
    }
    send_request(0, kCollUp, op, seq, &mine, sizeof mine, 0);
    while (!c.down[par]) wait_step(idle);
    c.down[par] = false;
    if (c.down_op[par] != op) mismatch(op, c.down_op[par], 0);
    return c.result[par];
}

}  // namespace splitc::rt

using namespace splitc::rt;

namespace {

bool ready(const char *what) {
    if (__builtin_expect(g.initialized || g.procs == 1, 1)) return true;
    report(SPLITC_ERR_NOT_INITIALIZED, "%s called before splitc_init", what);
    return false;
}

long reduce_l(uint16_t op, long v, const char *what) {
    if (!ready(what)) return v;
    return long(all_reduce(op, CollPayload{int64_t(v), 0, 0}).a);
}

double reduce_d(uint16_t op, double v, const char *what) {
    if (!ready(what)) return v;
    int64_t x;
    std::memcpy(&x, &v, 8);
    int64_t r = all_reduce(op, CollPayload{x, 0, 0}).a;
    double d;
    std::memcpy(&d, &r, 8);
    return d;
}

}  // namespace

extern "C" {

void splitc_barrier(void) {
    if (ready("barrier")) all_reduce(kOpNone, CollPayload{0, 0, 0});
}

long splitc_all_reduce_to_one_add(long v) { return reduce_l(kOpAddL, v, "all_reduce_to_one_add"); }
long splitc_all_reduce_to_one_max(long v) { return reduce_l(kOpMaxL, v, "all_reduce_to_one_max"); }
long splitc_all_reduce_to_one_min(long v) { return reduce_l(kOpMinL, v, "all_reduce_to_one_min"); }
double splitc_all_reduce_to_one_dadd(double v) { return reduce_d(kOpAddD, v, "all_reduce_to_one_dadd"); }
double splitc_all_reduce_to_one_dmax(double v) { return reduce_d(kOpMaxD, v, "all_reduce_to_one_dmax"); }
double splitc_all_reduce_to_one_dmin(double v) { return reduce_d(kOpMinD, v, "all_reduce_to_one_dmin"); }
long splitc_all_reduce_to_all_add(long v) { return reduce_l(kOpAddL, v, "all_reduce_to_all_add"); }
long splitc_all_reduce_to_all_max(long v) { return reduce_l(kOpMaxL, v, "all_reduce_to_all_max"); }
long splitc_all_reduce_to_all_min(long v) { return reduce_l(kOpMinL, v, "all_reduce_to_all_min"); }
double splitc_all_reduce_to_all_dadd(double v) { return reduce_d(kOpAddD, v, "all_reduce_to_all_dadd"); }
double splitc_all_reduce_to_all_dmax(double v) { return reduce_d(kOpMaxD, v, "all_reduce_to_all_dmax"); }
double splitc_all_reduce_to_all_dmin(double v) { return reduce_d(kOpMinD, v, "all_reduce_to_all_dmin"); }
long splitc_all_bcast(long v) { return reduce_l(kOpNone, v, "all_bcast"); }
double splitc_all_bcast_d(double v) { return reduce_d(kOpNone, v, "all_bcast_d"); }

void splitc_all_store_sync(void) {
    if (!ready("all_store_sync")) return;
    // Stores issued before the call are fixed once every processor is here;
    // arrivals only grow, so repeat until the global sums meet.
    for (;;) {
        CollPayload mine{g.store_sent, g.store_recv, 0};
        CollPayload sum = all_reduce(kOpAddL, mine);
        if (sum.a == sum.b) {
            // Stores counted after our contribution come from processors that
            // already left this call: keep them for the next store_sync.
            g.store_avail = g.store_recv - mine.b;
            return;
        }
    }
}

double splitc_get_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // extern "C"
