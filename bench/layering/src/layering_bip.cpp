// layering_bip.cpp - BIP's one-way streaming bandwidth (layering.hpp):
// rank 0 bip_send's `count` messages, rank 1 bip_recv's each (a long one is
// written into its buffer once the receive is posted) and acknowledges the
// last.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bip.h"
#include "layering.hpp"

namespace layering {

int run_bip(const Options &o) {
    if (bip_init() != BIP_OK) return 2;
    if (bip_numnodes() != 2) {
        std::fprintf(stderr, "layering_bw bip: needs exactly 2 ranks\n");
        return 2;
    }
    const int me = bip_mynode();
    const size_t maxsz = *std::max_element(o.sizes.begin(), o.sizes.end());
    std::vector<uint8_t> buf(maxsz, 0x5a);
    char ack = 0;
    for (size_t n : o.sizes) {
        const int count = messages_for(n);
        for (int round = 0; round < o.rounds; round++) {
            if (me == 1) {
                for (int i = 0; i < count; i++) {
                    size_t len = 0;
                    if (bip_recv(0, buf.data(), n, &len) != 0 || len != n) {
                        std::printf("ERROR: bip_recv of %zu bytes\n", n);
                        return 1;
                    }
                }
                bip_send(0, 1, &ack, 1);
            } else {
                const double t0 = now_ns();
                for (int i = 0; i < count; i++)
                    if (int rc = bip_send(1, 0, buf.data(), n); rc != BIP_OK) {
                        std::printf("ERROR: bip_send: %s\n", bip_error_name(rc));
                        return 1;
                    }
                if (bip_recv(1, &ack, 1, nullptr) < 0) return 1;
                print_row("bip", n, round, count, now_ns() - t0);
            }
        }
    }
    return bip_finalize() == BIP_OK ? 0 : 1;
}

} // namespace layering
