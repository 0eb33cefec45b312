// rt_coll.cpp - barrier, reductions, broadcast and all_store_sync over the
// runtime's own messages: every processor sends its contribution to
// processor 0 (kCollUp), which combines them in rank order (so double sums
// are identical on every run) and sends the result back (kCollDown).
// Collective messages are replyless requests, credited like stores.
#include <time.h>

#include <cstdio>
#include <type_traits>

#include "rt_internal.hpp"

namespace splitc::rt {

namespace {

inline double as_d(int64_t v) {
    double d;
    std::memcpy(&d, &v, 8);
    return d;
}
inline int64_t from_d(double d) {
    int64_t v;
    std::memcpy(&v, &d, 8);
    return v;
}
// Floats travel in the low 32 bits and are combined in float arithmetic, so a
// float sum rounds like the program's own float additions would.
inline float as_f(int64_t v) {
    uint32_t u = uint32_t(uint64_t(v));
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline int64_t from_f(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return int64_t(u);
}

// Integers of every width travel sign- or zero-extended to 64 bits; add, mul
// and the bitwise ops then give the right low bits for every width, and the
// signed comparison is right for all but unsigned long (kOpMaxUL/kOpMinUL).
int64_t combine1(uint16_t op, int64_t x, int64_t y) {
    switch (op & kOpMask) {
    case kOpAddL: return int64_t(uint64_t(x) + uint64_t(y)); // wraps, never UB
    case kOpMulL: return int64_t(uint64_t(x) * uint64_t(y));
    case kOpMaxL: return x > y ? x : y;
    case kOpMinL: return x < y ? x : y;
    case kOpMaxUL: return uint64_t(x) > uint64_t(y) ? x : y;
    case kOpMinUL: return uint64_t(x) < uint64_t(y) ? x : y;
    case kOpAnd: return x & y;
    case kOpOr: return x | y;
    case kOpXor: return x ^ y;
    case kOpAddD: return from_d(as_d(x) + as_d(y));
    case kOpMulD: return from_d(as_d(x) * as_d(y));
    case kOpMaxD: return from_d(as_d(x) > as_d(y) ? as_d(x) : as_d(y));
    case kOpMinD: return from_d(as_d(x) < as_d(y) ? as_d(x) : as_d(y));
    case kOpAddF: return from_f(as_f(x) + as_f(y));
    case kOpMulF: return from_f(as_f(x) * as_f(y));
    case kOpMaxF: return from_f(as_f(x) > as_f(y) ? as_f(x) : as_f(y));
    case kOpMinF: return from_f(as_f(x) < as_f(y) ? as_f(x) : as_f(y));
    default: return x; // kOpNone: processor 0's value (broadcast, barrier)
    }
}

CollPayload combine(uint16_t op, const CollPayload &x, const CollPayload &y) {
    return CollPayload{combine1(op, x.a, y.a), combine1(op, x.b, y.b), combine1(op, x.c, y.c)};
}

// "add_i", "scan add_d", "barrier/broadcast": what a processor called.
const char *op_name(uint16_t op, char *buf, size_t len) {
    static const char *ops[kOpCount] = {"barrier/broadcast",
                                        "add",
                                        "max",
                                        "min",
                                        "add",
                                        "max",
                                        "min",
                                        "mul",
                                        "max",
                                        "min",
                                        "and",
                                        "or",
                                        "xor",
                                        "mul",
                                        "add",
                                        "mul",
                                        "max",
                                        "min"};
    static const char *types[] = {"", "_i", "_l", "_u", "_ul", "_f", "_d", "_p", "_gptr"};
    unsigned o = op & kOpMask, t = unsigned(op >> kTypeShift);
    std::snprintf(buf, len, "%s%s%s", op & kScan ? "scan " : "", o < kOpCount ? ops[o] : "?",
                  t < sizeof types / sizeof types[0] ? types[t] : "?");
    return buf;
}

// Processors called different collectives at the same point: their results
// would be garbage, so say so (the collective still completes everywhere).
[[gnu::cold]] void mismatch(uint16_t mine, uint16_t theirs, int who) {
    char a[48], b[48];
    report(SPLITC_ERR_COLLECTIVE_MISMATCH,
           "collective #%llu: this processor ran a %s reduction but processor %d ran a %s one; every "
           "processor must call the same collectives in the same order",
           (unsigned long long)g.coll.seq - 1, op_name(mine, a, sizeof a), who, op_name(theirs, b, sizeof b));
}

} // namespace

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
    if (g.me == 0) {
        c.vals[par][0] = mine;
        while (c.arrivals[par] < uint32_t(g.procs - 1)) wait_step();
        c.arrivals[par] = 0;
        for (int r = 1; r < g.procs; ++r)
            if (c.ops[par][size_t(r)] != op) mismatch(op, c.ops[par][size_t(r)], r);
        CollPayload acc = c.vals[par][0];
        if (op & kScan) {
            // Each processor gets its own inclusive prefix, built in rank order.
            for (int r = 1; r < g.procs; ++r) {
                acc = combine(op, acc, c.vals[par][size_t(r)]);
                send_request(r, kCollDown, op, seq, &acc, sizeof acc, 0);
            }
            return c.vals[par][0];
        }
        for (int r = 1; r < g.procs; ++r) acc = combine(op, acc, c.vals[par][size_t(r)]);
        for (int r = 1; r < g.procs; ++r) send_request(r, kCollDown, op, seq, &acc, sizeof acc, 0);
        return acc;
    }
    send_request(0, kCollUp, op, seq, &mine, sizeof mine, 0);
    while (!c.down[par]) wait_step();
    c.down[par] = false;
    if (c.down_op[par] != op) mismatch(op, c.down_op[par], 0);
    return c.result[par];
}

} // namespace splitc::rt

using namespace splitc::rt;

namespace {

bool ready(const char *what) {
    if (__builtin_expect(g.initialized || g.procs == 1, 1)) return true;
    report(SPLITC_ERR_NOT_INITIALIZED, "%s called before splitc_init", what);
    return false;
}

// How a value of type T travels in a collective's 64-bit field, and which
// type tag names it in the op word.
template <class T>
struct Wire;
template <class T>
requires std::is_integral_v<T>
struct Wire<T> {
    static int64_t to(T v) { return int64_t(v); } // sign- or zero-extends
    static T from(int64_t v) { return T(v); }     // keeps the low bits
};
template <>
struct Wire<float> {
    static int64_t to(float v) { return from_f(v); }
    static float from(int64_t v) { return as_f(v); }
};
template <>
struct Wire<double> {
    static int64_t to(double v) { return from_d(v); }
    static double from(int64_t v) { return as_d(v); }
};
template <class T>
constexpr uint16_t type_tag() {
    if constexpr (std::is_same_v<T, int>) return kTypeI;
    else if constexpr (std::is_same_v<T, long>) return kTypeL;
    else if constexpr (std::is_same_v<T, unsigned>) return kTypeU;
    else if constexpr (std::is_same_v<T, unsigned long>) return kTypeUL;
    else if constexpr (std::is_same_v<T, float>) return kTypeF;
    else return kTypeD;
}

// The combining op for a Split-C operation name on type T.
enum class Name { add, mul, max, min, and_, or_, xor_ };
template <class T>
constexpr uint16_t op_for(Name n) {
    constexpr bool f = std::is_same_v<T, float>, d = std::is_same_v<T, double>;
    constexpr bool ul = std::is_same_v<T, unsigned long>;
    switch (n) {
    case Name::add: return f ? kOpAddF : d ? kOpAddD : kOpAddL;
    case Name::mul: return f ? kOpMulF : d ? kOpMulD : kOpMulL;
    case Name::max: return f ? kOpMaxF : d ? kOpMaxD : ul ? kOpMaxUL : kOpMaxL;
    case Name::min: return f ? kOpMinF : d ? kOpMinD : ul ? kOpMinUL : kOpMinL;
    case Name::and_: return kOpAnd;
    case Name::or_: return kOpOr;
    case Name::xor_: return kOpXor;
    }
    return kOpNone;
}

// Every typed collective is this one function: op is the full op word.
template <class T>
T collective(uint16_t op, T v, const char *what) {
    if (!ready(what)) return v;
    return Wire<T>::from(all_reduce(op, CollPayload{Wire<T>::to(v), 0, 0}).a);
}

template <class T>
T reduce(Name n, T v, const char *what) {
    return collective<T>(uint16_t(op_for<T>(n) | type_tag<T>() << kTypeShift), v, what);
}

} // namespace

extern "C" {

void splitc_barrier(void) {
    if (ready("barrier")) all_reduce(kOpNone, CollPayload{0, 0, 0});
}

// splitc_all_reduce_to_{one,all}_OP_S for the (OP, S, T) list of splitc_rt.h.
// The `and`/`or`/`xor` of the names are spelled and_/or_/xor_ in C++.
#define SPLITC_OPNAME_add Name::add
#define SPLITC_OPNAME_mul Name::mul
#define SPLITC_OPNAME_max Name::max
#define SPLITC_OPNAME_min Name::min
#define SPLITC_OPNAME_and Name::and_
#define SPLITC_OPNAME_or Name::or_
#define SPLITC_OPNAME_xor Name::xor_
#define SPLITC_DEFINE_REDUCTION(OP, S, T)                                                                              \
    T splitc_all_reduce_to_one_##OP##_##S(T v) {                                                                       \
        return reduce<T>(SPLITC_OPNAME_##OP, v, "all_reduce_to_one_" #OP "_" #S);                                      \
    }                                                                                                                  \
    T splitc_all_reduce_to_all_##OP##_##S(T v) {                                                                       \
        return reduce<T>(SPLITC_OPNAME_##OP, v, "all_reduce_to_all_" #OP "_" #S);                                      \
    }
SPLITC_FOR_REDUCTIONS_(SPLITC_DEFINE_REDUCTION)

// The older names: long and double versions of the same functions.
long splitc_all_reduce_to_one_add(long v) { return splitc_all_reduce_to_one_add_l(v); }
long splitc_all_reduce_to_one_max(long v) { return splitc_all_reduce_to_one_max_l(v); }
long splitc_all_reduce_to_one_min(long v) { return splitc_all_reduce_to_one_min_l(v); }
double splitc_all_reduce_to_one_dadd(double v) { return splitc_all_reduce_to_one_add_d(v); }
double splitc_all_reduce_to_one_dmax(double v) { return splitc_all_reduce_to_one_max_d(v); }
double splitc_all_reduce_to_one_dmin(double v) { return splitc_all_reduce_to_one_min_d(v); }
long splitc_all_reduce_to_all_add(long v) { return splitc_all_reduce_to_all_add_l(v); }
long splitc_all_reduce_to_all_max(long v) { return splitc_all_reduce_to_all_max_l(v); }
long splitc_all_reduce_to_all_min(long v) { return splitc_all_reduce_to_all_min_l(v); }
double splitc_all_reduce_to_all_dadd(double v) { return splitc_all_reduce_to_all_add_d(v); }
double splitc_all_reduce_to_all_dmax(double v) { return splitc_all_reduce_to_all_max_d(v); }
double splitc_all_reduce_to_all_dmin(double v) { return splitc_all_reduce_to_all_min_d(v); }

#define SPLITC_DEFINE_BCAST(A, S, T)                                                                                   \
    T splitc_all_bcast_##S(T v) {                                                                                      \
        return collective<T>(uint16_t(kOpNone | type_tag<T>() << kTypeShift), v, "all_bcast_" #S);                     \
    }
SPLITC_FOR_ALL_TYPES_(SPLITC_DEFINE_BCAST, _)
long splitc_all_bcast(long v) { return splitc_all_bcast_l(v); }
void *splitc_all_bcast_p(void *v) {
    uint64_t bits =
        collective<uint64_t>(uint16_t(kOpNone | kTypeP << kTypeShift), uint64_t(uintptr_t(v)), "all_bcast_p");
    return reinterpret_cast<void *>(uintptr_t(bits));
}
splitc_gptr_t splitc_all_bcast_gptr(splitc_gptr_t v) {
    splitc_gptr_t r;
    r.bits = collective<uint64_t>(uint16_t(kOpNone | kTypeGptr << kTypeShift), v.bits, "all_bcast_gptr");
    return r;
}

int splitc_all_scan_add_i(int v) {
    return collective<int>(uint16_t(kOpAddL | kScan | kTypeI << kTypeShift), v, "all_scan_add_i");
}
long splitc_all_scan_add_l(long v) {
    return collective<long>(uint16_t(kOpAddL | kScan | kTypeL << kTypeShift), v, "all_scan_add_l");
}
double splitc_all_scan_add_d(double v) {
    return collective<double>(uint16_t(kOpAddD | kScan | kTypeD << kTypeShift), v, "all_scan_add_d");
}

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

} // extern "C"
