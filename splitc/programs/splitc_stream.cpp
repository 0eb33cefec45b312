// splitc_stream - Split-C store message rate: processor 0 streams 4-byte
// splitc_store_4 to processor 1 (one 20-byte message each, no reply: the
// target returns the credits in batches of k/2), processor 1 waits for all
// of them with splitc_store_sync and confirms with one store back; g = time /
// stores.  The store g row of logp's splitc layer (bench/logp,
// layer_splitc.cpp) without its harness, and the program to run under
// callgrind for instructions per store (issue #15, docs/splitc.md); the
// Split-C twin of am/examples/am_stream.cpp.
//
//   vipl-run -n 2 splitc_stream [stores>0] [rounds>0]
#include <cstdio>
#include <cstdlib>

#include "splitc_rt.h"

int splitc_main(int argc, char **argv) {
    const long n = argc > 1 ? std::atol(argv[1]) : 100000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    if (n <= 0 || rounds <= 0) {
        if (splitc_myproc() == 0) std::fprintf(stderr, "usage: vipl-run -n 2 splitc_stream [stores>0] [rounds>0]\n");
        return 2;
    }
    if (splitc_procs() != 2) {
        if (splitc_myproc() == 0)
            std::fprintf(stderr, "splitc_stream: run it on 2 processors (vipl-run -n 2), not %d\n", splitc_procs());
        return 2;
    }
    splitc_sptr_t area = splitc_all_spread_malloc(2, 64);
    int *mine = static_cast<int *>(splitc_sptr_addr(area)); // same address on both
    const int peer = 1 - splitc_myproc();
    const splitc_gptr_t target = splitc_toglobal(peer, mine);
    if (splitc_myproc() == 0)
        std::printf("%ld stores of 4 bytes per round, %d credits, a STORE_ACK every %d stores\n", n, splitc_credits(),
                    splitc_store_ack_interval());
    splitc_barrier();
    for (int r = 0; r < rounds; ++r) {
        splitc_barrier();
        if (splitc_myproc() == 0) {
            const double t0 = splitc_get_seconds();
            for (long i = 0; i < n; ++i) splitc_store_4(target, uint32_t(i));
            splitc_store_sync(4); // processor 1's confirmation: it has every store
            const double t = splitc_get_seconds() - t0;
            std::printf("round %d: %ld stores in %.3f ms, g = %.1f ns/store\n", r, n, t * 1e3, t * 1e9 / double(n));
        } else {
            splitc_store_sync(4 * size_t(n));
            if (*mine != int(n - 1)) {
                std::fprintf(stderr, "splitc_stream: the last store left %d, not %ld\n", *mine, n - 1);
                return 1;
            }
            splitc_store_4(target, 1);
        }
    }
    splitc_barrier();
    splitc_all_spread_free(area);
    return 0;
}
