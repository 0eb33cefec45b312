// stream.cpp - see stream.hpp.
//
// Descriptors: each sending thread has a ring of its own slots and each
// receiving thread a few confirmation slots; a slot is busy from its post
// until some thread's VipSendDone hands it back (on a VI two threads post to,
// either thread may reap the other's: the queue completes in posting order,
// whoever polls).  A confirmation names the sending thread it credits, so on a
// shared VI the thread that takes it credits the other.
#include "stream.hpp"

#include "timer.hpp"
#include "vipl_wait.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace thbench {
namespace {

// Threads of one stream: a failure in one stops the others' waits.
struct Crew {
    std::atomic<bool> stop{false};
    std::mutex m;
    std::exception_ptr error;
    std::vector<std::thread> threads;

    template <class Fn>
    void start(Fn fn) {
        threads.emplace_back([this, fn]() mutable { run_here(fn); });
    }
    // On the calling thread: a variant `on_main` runs there.
    template <class Fn>
    void run_here(Fn &fn) {
        try {
            fn();
        } catch (...) {
            std::lock_guard<std::mutex> g(m);
            if (!error) error = std::current_exception();
            stop.store(true);
        }
    }
    void join() {
        for (auto &t : threads) t.join();
        threads.clear();
        if (error) std::rethrow_exception(error);
    }
};

// A polling loop's waiting: the layers' policy (VIASTACK_WAIT: a window of
// idle polls, then sched_yield, so threads that outnumber the CPUs take
// turns), a deadline, and the crew's stop flag.
class Waiter {
public:
    Waiter(Crew &crew, int spinning_threads, const char *what, WaitCounts &counts)
        : crew_(crew), what_(what), counts_(counts) {
        vipl_wait::Mode mode;
        if (!vipl_wait::mode_from_env(&mode))
            throw std::runtime_error(fmt::format("VIASTACK_WAIT must be {}", vipl_wait::kAllowed));
        vipl_wait::init(ws_, mode, spinning_threads);
        start_ = logp::ticks();
    }
    void progress() {
        vipl_wait::progress(ws_);
        idle_ = 0;
        start_ = 0;
    }
    void idle() {
        ++counts_.idle_polls;
        if (vipl_wait::idle(ws_)) {
            ++counts_.yields;
            vipl_wait::give_up_cpu(ws_, [] { sched_yield(); });
        }
        if ((++idle_ & 1023) != 0) return;
        if (crew_.stop.load(std::memory_order_relaxed)) throw std::runtime_error("stopped: another thread failed");
        if (start_ == 0) start_ = logp::ticks();
        else if (logp::ticks_to_ns(logp::ticks() - start_) > kTimeoutS * 1e9)
            throw std::runtime_error(fmt::format("{}: nothing for {} s (is the peer alive?)", what_, kTimeoutS));
    }

private:
    Crew &crew_;
    const char *what_;
    WaitCounts &counts_; // this thread's
    vipl_wait::WaitState ws_;
    std::uint64_t start_ = 0;
    unsigned idle_ = 0;
};

// Hands back the completed sends of a VI.  Returns how many.
int reap_sends(const LinkEnd &e) {
    int n = 0;
    VIP_DESCRIPTOR *d = nullptr;
    while (VipSendDone(e.vi, &d) == VIP_SUCCESS) {
        check_done(d, "a send");
        slot_of(d)->busy.store(0, std::memory_order_release);
        ++n;
    }
    return n;
}

Msg read_msg(const VIP_DESCRIPTOR *d) {
    Msg m;
    std::memcpy(&m, slot_of(const_cast<VIP_DESCRIPTOR *>(d))->buf, sizeof m);
    return m;
}

// ------------------------------------------------------------ sending side

struct SendShared {
    Setup &s;
    const Variant &v;
    const StreamParams &p;
    int spinning;
    std::atomic<int> credits[kMaxThreads] = {};
    std::atomic<bool> ready[kMaxThreads] = {}; // the receiving thread of this thread's link runs
    std::atomic<int> arrived{0};
    std::uint64_t t0[kMaxThreads] = {}, t1[kMaxThreads] = {}, post_ticks[kMaxThreads] = {};
    bool preempted[kMaxThreads] = {};
    WaitCounts waits[kMaxThreads] = {};
};

void sender(SendShared &sh, Crew &crew, int t) {
    const Setup &s = sh.s;
    const LinkEnd &e = s.send_end[std::size_t(std::min(t, s.shape.links - 1))];
    const std::vector<Slot *> &ring = s.send_ring[std::size_t(t)];
    const int W = sh.p.window;
    WaitCounts counts; // from the clock's start on
    Waiter wait(crew, sh.spinning, "a sending thread", counts);
    // One poll of the VI: completed sends, and a confirmation or a ready
    // message (for any thread).
    auto poll = [&] {
        bool any = reap_sends(e) > 0;
        VIP_DESCRIPTOR *d = nullptr;
        if (VipRecvDone(e.vi, &d) == VIP_SUCCESS) {
            check_done(d, "a confirmation's receive");
            const Msg m = read_msg(d);
            if ((m.kind != kConfirm && m.kind != kReady) || m.stream != sh.p.stream ||
                m.thread >= unsigned(sh.v.threads))
                throw std::runtime_error(fmt::format("a stray message at the sender: kind {:#x}, stream {}, thread {}",
                                                     m.kind, m.stream, m.thread));
            post_recv(e, slot_of(d));
            if (m.kind == kReady) sh.ready[m.thread].store(true, std::memory_order_release);
            else sh.credits[m.thread].fetch_add(1, std::memory_order_release);
            any = true;
        }
        if (any) wait.progress();
        else wait.idle();
    };
    // Untimed: the receiving thread of this link runs (its ready message came).
    while (!sh.ready[t].load(std::memory_order_acquire)) poll();
    // The threads start together (an untimed spin; arrival order is free).
    sh.arrived.fetch_add(1);
    while (sh.arrived.load() < sh.v.threads) std::this_thread::yield();
    const long switches = logp::involuntary_switches();
    std::size_t next = 0;
    Slot *win[kMaxWindow];
    counts = {};
    sh.t0[t] = logp::ticks();
    for (int b = 0; b < sh.p.blocks; ++b) {
        // Free slots and filled descriptors first: the timed part is the posts alone.
        for (int i = 0; i < W; ++i) {
            Slot *sl = ring[(next + std::size_t(i)) % ring.size()];
            while (sl->busy.load(std::memory_order_acquire)) poll();
            fill_send(e, sl, Msg{kData, std::uint32_t(t), std::uint32_t(b * W + i), sh.p.stream});
            sl->busy.store(1, std::memory_order_relaxed);
            win[i] = sl;
        }
        next += std::size_t(W);
        const std::uint64_t p0 = logp::ticks();
        for (int i = 0; i < W; ++i) check(VipPostSend(e.vi, &win[i]->desc, e.nic->mh), "VipPostSend");
        sh.post_ticks[t] += logp::ticks() - p0;
        while (sh.credits[t].load(std::memory_order_acquire) < b + 1) poll();
    }
    sh.t1[t] = logp::ticks();
    sh.waits[t] = counts;
    sh.preempted[t] = logp::involuntary_switches() != switches;
    // Untimed: every slot of this thread handed back before the next stream.
    for (Slot *sl : ring)
        while (sl->busy.load(std::memory_order_acquire)) poll();
}

SendTimes senders(Setup &s, const Variant &v, const StreamParams &p, int spinning, Crew &crew) {
    SendShared sh{s, v, p, spinning};
    for (int t = 0; t < v.threads; ++t) {
        auto body = [&sh, &crew, t] { sender(sh, crew, t); };
        if (v.on_main) crew.run_here(body);
        else crew.start(body);
    }
    crew.join();
    SendTimes out;
    std::uint64_t first = sh.t0[0], last = sh.t1[0], post = 0;
    for (int t = 0; t < v.threads; ++t) {
        first = std::min(first, sh.t0[t]);
        last = std::max(last, sh.t1[t]);
        post += sh.post_ticks[t];
        out.preempted |= sh.preempted[t];
        out.wait += sh.waits[t];
    }
    out.messages = std::uint64_t(v.threads) * std::uint64_t(p.blocks) * std::uint64_t(p.window);
    out.stream_ns = logp::ticks_to_ns(last - first);
    out.start_ticks = first;
    out.post_ns = logp::ticks_to_ns(post) / double(out.messages);
    return out;
}

// ---------------------------------------------------------- receiving side

struct RecvShared {
    RecvShared(Setup &s_, const Variant &v_, const StreamParams &p_, int spinning_)
        : s(s_), v(v_), p(p_), spinning(spinning_) {}
    Setup &s;
    const Variant &v;
    const StreamParams &p;
    int spinning;
    std::atomic<std::uint64_t> taken{0};
    std::atomic<int> got[kMaxThreads] = {};
    std::unique_ptr<std::atomic<std::uint8_t>[]> seen; // per (sending thread, number): exactly once
    std::uint32_t next_seq[kMaxThreads] = {};          // where one thread takes a link's receives: the order
    std::uint32_t confirms[kMaxThreads] = {};          // per receiving thread: confirmations sent
    WaitCounts waits[kMaxThreads] = {};                // per receiving thread
    std::uint64_t ready_at[kMaxThreads] = {};          // per receiving thread: when it sent its ready messages
};

// Posts a confirmation or ready message on e from receiving thread r's next
// confirmation slot, once that slot is handed back.
void send_control(RecvShared &sh, int r, const LinkEnd &e, const Msg &m, Waiter &wait) {
    const Setup &s = sh.s;
    const std::vector<Slot *> &ring = s.confirm_ring[std::size_t(r)];
    Slot *sl = ring[sh.confirms[r]++ % ring.size()];
    while (sl->busy.load(std::memory_order_acquire)) {
        int reaped = 0;
        for (const LinkEnd &x : s.recv_end) reaped += reap_sends(x);
        if (reaped) wait.progress();
        else wait.idle();
    }
    fill_send(e, sl, m);
    sl->busy.store(1, std::memory_order_relaxed);
    check(VipPostSend(e.vi, &sl->desc, e.nic->mh),
          m.kind == kReady ? "VipPostSend (ready)" : "VipPostSend (confirmation)");
}

// Receiving thread r runs: it tells the sending threads of its link (link r;
// with one link, every sending thread), whose clocks start once they know.
void announce(RecvShared &sh, int r, Waiter &wait) {
    const Setup &s = sh.s;
    if (r >= s.shape.links) return;
    sh.ready_at[r] = logp::ticks();
    for (int t = 0; t < sh.v.threads; ++t)
        if (std::min(t, s.shape.links - 1) == r)
            send_control(sh, r, s.recv_end[std::size_t(r)], Msg{kReady, std::uint32_t(t), 0, sh.p.stream}, wait);
}

// Takes one received message of link `link` (its descriptor d), checks it,
// reposts the receive and, at the end of a window, confirms it.
void take(RecvShared &sh, int r, int link, VIP_DESCRIPTOR *d, bool ordered, Waiter &wait) {
    const Setup &s = sh.s;
    const LinkEnd &e = s.recv_end[std::size_t(link)];
    check_done(d, "a receive");
    const Msg m = read_msg(d);
    const std::uint64_t per_thread = std::uint64_t(sh.p.blocks) * std::uint64_t(sh.p.window);
    if (m.kind != kData || m.stream != sh.p.stream || m.thread >= unsigned(sh.v.threads) || m.seq >= per_thread)
        throw std::runtime_error(fmt::format("a stray message at the receiver: kind {:#x}, stream {} (expected {}), "
                                             "thread {}, number {}",
                                             m.kind, m.stream, sh.p.stream, m.thread, m.seq));
    if (sh.seen[m.thread * per_thread + m.seq].exchange(1))
        throw std::runtime_error(fmt::format("message {} of thread {} arrived twice", m.seq, m.thread));
    if (ordered && sh.next_seq[m.thread]++ != m.seq)
        throw std::runtime_error(fmt::format("message {} of thread {} arrived out of order (expected {})", m.seq,
                                             m.thread, sh.next_seq[m.thread] - 1));
    post_recv(e, slot_of(d));
    const int n = sh.got[m.thread].fetch_add(1) + 1;
    if (n % sh.p.window == 0) send_control(sh, r, e, Msg{kConfirm, m.thread, std::uint32_t(n), sh.p.stream}, wait);
    sh.taken.fetch_add(1, std::memory_order_release);
}

void receiver(RecvShared &sh, Crew &crew, int r) {
    const Setup &s = sh.s;
    Waiter wait(crew, sh.spinning, "a receiving thread", sh.waits[r]);
    announce(sh, r, wait);
    const std::uint64_t per_thread = std::uint64_t(sh.p.blocks) * std::uint64_t(sh.p.window);
    const std::uint64_t total = per_thread * std::uint64_t(sh.v.threads);
    if (s.shape.shared_cq) {
        // Every receiving thread takes from the CQ, for any link.
        while (sh.taken.load(std::memory_order_acquire) < total) {
            VIP_VI_HANDLE vi = nullptr;
            VIP_BOOLEAN rq = VIP_FALSE;
            const VIP_RETURN rc = VipCQDone(s.recv_cq, &vi, &rq);
            if (rc == VIP_NOT_DONE) {
                int reaped = 0;
                for (const LinkEnd &x : s.recv_end) reaped += reap_sends(x);
                if (reaped) wait.progress();
                else wait.idle();
                continue;
            }
            check(rc, "VipCQDone");
            int link = 0;
            while (link < s.shape.links && s.recv_end[std::size_t(link)].vi != vi) ++link;
            if (link == s.shape.links || rq != VIP_TRUE)
                throw std::runtime_error("a CQ entry names no receive queue of this setup");
            VIP_DESCRIPTOR *d = nullptr;
            check(VipRecvDone(vi, &d), "VipRecvDone after its CQ entry");
            take(sh, r, link, d, false, wait);
            wait.progress();
        }
    } else {
        // This thread alone takes its link's receives: the messages of each
        // sending thread come in order.
        const int link = std::min(r, s.shape.links - 1);
        const LinkEnd &e = s.recv_end[std::size_t(link)];
        const int senders_here = s.shape.links == 1 ? sh.v.threads : 1;
        std::uint64_t mine = 0;
        while (mine < per_thread * std::uint64_t(senders_here)) {
            VIP_DESCRIPTOR *d = nullptr;
            const VIP_RETURN rc = VipRecvDone(e.vi, &d);
            if (rc == VIP_NOT_DONE) {
                if (reap_sends(e)) wait.progress();
                else wait.idle();
                continue;
            }
            check(rc, "VipRecvDone");
            take(sh, r, link, d, true, wait);
            ++mine;
            wait.progress();
        }
    }
    // Every confirmation of this thread sent and handed back.
    for (Slot *sl : s.confirm_ring[std::size_t(r)])
        while (sl->busy.load(std::memory_order_acquire)) {
            int reaped = 0;
            for (const LinkEnd &x : s.recv_end) reaped += reap_sends(x);
            if (reaped) wait.progress();
            else wait.idle();
        }
}

int receiving_threads(const Setup &s, const Variant &v) { return s.shape.shared_cq ? v.threads : s.shape.links; }

// Starts the receiving threads, or, with here (a variant on_main in two
// ranks), runs the one there is on the calling thread.
void start_receivers(RecvShared &sh, Crew &crew, bool here) {
    const std::uint64_t per_thread = std::uint64_t(sh.p.blocks) * std::uint64_t(sh.p.window);
    sh.seen.reset(new std::atomic<std::uint8_t>[per_thread * std::uint64_t(sh.v.threads)]());
    for (int r = 0; r < receiving_threads(sh.s, sh.v); ++r) {
        auto body = [&sh, &crew, r] { receiver(sh, crew, r); };
        if (here) crew.run_here(body);
        else crew.start(body);
    }
}

RecvCount count_of(const RecvShared &sh) {
    RecvCount c;
    c.messages = sh.taken.load();
    for (int r = 0; r < receiving_threads(sh.s, sh.v); ++r) {
        c.wait += sh.waits[r];
        c.ready_ticks = std::max(c.ready_ticks, sh.ready_at[r]);
    }
    return c;
}

} // namespace

SendTimes run_senders(Setup &s, const Variant &v, const StreamParams &p, int spinning_threads) {
    Crew crew;
    return senders(s, v, p, spinning_threads, crew);
}

RecvCount run_receivers(Setup &s, const Variant &v, const StreamParams &p, int spinning_threads) {
    Crew crew;
    RecvShared sh(s, v, p, spinning_threads);
    start_receivers(sh, crew, v.on_main);
    crew.join();
    return count_of(sh);
}

SendTimes run_both(Setup &s, const Variant &v, const StreamParams &p, RecvCount *recv) {
    Crew rcrew, screw;
    const int spinning = v.threads + receiving_threads(s, v);
    RecvShared rsh(s, v, p, spinning);
    start_receivers(rsh, rcrew, false);
    SendTimes out;
    std::exception_ptr send_error;
    try {
        out = senders(s, v, p, spinning, screw);
    } catch (...) {
        send_error = std::current_exception();
        rcrew.stop.store(true);
    }
    rcrew.join();
    if (send_error) std::rethrow_exception(send_error);
    *recv = count_of(rsh);
    return out;
}

} // namespace thbench
