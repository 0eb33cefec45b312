// threads_splitc.cpp - a Split-C program whose process has a second thread
// doing AM-2 traffic on its own VIs (issue #31, docs/am.md "Threads"):
// Split-C stays single threaded, its runtime must not break beside it.
//
//   vipl-run -n N threads_splitc
//
// The Split-C thread (splitc_main) writes, puts, stores to and reads from
// its neighbours' global data in rounds, checking every value.  Meanwhile a
// second thread opens AM (its own NIC handle, bundle, endpoint and VIs) and
// ping-pongs short and medium requests with the same thread of every other
// process, checking the replies.  The AM endpoint names are exchanged through
// Split-C global memory before the thread starts.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "am.h"
#include "splitc/splitc.hpp"

namespace {

constexpr int kMaxProcs = 8;
constexpr int kRounds = 40;
constexpr int kWords = 64;
constexpr int kAmPerPeer = 500;

// Static data: at one address in every process (non-PIE), so global pointers
// to it are valid everywhere.
en_t am_names[kMaxProcs];
int64_t words[kWords];    // written by the left neighbour
int64_t stored[kWords];   // stored into by the left neighbour
int64_t readable[kWords]; // read by the right neighbour

std::atomic<int> am_errors{0};
std::atomic<int> am_replies{0};
int me, np;
std::atomic<bool> am_ready{false}, am_stop{false};

int64_t value(int proc, int round, int i) { return (int64_t(proc) << 40) + (int64_t(round) << 16) + i; }

void ping(void *token, void *buf, size_t n, int32_t from, int32_t seq) {
    const uint8_t *p = static_cast<const uint8_t *>(buf);
    for (size_t i = 0; i < n; i++)
        if (p[i] != uint8_t(from + seq + i)) {
            am_errors++;
            break;
        }
    if (AM_Reply2(token, 11, me, seq) != AM_OK) am_errors++;
}
void pong(void *, int32_t, int32_t) { am_replies++; }

// The second thread: AM on its own bundle, endpoint and VIs.
void am_thread(eb_t eb, ep_t ep) {
    uint8_t buf[256];
    const int expect = (np - 1) * kAmPerPeer;
    for (int s = 0; s < kAmPerPeer; s++)
        for (int p = 0; p < np; p++) {
            if (p == me) continue;
            const size_t n = 1 + size_t(s) % sizeof buf;
            for (size_t i = 0; i < n; i++) buf[i] = uint8_t(me + s + int(i));
            if (AM_RequestI2(ep, p, 10, buf, int(n), me, s) != AM_OK) am_errors++;
            AM_Poll(eb);
        }
    const double end = splitc::get_seconds() + 30;
    while (am_replies < expect && splitc::get_seconds() < end) AM_Poll(eb);
    if (am_replies != expect) {
        std::fprintf(stderr, "proc %d: FAILED AM thread: %d of %d replies\n", me, am_replies.load(), expect);
        am_errors++;
    }
    am_ready = true;
    while (!am_stop) AM_Poll(eb); // the other processes' requests until all are done
}

int splitc_errors;
void check(bool ok, const char *what, int round, int i) {
    if (ok) return;
    if (splitc_errors++ < 10) std::fprintf(stderr, "proc %d: FAILED %s round %d word %d\n", me, what, round, i);
}

} // namespace

int splitc_main(int, char **) {
    me = splitc::myproc();
    np = splitc::procs();
    if (np > kMaxProcs) {
        if (me == 0) std::fprintf(stderr, "threads_splitc: at most %d processors\n", kMaxProcs);
        return 2;
    }
    eb_t eb;
    ep_t ep;
    en_t name;
    if (AM_Init() != AM_OK || AM_AllocateBundle(AM_SEQ, &eb) != AM_OK || AM_AllocateEndpoint(eb, &ep, &name) != AM_OK ||
        AM_SetHandler(ep, 10, ping) != AM_OK || AM_SetHandler(ep, 11, pong) != AM_OK || AM_SetTag(ep, 5) != AM_OK) {
        std::fprintf(stderr, "proc %d: FAILED AM set-up\n", me);
        return 1;
    }
    // Exchange the AM endpoint names through Split-C.
    for (int p = 0; p < np; p++) splitc::write(splitc::toglobal(p, &am_names[me]), name);
    splitc::barrier();
    for (int p = 0; p < np; p++)
        if (p != me && AM_Map(ep, p, am_names[p], 5) != AM_OK) {
            std::fprintf(stderr, "proc %d: FAILED AM_Map %d\n", me, p);
            return 1;
        }
    splitc::barrier();
    // From here on the AM bundle belongs to the second thread.
    std::thread other(am_thread, eb, ep);

    const int right = (me + 1) % np, left = (me + np - 1) % np;
    for (int r = 0; r < kRounds; r++) {
        for (int i = 0; i < kWords; i++) readable[i] = value(me, r, i);
        splitc::barrier();
        for (int i = 0; i < kWords; i++) {
            if (i % 2) splitc::write(splitc::toglobal(right, &words[i]), value(me, r, i));
            else splitc::put(splitc::toglobal(right, &words[i]), value(me, r, i));
            splitc::store(splitc::toglobal(right, &stored[i]), value(me, r, -i));
        }
        splitc::sync();
        std::vector<int64_t> got(kWords);
        for (int i = 0; i < kWords; i++) splitc::get(got[size_t(i)], splitc::toglobal(left, &readable[i]));
        splitc::sync();
        splitc::all_store_sync();
        for (int i = 0; i < kWords; i++) {
            check(words[i] == value(left, r, i), "write/put", r, i);
            check(stored[i] == value(left, r, -i), "store", r, i);
            check(got[size_t(i)] == value(left, r, i), "get", r, i);
        }
        splitc::barrier();
    }
    while (!am_ready) std::this_thread::yield();
    splitc::barrier(); // every AM thread has its replies: nobody sends to our endpoint any more
    am_stop = true;
    other.join();
    const long total = splitc::all_reduce_to_all_add(long(splitc_errors) + am_errors.load());
    AM_Terminate();
    if (me == 0)
        std::printf("threads_splitc: %d processors, %d Split-C rounds beside %d AM requests per peer, %ld errors\n", np,
                    kRounds, kAmPerPeer, total);
    return total ? 1 : 0;
}
