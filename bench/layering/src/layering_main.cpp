// layering_bw - the layering study's benchmark (layering.hpp).
//
//   vipl-run -n 2 layering_bw fm|bip|vi|am [-r rounds] [-s sizes] [-m MB]
//
//   fm   FM itself, then the tagged layer as an FM 1.x client (mp-fm1) and
//        with FM 2.x features (mp-fm2), interleaved per size and round
//   bip  BIP (bip_send / bip_recv)
//   vi   raw VI: sends into posted receives (vi-send), RDMA writes (vi-rdma)
//   am   AM-2 medium (AM_RequestI0) and long (AM_RequestXfer0) requests
// Rows: <layer> <bytes> <round> <messages> <MB/s> (MB = 10^6 bytes).
#include <cstdlib>
#include <cstring>
#include <string>

#include "layering.hpp"

namespace layering {
Options g_opt;
}

int main(int argc, char **argv) {
    using namespace layering;
    if (argc < 2) {
        std::fprintf(stderr, "usage: vipl-run -n 2 layering_bw fm|bip|vi|am [-r rounds] [-s sizes] [-m MB]\n");
        return 2;
    }
    const std::string what = argv[1];
    g_opt.sizes = {16, 64, 256, 1024, 4096, 16384, 65536, 262144};
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-r" && i + 1 < argc) {
            g_opt.rounds = std::atoi(argv[++i]);
        } else if (a == "-m" && i + 1 < argc) {
            g_opt.mbytes = std::atof(argv[++i]);
        } else if (a == "-s" && i + 1 < argc) {
            g_opt.sizes.clear();
            for (char *p = argv[++i]; *p;) {
                char *end;
                g_opt.sizes.push_back(std::strtoull(p, &end, 0));
                if (end == p) break;
                p = *end == ',' ? end + 1 : end;
            }
        } else {
            std::fprintf(stderr, "layering_bw: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (g_opt.sizes.empty() || g_opt.rounds < 1) return 2;
    if (what == "fm") return run_fm(g_opt);
    if (what == "bip") return run_bip(g_opt);
    if (what == "vi") return run_vi(g_opt);
    if (what == "am") return run_am(g_opt);
    std::fprintf(stderr, "layering_bw: %s is not one of fm, bip, vi, am\n", what.c_str());
    return 2;
}
