// threads_rings.cpp - the work queue (WorkRing) and the CQ FIFO (CqFifo) of
// vipl/providers/common under several reaping threads at once, without a NIC:
// one thread posts and completes descriptors as fast as it can, four threads
// take them (reap / pop) in tight loops.  Every descriptor and entry must be
// taken exactly once, and each reaper must see its takes in posting order.
// (The VIPL scenarios in threads_vipl.cpp go through the same code, but their
// takes are spread out by the NIC; here takes collide all the time.)  Last,
// the window between taking a CQ entry and reading its VI while another thread
// destroys that VI: a taker must never read a VI after its destroy.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cq_fifo.hpp"
#include "work_ring.hpp"

namespace {

constexpr int kReapers = 4;
constexpr uint32_t kCount = 50000;

[[noreturn]] void fail(const char *what, unsigned long i) {
    std::fprintf(stderr, "threads_rings: %s (%lu)\n", what, i);
    std::exit(1);
}

void work_ring() {
    constexpr uint32_t kDepth = 256;
    vipl::common::WorkRing<> ring;
    ring.reset(kDepth);
    std::vector<VIP_DESCRIPTOR> descs(kCount); // never reused: a reaper reads one after taking it
    std::vector<std::atomic<uint8_t>> taken(kCount);
    std::atomic<uint32_t> done{0};
    std::thread poster([&] {
        for (uint32_t i = 0; i < kCount; ++i) {
            while (ring.full()) std::this_thread::yield();
            VIP_DESCRIPTOR *d = &descs[i];
            vipl::common::SpinGuard g(ring.post_lock);
            ring.claim(d);
            d->CS.ImmediateData = i; // which post this is
            ring.publish();
            vipl::common::complete_descriptor(d, 0);
        }
    });
    std::vector<std::thread> reapers;
    for (int r = 0; r < kReapers; ++r)
        reapers.emplace_back([&] {
            long last = -1;
            while (done.load(std::memory_order_relaxed) < kCount) {
                VIP_DESCRIPTOR *d;
                if (ring.reap(&d, [] {}) != VIP_SUCCESS) continue;
                const uint32_t i = d->CS.ImmediateData;
                if (i >= kCount || taken[i].exchange(1)) fail("a descriptor handed back twice", i);
                if (long(i) <= last) fail("a reaper saw descriptors out of order", i);
                last = i;
                done.fetch_add(1, std::memory_order_relaxed);
            }
        });
    poster.join();
    for (auto &t : reapers) t.join();
    for (uint32_t i = 0; i < kCount; ++i)
        if (!taken[i].load()) fail("a descriptor never handed back", i);
}

void cq_fifo() {
    vipl::common::CqFifo<uint32_t> fifo;
    fifo.resize(1024);
    std::vector<std::atomic<uint8_t>> taken(kCount);
    std::atomic<uint32_t> done{0};
    std::thread producer([&] {
        for (uint32_t i = 0; i < kCount; ++i)
            while (!fifo.push(i)) std::this_thread::yield();
    });
    std::vector<std::thread> consumers;
    for (int r = 0; r < kReapers; ++r)
        consumers.emplace_back([&] {
            long last = -1;
            while (done.load(std::memory_order_relaxed) < kCount) {
                uint32_t i;
                if (!fifo.pop(&i)) continue;
                if (i >= kCount || taken[i].exchange(1)) fail("a CQ entry taken twice", i);
                if (long(i) <= last) fail("a consumer saw CQ entries out of order", i);
                last = i;
                done.fetch_add(1, std::memory_order_relaxed);
            }
        });
    producer.join();
    for (auto &t : consumers) t.join();
    for (uint32_t i = 0; i < kCount; ++i)
        if (!taken[i].load()) fail("a CQ entry never taken", i);
}

// A CQ entry names a VI; VipCQDone turns it into the VI's handle.  One
// thread completes (pushes entries) and destroys VIs, as a provider's poller
// and VI destroy do under the producer's lock; four threads take entries and
// read the VI under the consumer lock (CqFifo::take), slowly.  Destroy drops a
// VI's entries (remove_if) and then marks it freed: no taker may see it freed.
void cq_destroy_window() {
    constexpr int kVis = 8;
    constexpr uint32_t kRounds = 20000;
    struct Vi {
        std::atomic<bool> alive{true};
    } vis[kVis];
    vipl::common::CqFifo<int> fifo;
    fifo.resize(256);
    std::atomic<bool> stop{false};
    std::atomic<uint32_t> taken{0};
    std::vector<std::thread> takers;
    for (int r = 0; r < kReapers; ++r)
        takers.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                fifo.take([&](int v) {
                    for (int k = 0; k < 64; ++k) { // reading the VI takes a while
                        if (!vis[v].alive.load(std::memory_order_relaxed)) fail("a taker read a destroyed VI", v);
                        __builtin_ia32_pause();
                    }
                    taken.fetch_add(1, std::memory_order_relaxed);
                    return true;
                });
            }
        });
    // (Until the takers have taken a good many: they may start late.)
    for (uint32_t i = 0; i < kRounds || taken.load(std::memory_order_relaxed) < 2000; ++i) {
        const int v = int(i % kVis);
        vis[v].alive.store(true, std::memory_order_relaxed); // created again
        for (int k = 0; k < 4; ++k) (void)fifo.push(v);
        const int gone = int((i + kVis / 2) % kVis);
        fifo.remove_if([gone](int e) { return e == gone; });
        vis[gone].alive.store(false, std::memory_order_relaxed); // freed
    }
    stop.store(true);
    for (auto &t : takers) t.join();
    if (taken.load() == 0) fail("no CQ entry was taken", 0);
}

} // namespace

int main() {
    work_ring();
    cq_fifo();
    cq_destroy_window();
    std::printf("threads_rings: %u descriptors and %u CQ entries, each taken once by %d threads\n", kCount, kCount,
                kReapers);
    return 0;
}
