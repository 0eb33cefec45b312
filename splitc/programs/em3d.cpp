// em3d - the EM3D kernel of the Split-C paper (Culler et al., SC'93): a
// bipartite graph of E and H nodes spread over the processors; each iteration
// recomputes every E node from its H neighbours, then every H node from its E
// neighbours:  value -= sum_j coeff_j * neighbour_j.
//
// Variants (--variant read|get|store|all):
//   read   each neighbour value is a synchronous global read
//   get    all neighbour values of a phase are fetched with get, one sync()
//   store  owners push their values into ghost copies on every processor
//          with bulk_store; all_store_sync() ends the phase
// Every run is checked against a sequential computation of the whole graph
// (each processor regenerates it); a mismatch exits non-zero.
#include <cmath>
#include <cstdio>
#include <vector>

#include "program_util.hpp"
#include "splitc/splitc.hpp"

using namespace splitc;
using namespace splitc_programs;

namespace {

struct Params {
    int n;         // nodes of each kind per processor
    int d;         // in-degree
    double remote; // fraction of edges from another processor
    int iters;
    uint64_t seed;
};

enum Kind { kE = 0, kH = 1 };

// In-edge j of node i (kind k) on processor p: a node of the other kind.
struct Edge {
    int proc, idx;
    double coeff;
};
Edge make_edge(const Params &pr, int P, Kind k, int p, int i, int j) {
    uint64_t h = hash4(pr.seed, uint64_t(k), uint64_t(p) * 1000003u + uint64_t(i), uint64_t(j));
    int q = p;
    if (P > 1 && unit(mix64(h ^ 1)) < pr.remote) q = (p + 1 + int(mix64(h ^ 2) % uint64_t(P - 1))) % P;
    return Edge{q, int(mix64(h ^ 3) % uint64_t(pr.n)), 0.5 * unit(mix64(h ^ 4)) / pr.d};
}
double initial_value(const Params &pr, Kind k, int p, int i) {
    return unit(hash4(pr.seed ^ 0x5eed, uint64_t(k), uint64_t(p), uint64_t(i)));
}

// The whole computation on one processor, for the check.
std::vector<double> sequential(const Params &pr, int P, Kind want, int me) {
    std::vector<std::vector<double>> val[2];
    for (int k = 0; k < 2; ++k) {
        val[k].assign(size_t(P), std::vector<double>(size_t(pr.n)));
        for (int p = 0; p < P; ++p)
            for (int i = 0; i < pr.n; ++i) val[k][size_t(p)][size_t(i)] = initial_value(pr, Kind(k), p, i);
    }
    for (int it = 0; it < pr.iters; ++it)
        for (int k = 0; k < 2; ++k)
            for (int p = 0; p < P; ++p)
                for (int i = 0; i < pr.n; ++i) {
                    double s = 0;
                    for (int j = 0; j < pr.d; ++j) {
                        Edge e = make_edge(pr, P, Kind(k), p, i, j);
                        s += e.coeff * val[1 - k][size_t(e.proc)][size_t(e.idx)];
                    }
                    val[k][size_t(p)][size_t(i)] -= s;
                }
    return val[want][size_t(me)];
}

class Em3d {
public:
    explicit Em3d(const Params &pr)
        : pr_(pr), P_(procs()), me_(myproc()), val_{spread_array<double>({size_t(P_)}, {size_t(pr.n)}),
                                                    spread_array<double>({size_t(P_)}, {size_t(pr.n)})},
          ghost_{spread_array<double>({size_t(P_)}, {size_t(P_) * size_t(pr.n)}),
                 spread_array<double>({size_t(P_)}, {size_t(P_) * size_t(pr.n)})} {
        for (int k = 0; k < 2; ++k) {
            edges_[k].resize(size_t(pr.n) * size_t(pr.d));
            for (int i = 0; i < pr.n; ++i)
                for (int j = 0; j < pr.d; ++j)
                    edges_[k][size_t(i) * size_t(pr.d) + size_t(j)] = make_edge(pr, P_, Kind(k), me_, i, j);
        }
        fetched_.resize(size_t(pr.n) * size_t(pr.d));
    }

    void reset() {
        for (int k = 0; k < 2; ++k)
            for (int i = 0; i < pr_.n; ++i) mine(Kind(k))[i] = initial_value(pr_, Kind(k), me_, i);
        barrier();
    }

    // Runs the iterations; returns seconds per iteration on this processor.
    double run(const std::string &variant) {
        reset();
        double t0 = get_seconds();
        if (variant == "store") push(kH);
        for (int it = 0; it < pr_.iters; ++it)
            for (int k = 0; k < 2; ++k) {
                if (variant == "read") phase_read(Kind(k));
                else if (variant == "get") phase_get(Kind(k));
                else phase_store(Kind(k));
            }
        return (get_seconds() - t0) / pr_.iters;
    }

    // Test hook (--corrupt): perturb one value so the check must fail.
    void corrupt() { mine(kH)[pr_.n / 2] += 1e-6; }

    int check() {
        int bad = 0;
        for (int k = 0; k < 2; ++k) {
            std::vector<double> ref = sequential(pr_, P_, Kind(k), me_);
            for (int i = 0; i < pr_.n; ++i) {
                double got = mine(Kind(k))[i], want = ref[size_t(i)];
                if (!(std::fabs(got - want) <= 1e-12 * (1 + std::fabs(want)))) {
                    if (bad < 5)
                        std::fprintf(stderr, "em3d: proc %d %c[%d] = %.17g, sequential %.17g\n", me_,
                                     k == kE ? 'E' : 'H', i, got, want);
                    ++bad;
                }
            }
        }
        return bad;
    }

private:
    double *mine(Kind k) { return val_[k].local_block(0); }

    void phase_read(Kind k) {
        const spread_array<double> &src = val_[1 - k];
        double *v = mine(k);
        for (int i = 0; i < pr_.n; ++i) {
            double s = 0;
            for (int j = 0; j < pr_.d; ++j) {
                const Edge &e = edges_[k][size_t(i) * size_t(pr_.d) + size_t(j)];
                s += e.coeff * double(src(e.proc, e.idx));
            }
            v[i] -= s;
        }
        barrier();
    }

    void phase_get(Kind k) {
        const spread_array<double> &src = val_[1 - k];
        size_t ne = edges_[k].size();
        for (size_t e = 0; e < ne; ++e) get(fetched_[e], src.ptr(edges_[k][e].proc, edges_[k][e].idx));
        splitc::sync();
        double *v = mine(k);
        for (int i = 0; i < pr_.n; ++i) {
            double s = 0;
            for (int j = 0; j < pr_.d; ++j) {
                size_t e = size_t(i) * size_t(pr_.d) + size_t(j);
                s += edges_[k][e].coeff * fetched_[e];
            }
            v[i] -= s;
        }
        barrier();
    }

    // My values of kind k into slot [me] of every processor's ghost block.
    void push(Kind k) {
        for (int q = 0; q < P_; ++q)
            if (q != me_) bulk_store(ghost_[k].ptr(q, size_t(me_) * size_t(pr_.n)), mine(k), size_t(pr_.n));
        all_store_sync();
    }

    void phase_store(Kind k) {
        const double *ghost = ghost_[1 - k].local_block(0);
        const double *local = mine(Kind(1 - k));
        double *v = mine(k);
        for (int i = 0; i < pr_.n; ++i) {
            double s = 0;
            for (int j = 0; j < pr_.d; ++j) {
                const Edge &e = edges_[k][size_t(i) * size_t(pr_.d) + size_t(j)];
                double x = e.proc == me_ ? local[e.idx] : ghost[size_t(e.proc) * size_t(pr_.n) + size_t(e.idx)];
                s += e.coeff * x;
            }
            v[i] -= s;
        }
        push(k);
    }

    Params pr_;
    int P_, me_;
    spread_array<double> val_[2];   // block p: the values of processor p's nodes
    spread_array<double> ghost_[2]; // block q: copies of every processor's values
    std::vector<Edge> edges_[2];
    std::vector<double> fetched_;
};

} // namespace

int splitc_main(int argc, char **argv) {
    Options opt(argc, argv);
    Params pr;
    pr.n = int(opt.num("nodes", 256));
    pr.d = int(opt.num("degree", 8));
    pr.remote = opt.real("remote", 0.2);
    pr.iters = int(opt.num("iters", 10));
    pr.seed = uint64_t(opt.num("seed", 1993));
    std::string variant = opt.str("variant", "all");
    const bool corrupt = opt.flag("corrupt");
    const char *usage = "em3d [--nodes N] [--degree D] [--remote FRACTION] [--iters I] [--seed S] "
                        "[--variant read|get|store|all] [--corrupt]";
    if (!opt.all_used(usage)) return 2;
    if (pr.n < 1 || pr.d < 1 || pr.iters < 0 || pr.remote < 0 || pr.remote > 1 ||
        (variant != "read" && variant != "get" && variant != "store" && variant != "all")) {
        std::fprintf(stderr, "em3d: bad parameters\nusage: %s\n", usage);
        return 2;
    }
    std::vector<std::string> variants;
    if (variant == "all") variants = {"read", "get", "store"};
    else variants = {variant};

    Em3d em(pr);
    long failures = 0;
    for (const std::string &v : variants) {
        double t = all_reduce_to_all_dmax(em.run(v));
        if (corrupt && myproc() == procs() - 1) em.corrupt();
        long bad = all_reduce_to_all_add(long(em.check()));
        failures += bad;
        if (on_one())
            std::printf("em3d: PROCS=%d nodes/proc=%d degree=%d remote=%.2f iters=%d variant=%-5s "
                        "%10.1f us/iter  check %s\n",
                        procs(), pr.n, pr.d, pr.remote, pr.iters, v.c_str(), t * 1e6, bad ? "FAILED" : "OK");
    }
    std::fflush(stdout);
    return failures ? 1 : 0;
}
