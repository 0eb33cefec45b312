// threads_am.cpp - AM-2 AM_PAR bundles from 4 threads per process (issue #31,
// docs/am.md "Threads").  Run under vipl-run on 2 or 4 processes:
//
//   threads_am shared    one AM_PAR bundle and endpoint per process; 4 threads
//                        send requests from it and poll it at once
//   perthread            an AM_PAR bundle and endpoint per thread; thread t
//                        talks to thread t of every other process
//   sema                 as shared, the threads waiting in AM_WaitSema (all 4
//                        at once) instead of spinning in AM_Poll
//
// Every thread sends kPerPeer requests to every other process, short, medium
// (inline and bounce-ring sizes) and long in turn, each naming (source rank,
// thread, sequence number) and carrying data derived from them; each request
// handler checks the data and replies in the same category, the reply naming
// the same triple.  Checked at the end: every request's handler ran exactly
// once, every reply's handler ran exactly once, the statistics agree, and
// every MAP channel holds all its credits again (credits exact).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "am.h"
#include "am_internal.hpp" // credits at the end: channel credit counts
#include "am_spmd.h"

namespace {

constexpr int kThreads = 4;
constexpr int kPerPeer = 120; // requests per thread per peer (40 of each category)
constexpr int kMaxProcs = 8;
constexpr uint32_t kLongBytes = 512;
constexpr uint32_t kBounceMedium = 6000; // above the 4 KB inline medium: the bounce ring

enum Handlers : handler_t {
    H_SHORT_REQ = 10,
    H_MED_REQ,
    H_LONG_REQ,
    H_SHORT_REP,
    H_MED_REP,
    H_LONG_REP,
    H_WAKE,
    H_WAKE_REP,
    H_DONE
};

int rank_, nprocs_;
std::atomic<int> errors{0};
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            std::fprintf(stderr, "rank %d: FAILED %s:%d: %s\n", rank_, __FILE__, __LINE__, #cond);                     \
            errors++;                                                                                                  \
        }                                                                                                              \
    } while (0)

// [source or replier rank][thread][seq]: how many times the handler ran.
std::atomic<int> req_seen[kMaxProcs][kThreads][kPerPeer];
std::atomic<int> rep_seen[kMaxProcs][kThreads][kPerPeer];
std::atomic<int> replies_in[kThreads]; // replies to thread t's requests
std::atomic<int> workers_done{0}, workers_exited{0};
std::atomic<bool> stop{false};
std::atomic<int> done_from{0};

uint8_t *segment;
size_t seg_bytes;

uint8_t pattern(int rank, int thread, int seq, size_t i) {
    return uint8_t(rank * 131 + thread * 31 + seq * 7 + i * 13 + 1);
}
uint32_t medium_bytes(int seq) { return seq % 20 == 4 ? kBounceMedium : 1 + uint32_t(seq * 37) % 1500; }
// Long data from rank `from` (thread, seq) lands at its own place: requests in
// the segment's first half, replies in the second.
size_t long_offset(bool reply, int from, int thread, int seq) {
    size_t idx = (size_t(from) * kThreads + size_t(thread)) * kPerPeer + size_t(seq);
    return (reply ? seg_bytes / 2 : 0) + idx * kLongBytes;
}
bool valid_triple(int r, int t, int s) {
    return r >= 0 && r < nprocs_ && t >= 0 && t < kThreads && s >= 0 && s < kPerPeer;
}
bool data_ok(const void *buf, size_t n, int r, int t, int s) {
    const uint8_t *p = static_cast<const uint8_t *>(buf);
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(r, t, s, i)) return false;
    return true;
}

void note(std::atomic<int> (&seen)[kMaxProcs][kThreads][kPerPeer], int r, int t, int s) {
    CHECK(valid_triple(r, t, s));
    if (!valid_triple(r, t, s)) return;
    CHECK(seen[r][t][s].fetch_add(1) == 0); // each handler runs once
}

// Request handlers: a0 = source rank, a1 = thread, a2 = seq.
void short_req(void *token, int32_t r, int32_t t, int32_t s) {
    note(req_seen, r, t, s);
    CHECK(AM_Reply3(token, H_SHORT_REP, rank_, t, s) == AM_OK);
}
void med_req(void *token, void *buf, size_t n, int32_t r, int32_t t, int32_t s) {
    note(req_seen, r, t, s);
    CHECK(n == medium_bytes(s) && data_ok(buf, n, r, t, s));
    std::vector<uint8_t> out(n);
    for (size_t i = 0; i < n; i++) out[i] = pattern(rank_, t, s, i);
    CHECK(AM_ReplyI3(token, H_MED_REP, out.data(), int(n), rank_, t, s) == AM_OK);
}
void long_req(void *token, void *buf, size_t n, int32_t r, int32_t t, int32_t s) {
    note(req_seen, r, t, s);
    CHECK(n == kLongBytes && data_ok(buf, n, r, t, s));
    CHECK(buf == segment + long_offset(false, r, t, s));
    static thread_local uint8_t out[kLongBytes];
    for (size_t i = 0; i < kLongBytes; i++) out[i] = pattern(rank_, t, s, i);
    CHECK(AM_ReplyXfer3(token, long_offset(true, rank_, t, s), H_LONG_REP, out, int(kLongBytes), rank_, t, s) == AM_OK);
}
// Reply handlers: a0 = replier rank, a1 = thread, a2 = seq.
void count_reply(int r, int t, int s) {
    note(rep_seen, r, t, s);
    if (t >= 0 && t < kThreads) replies_in[t]++;
}
void short_rep(void *, int32_t r, int32_t t, int32_t s) { count_reply(r, t, s); }
void med_rep(void *, void *buf, size_t n, int32_t r, int32_t t, int32_t s) {
    CHECK(n == medium_bytes(s) && data_ok(buf, n, r, t, s));
    count_reply(r, t, s);
}
void long_rep(void *, void *buf, size_t n, int32_t r, int32_t t, int32_t s) {
    CHECK(n == kLongBytes && data_ok(buf, n, r, t, s));
    CHECK(buf == segment + long_offset(true, r, t, s));
    count_reply(r, t, s);
}
void wake_req(void *token) { CHECK(AM_Reply0(token, H_WAKE_REP) == AM_OK); }
void wake_rep(void *) {}
void done_req(void *token) {
    done_from++;
    CHECK(AM_Reply0(token, H_DONE + 1) == AM_OK);
}
void done_rep(void *) {}

void set_handlers(ep_t ep) {
    CHECK(AM_SetHandler(ep, H_SHORT_REQ, short_req) == AM_OK);
    CHECK(AM_SetHandler(ep, H_MED_REQ, med_req) == AM_OK);
    CHECK(AM_SetHandler(ep, H_LONG_REQ, long_req) == AM_OK);
    CHECK(AM_SetHandler(ep, H_SHORT_REP, short_rep) == AM_OK);
    CHECK(AM_SetHandler(ep, H_MED_REP, med_rep) == AM_OK);
    CHECK(AM_SetHandler(ep, H_LONG_REP, long_rep) == AM_OK);
    CHECK(AM_SetHandler(ep, H_WAKE, wake_req) == AM_OK);
    CHECK(AM_SetHandler(ep, H_WAKE_REP, wake_rep) == AM_OK);
    CHECK(AM_SetHandler(ep, H_DONE, done_req) == AM_OK);
    CHECK(AM_SetHandler(ep, H_DONE + 1, done_rep) == AM_OK);
}

// Translation index of process p on an endpoint: p itself (self unmapped).
void send_one(ep_t ep, int peer, int t, int s) {
    int rc;
    switch (s % 3) {
    case 0: rc = AM_Request3(ep, peer, H_SHORT_REQ, rank_, t, s); break;
    case 1: {
        std::vector<uint8_t> buf(medium_bytes(s));
        for (size_t i = 0; i < buf.size(); i++) buf[i] = pattern(rank_, t, s, i);
        rc = AM_RequestI3(ep, peer, H_MED_REQ, buf.data(), int(buf.size()), rank_, t, s);
        break;
    }
    default: {
        // From the thread's own heap buffer (the registration cache path),
        // kept until the reply: AM_RequestXfer returns once it is sent.
        std::vector<uint8_t> buf(kLongBytes);
        for (size_t i = 0; i < buf.size(); i++) buf[i] = pattern(rank_, t, s, i);
        rc = AM_RequestXfer3(ep, peer, long_offset(false, rank_, t, s), H_LONG_REQ, buf.data(), int(buf.size()), rank_,
                             t, s);
        break;
    }
    }
    CHECK(rc == AM_OK);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

enum class Mode { shared, perthread, sema };

void worker(Mode mode, eb_t eb, ep_t ep, int t) {
    const int expect = (nprocs_ - 1) * kPerPeer;
    for (int s = 0; s < kPerPeer; s++) {
        for (int p = 0; p < nprocs_; p++)
            if (p != rank_) send_one(ep, p, t, s);
        AM_Poll(eb);
    }
    const double deadline = now() + 30;
    bool counted = false;
    for (;;) {
        if (stop) {
            AM_Poll(eb); // what this thread's last AM_WaitSema took
            break;
        }
        if (!counted && replies_in[t] == expect) {
            counted = true;
            workers_done++;
        }
        if (mode == Mode::sema && counted) {
            CHECK(AM_SetEventMask(eb, AM_NOTEMPTY) == AM_OK);
            CHECK(AM_WaitSema(eb) == AM_OK);
        }
        AM_Poll(eb);
        if (!counted && now() > deadline) {
            std::fprintf(stderr, "rank %d: FAILED thread %d: %d of %d replies after 30 s\n", rank_, t,
                         replies_in[t].load(), expect);
            errors++;
            workers_done++;
            counted = true;
        }
    }
    workers_exited++;
}

void check_credits(eb_t eb) {
    for (ep_t ep : eb->eps)
        for (amvia::Link *l : ep->links)
            for (int i = 0; i < l->nch; i++) {
                const auto &c = l->ch[i];
                if (c.credits() != c.credits_max())
                    std::fprintf(stderr, "rank %d: FAILED credits %d of %d on a MAP channel\n", rank_, c.credits(),
                                 c.credits_max()),
                        errors++;
            }
}

void check_counts(const std::vector<ep_t> &eps) {
    for (int r = 0; r < nprocs_; r++)
        for (int t = 0; t < kThreads; t++)
            for (int s = 0; s < kPerPeer; s++) {
                const int want = r == rank_ ? 0 : 1;
                if (req_seen[r][t][s] != want || rep_seen[r][t][s] != want) {
                    std::fprintf(
                        stderr,
                        "rank %d: FAILED rank %d thread %d seq %d: request handler ran %d, reply handler %d times\n",
                        rank_, r, t, s, req_seen[r][t][s].load(), rep_seen[r][t][s].load());
                    errors++;
                }
            }
    uint64_t sent = 0, got = 0;
    for (ep_t ep : eps) {
        amvia_stats_t st;
        CHECK(AMVIA_GetEndpointStatistics(ep, &st) == AM_OK);
        for (int c = 0; c < AMVIA_NumCategories; c++) {
            sent += st.RequestsSent[c];
            got += st.RepliesReceived[c];
        }
    }
    CHECK(sent == got); // every request answered (the wake/done ones included)
}

// Every waiter in AM_WaitSema needs a completion to wake: wake requests to
// the peers (their replies land here) until this process's threads are out.
void wake_waiters(ep_t ep) {
    while (workers_exited < kThreads) {
        for (int p = 0; p < nprocs_; p++)
            if (p != rank_) CHECK(AM_Request0(ep, p, H_WAKE) == AM_OK);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

// Shared-bundle end: every process says DONE to every other when its threads
// are out; polls until it heard DONE from all and all its requests were answered.
void finish_shared(eb_t eb, ep_t ep) {
    for (int p = 0; p < nprocs_; p++)
        if (p != rank_) CHECK(AM_Request0(ep, p, H_DONE) == AM_OK);
    const double deadline = now() + 20;
    for (;;) {
        AM_Poll(eb);
        amvia_stats_t st;
        AMVIA_GetEndpointStatistics(ep, &st);
        uint64_t sent = 0, got = 0;
        for (int c = 0; c < AMVIA_NumCategories; c++) sent += st.RequestsSent[c], got += st.RepliesReceived[c];
        if (done_from == nprocs_ - 1 && sent == got) break;
        if (now() > deadline) {
            std::fprintf(stderr, "rank %d: FAILED end: DONE from %d of %d, %llu of %llu requests answered\n", rank_,
                         done_from.load(), nprocs_ - 1, (unsigned long long)got, (unsigned long long)sent);
            errors++;
            break;
        }
    }
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: threads_am shared|perthread|sema (under vipl-run)\n");
        return 2;
    }
    Mode mode;
    if (!std::strcmp(argv[1], "shared")) mode = Mode::shared;
    else if (!std::strcmp(argv[1], "perthread")) mode = Mode::perthread;
    else if (!std::strcmp(argv[1], "sema")) mode = Mode::sema;
    else {
        std::fprintf(stderr, "threads_am: unknown scenario '%s' (shared, perthread, sema)\n", argv[1]);
        return 2;
    }
    eb_t spmd_eb;
    ep_t spmd_ep;
    if (AM_SPMDStartup(&argc, &argv, &spmd_eb, &spmd_ep) != AM_OK) return 1;
    rank_ = AM_SPMDMyProc();
    nprocs_ = AM_SPMDNumProcs();
    if (nprocs_ > kMaxProcs) {
        std::fprintf(stderr, "threads_am: at most %d processes\n", kMaxProcs);
        AM_SPMDExit(2);
    }
    seg_bytes = 2 * size_t(kMaxProcs) * kThreads * kPerPeer * kLongBytes;
    const int nb = mode == Mode::perthread ? kThreads : 1;
    std::vector<eb_t> ebs(static_cast<size_t>(nb));
    std::vector<ep_t> eps(static_cast<size_t>(nb));
    std::vector<std::vector<uint8_t>> segs(1, std::vector<uint8_t>(seg_bytes));
    segment = segs[0].data();
    en_t names[kThreads];
    for (int b = 0; b < nb; b++) {
        CHECK(AM_AllocateBundle(AM_PAR, &ebs[size_t(b)]) == AM_OK);
        CHECK(AM_AllocateEndpoint(ebs[size_t(b)], &eps[size_t(b)], &names[b]) == AM_OK);
        CHECK(AM_SetTag(eps[size_t(b)], 77) == AM_OK);
        set_handlers(eps[size_t(b)]);
    }
    if (errors) AM_SPMDExit(1);
    static en_t all[kMaxProcs][kThreads];
    AM_SPMDAllGather(names, all, sizeof names);
    for (int b = 0; b < nb; b++)
        for (int p = 0; p < nprocs_; p++)
            if (p != rank_) CHECK(AM_Map(eps[size_t(b)], p, all[p][b], 77) == AM_OK);
    AM_SPMDBarrier();

    std::vector<std::thread> threads;
    if (mode == Mode::perthread) {
        // One segment for all the thread endpoints: long offsets are distinct per thread.
        for (int b = 0; b < nb; b++) CHECK(AM_SetSeg(eps[size_t(b)], segment, seg_bytes) == AM_OK);
    } else {
        CHECK(AM_SetSeg(eps[0], segment, seg_bytes) == AM_OK);
    }
    AM_SPMDBarrier(); // every segment known before the first long message
    const double t0 = now();
    for (int t = 0; t < kThreads; t++) {
        const size_t b = mode == Mode::perthread ? size_t(t) : 0;
        threads.emplace_back(worker, mode, ebs[b], eps[b], t);
    }
    while (workers_done < kThreads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (mode == Mode::sema) {
        stop = true;
        wake_waiters(eps[0]);
        for (auto &th : threads) th.join();
        finish_shared(ebs[0], eps[0]);
    } else {
        // The threads serve the peers' requests until every process is done.
        AM_SPMDBarrier();
        stop = true;
        for (auto &th : threads) th.join();
    }
    const double secs = now() - t0;
    AM_SPMDBarrier();
    for (eb_t eb : ebs) check_credits(eb);
    check_counts(eps);
    int mine = errors, all_errors[kMaxProcs] = {};
    AM_SPMDAllGather(&mine, all_errors, sizeof mine);
    int total = 0;
    for (int p = 0; p < nprocs_; p++) total += all_errors[p];
    if (rank_ == 0)
        std::printf(
            "threads_am %s: %d processes x %d threads, %d requests each way per thread and peer, %.2f s, %d errors\n",
            argv[1], nprocs_, kThreads, kPerPeer, secs, total);
    std::fflush(stdout);
    AM_SPMDBarrier();
    for (eb_t eb : ebs) AM_FreeBundle(eb);
    AM_SPMDExit(total ? 1 : 0);
}
