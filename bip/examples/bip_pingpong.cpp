// bip_pingpong - BIP latency and bandwidth between ranks 0 and 1, measured as
// Prylli and Tourancheau did [BIP section 4]: every round trip timed on its
// own, halved, and the median kept; bandwidth = size / (RTT/2).
//
//   vipl-run -n 2 bip_pingpong [-n iters] [-w warmup] [-s size,size,...] [--stream]
//
//   default sizes 0 4 16 64 256 1K 4K 16K 64K 256K 1M; -n 1000, -w 100
//   --stream  rank 0 sends -n messages of each size back to back, rank 1
//             receives them and answers the last: time per message and MB/s
//             (one-way bandwidth; long messages still wait for each receive)
//
// Per size: RTT/2 median (ns), its 10th and 90th percentiles, MB/s, and the
// protocol used (eager copy or rendezvous + RDMA with its fragment size).
// After the sweep: t0, r_inf and n_1/2 of Fast Messages' bandwidth fit
// (viastack/fm_fit.hpp, the fit bench/logp reports) over the medians.  Every message's bytes are
// checked; a mismatch prints ERROR and the exit code is 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bip.h"
#include "viastack/fm_fit.hpp"

namespace {

double now_ns() {
    return double(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

int g_bad = 0;

void fill(std::vector<uint8_t> &b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = uint8_t(i * 31 + seed);
}
void check(const std::vector<uint8_t> &b, size_t n, unsigned seed, int src, int want_src, size_t got) {
    bool ok = src == want_src && got == n;
    for (size_t i = 0; ok && i < n; i += 1 + (n >> 6)) ok = b[i] == uint8_t(i * 31 + seed);
    if (ok && n) ok = b[n - 1] == uint8_t((n - 1) * 31 + seed);
    if (!ok && g_bad++ < 5)
        std::printf("ERROR: message of %zu bytes from rank %d (got %zu from %d) is wrong\n", n, want_src, got, src);
}

void die(const char *what, int rc) {
    std::fprintf(stderr, "bip_pingpong: %s: %s\n", what, bip_error_name(rc));
    std::exit(2);
}

std::vector<size_t> parse_sizes(const char *s) {
    std::vector<size_t> v;
    while (*s) {
        char *end;
        size_t n = std::strtoull(s, &end, 0);
        if (*end == 'K' || *end == 'k') n <<= 10, end++;
        else if (*end == 'M' || *end == 'm') n <<= 20, end++;
        v.push_back(n);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s) break;
    }
    return v;
}

} // namespace

int main(int argc, char **argv) {
    int iters = 1000, warmup = 100;
    bool stream = false;
    std::vector<size_t> sizes = {0, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576};
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-n" && i + 1 < argc) iters = std::atoi(argv[++i]);
        else if (a == "-w" && i + 1 < argc) warmup = std::atoi(argv[++i]);
        else if (a == "-s" && i + 1 < argc) sizes = parse_sizes(argv[++i]);
        else if (a == "--stream") stream = true;
        else {
            std::fprintf(stderr, "usage: vipl-run -n 2 bip_pingpong [-n iters] [-w warmup] [-s sizes] [--stream]\n");
            return 2;
        }
    }
    if (iters < 1 || warmup < 0) return 2;
    int rc = bip_init();
    if (rc != BIP_OK) die("bip_init", rc);
    const int me = bip_mynode();
    if (bip_numnodes() < 2) {
        std::fprintf(stderr, "bip_pingpong: needs 2 ranks (vipl-run -n 2)\n");
        bip_finalize();
        return 2;
    }
    size_t maxsz = 1;
    for (size_t s : sizes) maxsz = std::max(maxsz, s);
    std::vector<uint8_t> out(maxsz), in(maxsz);
    std::vector<viastack::BandwidthSample> curve;
    if (me == 0)
        std::printf("# eager up to %ld B (rank 1's buffers); %s\n# %10s %12s %12s %12s %10s  %s\n", bip_eager_max(1),
                    stream ? "one-way streaming" : "ping-pong, median of round trips / 2", "bytes",
                    stream ? "ns/msg" : "RTT/2 ns", "p10", "p90", "MB/s", "protocol");
    for (size_t n : sizes) {
        std::vector<double> t;
        t.reserve(size_t(iters));
        const int total = warmup + iters;
        if (me <= 1) {
            fill(out, n, unsigned(n));
            size_t got = 0;
            if (!stream) {
                for (int i = 0; i < total; i++) {
                    if (me == 0) {
                        // The reply's receive is posted first: rank 1's long
                        // send (rendezvous) waits for it.
                        const double t0 = now_ns();
                        if ((rc = bip_irecv(1, in.data(), n)) != BIP_OK) die("bip_irecv", rc);
                        if ((rc = bip_send(1, 0, out.data(), n)) != BIP_OK) die("bip_send", rc);
                        int src = bip_rwait(&got);
                        const double t1 = now_ns();
                        if (src < 0) die("bip_rwait", src);
                        if (i >= warmup) t.push_back((t1 - t0) / 2);
                        if (i == 0 || i == total - 1) check(in, n, unsigned(n), src, 1, got);
                    } else {
                        int src = bip_recv(0, in.data(), n, &got);
                        if (src < 0) die("bip_recv", src);
                        if (i == 0 || i == total - 1) check(in, n, unsigned(n), src, 0, got);
                        if ((rc = bip_send(0, 1, out.data(), n)) != BIP_OK) die("bip_send", rc);
                    }
                }
            } else {
                // Rounds of `iters` messages after one round of warm-up.
                for (int round = 0; round < 2 + (iters < 50 ? 4 : 0); round++) {
                    const double t0 = now_ns();
                    for (int i = 0; i < iters; i++) {
                        if (me == 0) {
                            if ((rc = bip_send(1, 0, out.data(), n)) != BIP_OK) die("bip_send", rc);
                        } else {
                            int src = bip_recv(0, in.data(), n, &got);
                            if (src < 0) die("bip_recv", src);
                            if (i == iters - 1) check(in, n, unsigned(n), src, 0, got);
                        }
                    }
                    char ack = 0;
                    if (me == 0) {
                        if ((rc = bip_recv(1, &ack, 1, nullptr)) < 0) die("bip_recv(ack)", rc);
                    } else if ((rc = bip_send(0, 1, &ack, 1)) != BIP_OK) {
                        die("bip_send(ack)", rc);
                    }
                    if (round > 0) t.push_back((now_ns() - t0) / iters);
                }
            }
        }
        if (me != 0) continue;
        std::sort(t.begin(), t.end());
        const double med = t[t.size() / 2], p10 = t[t.size() / 10], p90 = t[t.size() * 9 / 10];
        const double mbs = med > 0 ? double(n) / (med / 1e3) : 0;
        char proto[64];
        if (long(n) <= bip_eager_max(1)) std::snprintf(proto, sizeof proto, "eager");
        else std::snprintf(proto, sizeof proto, "rendezvous, %zu B fragments", bip_fragment_size(n));
        std::printf("  %10zu %12.0f %12.0f %12.0f %10.2f  %s\n", n, med, p10, p90, mbs, proto);
        std::fflush(stdout);
        if (n > 0) curve.push_back({n, med / 1e3});
    }
    if (me == 0 && curve.size() >= 2) {
        try {
            viastack::FmMetrics m = viastack::fit_fm_metrics(curve);
            std::printf("# t0 = %.2f us  r_inf = %.1f MB/s  n_1/2 = %.0f B (model t0*r_inf = %.0f B)  peak %.1f MB/s\n",
                        m.t0_us, m.r_inf_mb_s, m.n_half_bytes, m.n_half_model_bytes, m.r_peak_mb_s);
        } catch (const std::exception &e) { std::printf("# fit: %s\n", e.what()); }
    }
    rc = bip_finalize();
    if (rc != BIP_OK) die("bip_finalize", rc);
    if (g_bad) std::printf("ERROR: %d bad messages\n", g_bad);
    return g_bad ? 1 : 0;
}
