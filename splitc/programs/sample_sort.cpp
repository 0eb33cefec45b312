// sample_sort - sorts 64-bit keys spread over the processors with a sample
// sort written with Split-C stores:
//   1. sort the local keys, pick evenly spaced samples, bulk_store them into
//      every processor's sample block; all_store_sync
//   2. every processor sorts all samples and picks the same PROCS-1 splitters;
//      the local keys between two splitters form one contiguous bucket
//   3. store each bucket's size into its destination's count row;
//      all_store_sync; each destination stores back where each source's keys go
//   4. bulk_store every bucket straight from the sorted local array (it lives
//      in spread memory, so the gather descriptor sends it without a copy);
//      all_store_sync; sort what arrived
// Self-check: every processor's keys are sorted, the processors are in order,
// and the count and two checksums of all keys are unchanged.  Exits non-zero
// on a failed check.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "program_util.hpp"
#include "splitc/splitc.hpp"

using namespace splitc;
using namespace splitc_programs;

namespace {

struct Checksums {
    long count;
    long sum;   // wrapping sum of the keys
    long mixed; // wrapping sum of mix64(key)
};
Checksums checksums(const uint64_t *k, size_t n) {
    uint64_t s = 0, m = 0;
    for (size_t i = 0; i < n; ++i) s += k[i], m += mix64(k[i]);
    return Checksums{long(n), long(s), long(m)};
}
Checksums global(Checksums c) {
    return Checksums{all_reduce_to_all_add(c.count), all_reduce_to_all_add(c.sum), all_reduce_to_all_add(c.mixed)};
}

} // namespace

int splitc_main(int argc, char **argv) {
    Options opt(argc, argv);
    const long n = opt.num("keys", 20000); // keys per processor
    const long oversample = opt.num("oversample", 16);
    const uint64_t seed = uint64_t(opt.num("seed", 42));
    const bool skewed = opt.flag("skewed");   // many duplicate keys
    const bool corrupt = opt.flag("corrupt"); // test hook: the check must fail
    if (!opt.all_used("sample_sort [--keys N] [--oversample S] [--seed X] [--skewed] [--corrupt]")) return 2;
    if (n < 1 || oversample < 1) {
        std::fprintf(stderr, "sample_sort: --keys and --oversample must be positive\n");
        return 2;
    }
    const int P = procs(), me = myproc();
    const size_t S = size_t(oversample);

    // Local keys live in spread memory: block p holds processor p's keys.
    spread_ptr<uint64_t> keys = all_spread_malloc<uint64_t>(size_t(P), size_t(n));
    uint64_t *mine = (keys + me).local();
    for (long i = 0; i < n; ++i) {
        uint64_t h = hash4(seed, uint64_t(me), uint64_t(i), 0);
        mine[i] = skewed ? (h % 97) * 0x0101010101010101ull : h;
    }
    const Checksums before = global(checksums(mine, size_t(n)));
    double t0 = get_seconds();

    // 1. samples to everyone
    std::sort(mine, mine + n);
    spread_ptr<uint64_t> samples = all_spread_malloc<uint64_t>(size_t(P), size_t(P) * S);
    std::vector<uint64_t> my_samples(S);
    for (size_t s = 0; s < S; ++s) my_samples[s] = mine[size_t((long(s) * n) / long(S))];
    for (int q = 0; q < P; ++q) bulk_store((samples + q).to_global() + ptrdiff_t(size_t(me) * S), my_samples.data(), S);
    all_store_sync();

    // 2. identical splitters everywhere; bucket q = [first[q], first[q+1])
    uint64_t *all_samples = (samples + me).local();
    std::sort(all_samples, all_samples + size_t(P) * S);
    std::vector<long> first(size_t(P) + 1);
    first[0] = 0;
    first[size_t(P)] = n;
    for (int q = 1; q < P; ++q) {
        uint64_t splitter = all_samples[size_t(q) * S];
        first[size_t(q)] = std::lower_bound(mine, mine + n, splitter) - mine;
    }

    // 3. counts[q][p] = keys p sends q; offsets[p][q] = where they go on q
    spread_ptr<long> counts = all_spread_malloc<long>(size_t(P), size_t(P));
    spread_ptr<long> offsets = all_spread_malloc<long>(size_t(P), size_t(P));
    for (int q = 0; q < P; ++q) store((counts + q).to_global() + me, first[size_t(q) + 1] - first[size_t(q)]);
    all_store_sync();
    const long *incoming = (counts + me).local();
    long total_in = 0;
    for (int p = 0; p < P; ++p) {
        store((offsets + p).to_global() + me, total_in);
        total_in += incoming[p];
    }
    all_store_sync();
    const long room = all_reduce_to_all_max(total_in);
    spread_ptr<uint64_t> sorted = all_spread_malloc<uint64_t>(size_t(P), size_t(room > 0 ? room : 1));

    // 4. the buckets, zero-copy from spread memory
    const long *where = (offsets + me).local();
    for (int q = 0; q < P; ++q) {
        long len = first[size_t(q) + 1] - first[size_t(q)];
        if (len) bulk_store((sorted + q).to_global() + where[q], mine + first[size_t(q)], size_t(len));
    }
    all_store_sync();
    uint64_t *out = (sorted + me).local();
    std::sort(out, out + total_in);
    double t = all_reduce_to_all_dmax(get_seconds() - t0);
    if (corrupt && myproc() == procs() - 1 && total_in > 0) out[total_in - 1] ^= 1;

    // Checks
    long bad = 0;
    if (!std::is_sorted(out, out + total_in)) {
        std::fprintf(stderr, "sample_sort: processor %d: keys not sorted\n", me);
        ++bad;
    }
    // Processor order: my largest key <= the smallest key of every later
    // non-empty processor, checked with reads of the neighbours' ends.
    spread_ptr<uint64_t> ends = all_spread_malloc<uint64_t>(size_t(P), 3);
    uint64_t *my_ends = (ends + me).local();
    my_ends[0] = total_in ? out[0] : 0;
    my_ends[1] = total_in ? out[total_in - 1] : 0;
    my_ends[2] = uint64_t(total_in);
    barrier();
    for (int q = me + 1; q < P && total_in; ++q) {
        global_ptr<uint64_t> e = (ends + q).to_global();
        if (read(e + 2) == 0) continue;
        if (read(e) < my_ends[1]) {
            std::fprintf(stderr, "sample_sort: processor %d ends above processor %d's first key\n", me, q);
            ++bad;
        }
        break;
    }
    const Checksums after = global(checksums(out, size_t(total_in)));
    if (after.count != before.count || after.sum != before.sum || after.mixed != before.mixed) {
        if (on_one())
            std::fprintf(stderr, "sample_sort: keys lost or changed (count %ld -> %ld)\n", before.count, after.count);
        ++bad;
    }
    bad = all_reduce_to_all_add(bad);
    long maxload = all_reduce_to_all_max(total_in);
    if (on_one())
        std::printf("sample_sort: PROCS=%d keys/proc=%ld total=%ld %s max bucket=%ld  %.3f ms  check %s\n", P, n,
                    after.count, skewed ? "skewed" : "uniform", maxload, t * 1e3, bad ? "FAILED" : "OK");
    std::fflush(stdout);
    all_spread_free(ends);
    all_spread_free(sorted);
    all_spread_free(offsets);
    all_spread_free(counts);
    all_spread_free(samples);
    all_spread_free(keys);
    return bad ? 1 : 0;
}
