// threads_vipl.cpp - VIPL used by 4 threads per process at once (issue #31,
// docs/vipl.md "Threads"), on 2 or 4 processes under vipl-run.  One scenario
// per run (argv[1]):
//
//   own     each thread its own VI (to rank r ^ (1 + t % (n-1))): rounds of
//           sends (content and order checked), an RDMA write into the peer's
//           window checked after the round's sends, an RDMA read of the peer's
//           source block; both ends at once.
//   shared  one VI per peer pair used by all 4 threads: they post sends on it
//           at once, reap each other's send completions, and take receives
//           with VipRecvWait from it; every message taken exactly once, with
//           its content, and each sender thread's messages in order in the
//           receive queue.
//   cq      each thread its own VI, every receive queue bound to one CQ, all 4
//           threads in VipCQWait on it: each CQ entry names a VI whose
//           VipRecvDone then succeeds; every message once, in order per VI.
//   conn    threads 0-1 stream on their own VIs while threads 2-3 create a VI,
//           connect it, exchange messages, disconnect and destroy it, again and
//           again; then a VI destroyed while another thread polls it.
//   mem     threads 0-2 stream while thread 3 registers a fresh buffer, sends
//           from it, deregisters it, again and again.
//
// An optional second argument scales every message and cycle count, in
// percent (default 100): the soft-RoCE guest (emulated, slow) runs the
// scenarios at 10%, which also keeps `shared` and `cq` within the verbs
// provider's default queue depth (256 descriptors).
//
// Any failed check prints what and where and aborts the job (exit non-zero).
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "vipl.h"
#include "vipl_boot.h"

namespace {

int g_rank = -1, g_size = 0;
constexpr int kThreads = 4;
constexpr uint32_t kMsg = 64;    // bytes of a message
constexpr uint32_t kBlock = 256; // bytes of an RDMA block

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        std::fprintf(stderr, "threads_vipl rank %d: %s:%d: ", g_rank, __FILE__, __LINE__);                             \
        std::fprintf(stderr, __VA_ARGS__);                                                                             \
        std::fputc('\n', stderr);                                                                                      \
        vipl_boot_abort(1, "check failed");                                                                            \
    } while (0)
#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        const VIP_RETURN rc_ = (call);                                                                                 \
        if (rc_ != VIP_SUCCESS) FAIL("%s returned %s", #call, VipxReturnString(rc_));                                  \
    } while (0)

VIP_NIC_HANDLE g_nic;
VIP_PROTECTION_HANDLE g_ptag;

int g_percent = 100; // argv[2]
// A count of the full-size run, scaled by g_percent (at least 1).
int scaled(int n) { return std::max(1, n * g_percent / 100); }

// Registered memory carved into descriptors and buffers (one arena per thread,
// plus the process's RDMA window and source).
struct Arena {
    char *base = nullptr;
    size_t size = 0, used = 0;
    VIP_MEM_HANDLE mh{};
    void init(size_t n) {
        size = n;
        if (posix_memalign(reinterpret_cast<void **>(&base), 4096, n)) FAIL("out of memory");
        std::memset(base, 0, n);
        VIP_MEM_ATTRIBUTES ma{g_ptag, VIP_TRUE, VIP_TRUE};
        CHECK(VipRegisterMem(g_nic, base, n, &ma, &mh));
    }
    void *get(size_t n) {
        const size_t at = (used + 63) & ~size_t(63);
        if (at + n > size) FAIL("arena full");
        used = at + n;
        return base + at;
    }
    VIP_DESCRIPTOR *desc() { return static_cast<VIP_DESCRIPTOR *>(get(sizeof(VIP_DESCRIPTOR))); }
};

// What a message carries: who sent it and its number, then a pattern of both.
struct Msg {
    uint32_t rank, thread, seq, magic;
};
constexpr uint32_t kMagic = 0x7ea0ad5u;
unsigned char pattern(uint32_t rank, uint32_t thread, uint32_t seq, uint32_t i) {
    return static_cast<unsigned char>(rank * 31 + thread * 17 + seq * 7 + i);
}
void write_msg(char *p, uint32_t thread, uint32_t seq) {
    const Msg m{uint32_t(g_rank), thread, seq, kMagic};
    std::memcpy(p, &m, sizeof m);
    for (uint32_t i = sizeof m; i < kMsg; ++i) p[i] = char(pattern(g_rank, thread, seq, i));
}
Msg read_msg(const char *p, uint32_t peer) {
    Msg m;
    std::memcpy(&m, p, sizeof m);
    if (m.magic != kMagic || m.rank != peer)
        FAIL("message from rank %u: header %u/%u/%u/%#x", peer, m.rank, m.thread, m.seq, m.magic);
    for (uint32_t i = sizeof m; i < kMsg; ++i)
        if (static_cast<unsigned char>(p[i]) != pattern(m.rank, m.thread, m.seq, i))
            FAIL("message %u of rank %u thread %u: byte %u wrong", m.seq, m.rank, m.thread, i);
    return m;
}

void set_send(VIP_DESCRIPTOR *d, void *buf, uint32_t len, VIP_MEM_HANDLE mh) {
    std::memset(d, 0, sizeof *d);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = 1;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = buf;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = len;
}
void set_recv(VIP_DESCRIPTOR *d, void *buf, uint32_t len, VIP_MEM_HANDLE mh) { set_send(d, buf, len, mh); }
void set_rdma(VIP_DESCRIPTOR *d, uint32_t op, void *local, VIP_MEM_HANDLE lmh, uint64_t remote, VIP_MEM_HANDLE rmh,
              uint32_t len) {
    std::memset(d, 0, sizeof *d);
    d->CS.Control = op;
    d->CS.SegCount = 2;
    d->CS.Length = len;
    d->DS[0].Remote.Data.AddressBits = remote;
    d->DS[0].Remote.Handle = rmh;
    d->DS[1].Local.Data.Address = local;
    d->DS[1].Local.Handle = lmh;
    d->DS[1].Local.Length = len;
}
void expect_ok(const VIP_DESCRIPTOR *d, uint32_t op, const char *what) {
    const uint32_t s = d->CS.Status;
    if (!(s & VIP_STATUS_DONE) || (s & VIP_STATUS_ERROR_MASK) || (s & VIP_STATUS_OP_MASK) != op) {
        char buf[256];
        FAIL("%s: status %s", what, VipxStatusString(s, buf, sizeof buf));
    }
}

// Thread t's peer: rank r ^ x with x in 1..n-1, so that the peer's thread t
// names this rank (n is 2 or 4).
int peer_of(int t) { return g_rank ^ (1 + t % (g_size - 1)); }

VIP_VI_HANDLE make_vi(VIP_CQ_HANDLE rcq = nullptr) {
    VIP_VI_ATTRIBUTES a{};
    a.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    a.MaxTransferSize = 4096;
    a.Ptag = g_ptag;
    a.EnableRdmaWrite = VIP_TRUE;
    a.EnableRdmaRead = VIP_TRUE;
    VIP_VI_HANDLE vi;
    CHECK(VipCreateVi(g_nic, &a, nullptr, rcq, &vi));
    return vi;
}

VIP_NET_ADDRESS *address(int rank, const std::string &disc) {
    auto *a = static_cast<VIP_NET_ADDRESS *>(
        std::calloc(1, VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN)));
    char name[32];
    std::snprintf(name, sizeof name, "node%d", rank);
    CHECK(VipNSGetHostByName(g_nic, name, a, 0));
    a->DiscriminatorLen = static_cast<VIP_UINT16>(disc.size());
    std::memcpy(a->HostAddress + a->HostAddressLen, disc.data(), disc.size());
    return a;
}

// Peer to peer, under a discriminator both ends compute alike.
void connect(VIP_VI_HANDLE vi, int peer, const std::string &what) {
    const int lo = g_rank < peer ? g_rank : peer, hi = g_rank ^ peer ^ lo;
    const std::string disc = what + "-" + std::to_string(lo) + "-" + std::to_string(hi);
    VIP_NET_ADDRESS *l = address(g_rank, disc), *p = address(peer, disc);
    CHECK(VipConnectPeerRequest(vi, l, p, 20000));
    VIP_VI_ATTRIBUTES ra;
    CHECK(VipConnectPeerWait(vi, &ra));
    std::free(l);
    std::free(p);
}

// The RDMA targets every rank publishes: per thread a window (written by the
// peer's thread) and a source block (read by it).
struct Published {
    uint64_t window[kThreads][2];
    uint64_t source[kThreads];
    VIP_MEM_HANDLE mh;
};
Arena g_rdma;
Published g_mine;
std::vector<Published> g_all;

void publish_rdma() {
    g_rdma.init(size_t(kThreads) * 3 * kBlock + 4096);
    for (int t = 0; t < kThreads; ++t) {
        for (int s = 0; s < 2; ++s) g_mine.window[t][s] = reinterpret_cast<uintptr_t>(g_rdma.get(kBlock));
        auto *src = static_cast<unsigned char *>(g_rdma.get(kBlock));
        for (uint32_t i = 0; i < kBlock; ++i) src[i] = pattern(g_rank, t, 0xffff, i);
        g_mine.source[t] = reinterpret_cast<uintptr_t>(src);
    }
    g_mine.mh = g_rdma.mh;
    g_all.resize(g_size);
    if (vipl_boot_allgather(&g_mine, sizeof g_mine, g_all.data()) != VIPL_BOOT_OK) FAIL("allgather");
}

// ---------------------------------------------------------------- own
// A thread with its own VI: `rounds` rounds of W sends each way, an RDMA write
// before each round's sends (checked after them) and an RDMA read after.
void own_vi_traffic(int t, int rounds, const char *tag) {
    constexpr int W = 8;
    const int peer = peer_of(t);
    Arena ar;
    ar.init(1 << 20);
    VIP_VI_HANDLE vi = make_vi();
    VIP_DESCRIPTOR *rd[2 * W], *sd[W], *wd = ar.desc(), *rdd = ar.desc();
    char *rb[2 * W], *sb[W];
    auto *wbuf = static_cast<unsigned char *>(ar.get(kBlock)), *rbuf = static_cast<unsigned char *>(ar.get(kBlock));
    for (int i = 0; i < 2 * W; ++i) {
        rd[i] = ar.desc();
        rb[i] = static_cast<char *>(ar.get(kMsg));
        set_recv(rd[i], rb[i], kMsg, ar.mh);
        CHECK(VipPostRecv(vi, rd[i], ar.mh));
    }
    for (int i = 0; i < W; ++i) {
        sd[i] = ar.desc();
        sb[i] = static_cast<char *>(ar.get(kMsg));
    }
    connect(vi, peer, std::string(tag) + std::to_string(t));
    const Published &pp = g_all[peer];
    uint32_t next_recv = 0; // the receive ring slot the next message lands in
    for (int r = 0; r < rounds; ++r) {
        // RDMA write into the peer's window slot r % 2, ahead of the sends on the same VI.
        for (uint32_t i = 0; i < kBlock; ++i) wbuf[i] = pattern(g_rank, t, r, i);
        set_rdma(wd, VIP_CONTROL_OP_RDMAWRITE, wbuf, ar.mh, pp.window[t][r % 2], pp.mh, kBlock);
        CHECK(VipPostSend(vi, wd, ar.mh));
        for (int i = 0; i < W; ++i) {
            write_msg(sb[i], t, uint32_t(r * W + i));
            set_send(sd[i], sb[i], kMsg, ar.mh);
            CHECK(VipPostSend(vi, sd[i], ar.mh));
        }
        VIP_DESCRIPTOR *d;
        CHECK(VipSendWait(vi, 20000, &d));
        if (d != wd) FAIL("thread %d: the RDMA write did not complete first", t);
        expect_ok(d, VIP_STATUS_OP_RDMA_WRITE, "RDMA write");
        for (int i = 0; i < W; ++i) {
            CHECK(VipSendWait(vi, 20000, &d));
            if (d != sd[i]) FAIL("thread %d: send %d completed out of order", t, i);
            expect_ok(d, VIP_STATUS_OP_SEND, "send");
        }
        for (int i = 0; i < W; ++i) {
            CHECK(VipRecvWait(vi, 20000, &d));
            const uint32_t slot = next_recv++ % (2 * W);
            if (d != rd[slot]) FAIL("thread %d: receive came back out of order", t);
            expect_ok(d, VIP_STATUS_OP_RECEIVE, "receive");
            const Msg m = read_msg(rb[slot], uint32_t(peer));
            if (m.thread != uint32_t(t) || m.seq != uint32_t(r * W + i))
                FAIL("thread %d round %d: got message %u of thread %u, expected %d", t, r, m.seq, m.thread, r * W + i);
            set_recv(rd[slot], rb[slot], kMsg, ar.mh);
            CHECK(VipPostRecv(vi, rd[slot], ar.mh));
        }
        // The peer's RDMA write of round r came before its sends: it is here.
        const auto *win = reinterpret_cast<const unsigned char *>(uintptr_t(g_mine.window[t][r % 2]));
        for (uint32_t i = 0; i < kBlock; ++i)
            if (win[i] != pattern(peer, t, r, i)) FAIL("thread %d round %d: RDMA-written byte %u wrong", t, r, i);
        // RDMA read of the peer's source block.
        std::memset(rbuf, 0, kBlock);
        set_rdma(rdd, VIP_CONTROL_OP_RDMAREAD, rbuf, ar.mh, pp.source[t], pp.mh, kBlock);
        CHECK(VipPostSend(vi, rdd, ar.mh));
        CHECK(VipSendWait(vi, 20000, &d));
        expect_ok(d, VIP_STATUS_OP_RDMA_READ, "RDMA read");
        for (uint32_t i = 0; i < kBlock; ++i)
            if (rbuf[i] != pattern(peer, t, 0xffff, i)) FAIL("thread %d: RDMA-read byte %u wrong", t, i);
    }
    // Both ends are done before either disconnects (the peer's last RDMA read
    // of our source must be over): a last message each way says so.
    VIP_DESCRIPTOR *bye;
    write_msg(sb[0], t, uint32_t(rounds * W));
    set_send(sd[0], sb[0], kMsg, ar.mh);
    CHECK(VipPostSend(vi, sd[0], ar.mh));
    CHECK(VipSendWait(vi, 20000, &bye));
    expect_ok(bye, VIP_STATUS_OP_SEND, "last send");
    CHECK(VipRecvWait(vi, 20000, &bye));
    expect_ok(bye, VIP_STATUS_OP_RECEIVE, "last receive");
    const Msg last = read_msg(static_cast<char *>(bye->DS[0].Local.Data.Address), uint32_t(peer));
    if (last.seq != uint32_t(rounds * W)) FAIL("thread %d: last message %u", t, last.seq);
    CHECK(VipDisconnect(vi));
    VIP_DESCRIPTOR *d;
    while (VipRecvDone(vi, &d) == VIP_SUCCESS) {}
    CHECK(VipDestroyVi(vi));
}

void run_threads(void (*body)(int)) {
    std::vector<std::thread> th;
    for (int t = 0; t < kThreads; ++t) th.emplace_back(body, t);
    for (auto &x : th) x.join();
}

void scenario_own() {
    run_threads([](int t) { own_vi_traffic(t, scaled(40), "own"); });
}

// ---------------------------------------------------------------- shared
// Ranks pair up (r ^ 1); one VI per pair, used by every thread.
int g_shared_per_thread; // scaled(200), set by scenario_shared
struct SharedVi {
    VIP_VI_HANDLE vi;
    Arena ar;
    std::vector<VIP_DESCRIPTOR *> rd;
    std::vector<char *> rb;
    std::atomic<int> recv_taken{0}, send_taken{0};
    std::vector<std::atomic<uint8_t>> seen, sent_done; // exactly once
};

void scenario_shared() {
    const int peer = g_rank ^ 1;
    g_shared_per_thread = scaled(200);
    const int total = kThreads * g_shared_per_thread;
    SharedVi s;
    s.ar.init(8 << 20);
    s.vi = make_vi();
    s.seen = std::vector<std::atomic<uint8_t>>(total);
    s.sent_done = std::vector<std::atomic<uint8_t>>(total);
    for (int i = 0; i < total; ++i) { // every receive posted before any send
        s.rd.push_back(s.ar.desc());
        s.rb.push_back(static_cast<char *>(s.ar.get(kMsg)));
        set_recv(s.rd[i], s.rb[i], kMsg, s.ar.mh);
        CHECK(VipPostRecv(s.vi, s.rd[i], s.ar.mh));
    }
    std::vector<VIP_DESCRIPTOR *> sd(total);
    std::vector<char *> sb(total);
    for (int i = 0; i < total; ++i) {
        sd[i] = s.ar.desc();
        sb[i] = static_cast<char *>(s.ar.get(kMsg));
    }
    connect(s.vi, peer, "shared");
    if (vipl_boot_barrier() != VIPL_BOOT_OK) FAIL("barrier");
    static SharedVi *g;
    g = &s;
    static std::vector<VIP_DESCRIPTOR *> *gsd;
    static std::vector<char *> *gsb;
    gsd = &sd;
    gsb = &sb;
    run_threads([](int t) {
        SharedVi &s = *g;
        const int peer = g_rank ^ 1;
        const int total = kThreads * g_shared_per_thread;
        for (int k = 0; k < g_shared_per_thread; ++k) {
            const int i = t * g_shared_per_thread + k;
            write_msg((*gsb)[i], t, k);
            set_send((*gsd)[i], (*gsb)[i], kMsg, s.ar.mh);
            CHECK(VipPostSend(s.vi, (*gsd)[i], s.ar.mh));
            // Take whatever send completed (perhaps another thread's).
            VIP_DESCRIPTOR *d;
            while (VipSendDone(s.vi, &d) == VIP_SUCCESS) {
                expect_ok(d, VIP_STATUS_OP_SEND, "shared send");
                const long j = std::find(gsd->begin(), gsd->end(), d) - gsd->begin();
                if (j == total || s.sent_done[j].exchange(1)) FAIL("send completion %ld handed back twice", j);
                s.send_taken.fetch_add(1);
            }
            // Take a receive if one is there.
            if (VipRecvDone(s.vi, &d) == VIP_SUCCESS) {
                const Msg m = read_msg(static_cast<char *>(d->DS[0].Local.Data.Address), peer);
                if (m.thread >= kThreads || m.seq >= uint32_t(g_shared_per_thread) ||
                    s.seen[m.thread * g_shared_per_thread + m.seq].exchange(1))
                    FAIL("message %u of thread %u taken twice", m.seq, m.thread);
                s.recv_taken.fetch_add(1);
            }
        }
        // Then wait for the rest, several threads in VipRecvWait / VipSendWait at once.
        while (s.recv_taken.load() < total) {
            VIP_DESCRIPTOR *d;
            const VIP_RETURN rc = VipRecvWait(s.vi, 20, &d);
            if (rc == VIP_TIMEOUT) continue;
            if (rc != VIP_SUCCESS) FAIL("VipRecvWait: %s", VipxReturnString(rc));
            expect_ok(d, VIP_STATUS_OP_RECEIVE, "shared receive");
            const Msg m = read_msg(static_cast<char *>(d->DS[0].Local.Data.Address), peer);
            if (m.thread >= kThreads || m.seq >= uint32_t(g_shared_per_thread) ||
                s.seen[m.thread * g_shared_per_thread + m.seq].exchange(1))
                FAIL("message %u of thread %u taken twice", m.seq, m.thread);
            s.recv_taken.fetch_add(1);
        }
        while (s.send_taken.load() < total) {
            VIP_DESCRIPTOR *d;
            const VIP_RETURN rc = VipSendWait(s.vi, 20, &d);
            if (rc == VIP_TIMEOUT) continue;
            if (rc != VIP_SUCCESS) FAIL("VipSendWait: %s", VipxReturnString(rc));
            expect_ok(d, VIP_STATUS_OP_SEND, "shared send");
            const long j = std::find(gsd->begin(), gsd->end(), d) - gsd->begin();
            if (j == total || s.sent_done[j].exchange(1)) FAIL("send completion %ld handed back twice", j);
            s.send_taken.fetch_add(1);
        }
    });
    // Order per work queue: the receive queue filled its descriptors in
    // posting order, so each sender thread's messages are in order along it.
    int last[kThreads];
    for (int &x : last) x = -1;
    for (int i = 0; i < total; ++i) {
        const Msg m = read_msg(s.rb[i], uint32_t(peer));
        if (int(m.seq) <= last[m.thread])
            FAIL("thread %u's message %u landed after %d", m.thread, m.seq, last[m.thread]);
        last[m.thread] = int(m.seq);
    }
    for (int i = 0; i < total; ++i)
        if (!s.seen[i].load() || !s.sent_done[i].load()) FAIL("message or send completion %d missing", i);
    if (vipl_boot_barrier() != VIPL_BOOT_OK) FAIL("barrier");
    CHECK(VipDisconnect(s.vi));
    CHECK(VipDestroyVi(s.vi));
}

// ---------------------------------------------------------------- cq
int g_cq_per_thread; // scaled(300), set by scenario_cq
VIP_CQ_HANDLE g_cq;
VIP_VI_HANDLE g_cq_vi[kThreads];
std::vector<VIP_DESCRIPTOR *> g_cq_rd[kThreads];
std::atomic<int> g_cq_taken{0};
std::atomic<int> g_cq_next[kThreads];

void scenario_cq() {
    g_cq_per_thread = scaled(300);
    CHECK(VipCreateCQ(g_nic, kThreads * g_cq_per_thread, &g_cq));
    static Arena ar;
    ar.init(8 << 20);
    for (int t = 0; t < kThreads; ++t) {
        g_cq_vi[t] = make_vi(g_cq);
        for (int i = 0; i < g_cq_per_thread; ++i) {
            VIP_DESCRIPTOR *d = ar.desc();
            set_recv(d, ar.get(kMsg), kMsg, ar.mh);
            CHECK(VipPostRecv(g_cq_vi[t], d, ar.mh));
            g_cq_rd[t].push_back(d);
        }
    }
    run_threads([](int t) { connect(g_cq_vi[t], peer_of(t), "cq" + std::to_string(t)); });
    if (vipl_boot_barrier() != VIPL_BOOT_OK) FAIL("barrier");
    static VIP_DESCRIPTOR *send_d[kThreads];
    static char *send_b[kThreads];
    for (int t = 0; t < kThreads; ++t) {
        send_d[t] = ar.desc();
        send_b[t] = static_cast<char *>(ar.get(kMsg));
    }
    run_threads([](int t) {
        VIP_DESCRIPTOR *sd = send_d[t];
        char *sb = send_b[t];
        int sent = 0;
        for (;;) {
            if (sent < g_cq_per_thread) {
                write_msg(sb, t, sent);
                set_send(sd, sb, kMsg, ar.mh);
                CHECK(VipPostSend(g_cq_vi[t], sd, ar.mh));
                VIP_DESCRIPTOR *d;
                CHECK(VipSendWait(g_cq_vi[t], 20000, &d));
                expect_ok(d, VIP_STATUS_OP_SEND, "send");
                ++sent;
            } else if (g_cq_taken.load() >= kThreads * g_cq_per_thread) {
                break;
            }
            VIP_VI_HANDLE vi;
            VIP_BOOLEAN rq;
            const VIP_RETURN rc = VipCQWait(g_cq, sent < g_cq_per_thread ? 0 : 20, &vi, &rq);
            if (rc == VIP_TIMEOUT) continue;
            if (rc != VIP_SUCCESS) FAIL("VipCQWait: %s", VipxReturnString(rc));
            int v = 0;
            while (v < kThreads && g_cq_vi[v] != vi) ++v;
            if (v == kThreads || !rq) FAIL("CQ entry names no receive queue of ours");
            VIP_DESCRIPTOR *d;
            // The entry is one completed receive of VI v: its descriptor is there.
            const VIP_RETURN rd = VipRecvDone(vi, &d);
            if (rd != VIP_SUCCESS) FAIL("VipRecvDone after a CQ entry: %s", VipxReturnString(rd));
            expect_ok(d, VIP_STATUS_OP_RECEIVE, "receive");
            // Order per work queue: descriptor k of VI v holds message k.
            long k = -1;
            for (int i = 0; i < g_cq_per_thread; ++i)
                if (g_cq_rd[v][i] == d) k = i;
            const Msg m = read_msg(static_cast<char *>(d->DS[0].Local.Data.Address), uint32_t(peer_of(v)));
            if (m.thread != uint32_t(v) || long(m.seq) != k)
                FAIL("VI %d: descriptor %ld holds message %u of thread %u", v, k, m.seq, m.thread);
            g_cq_next[v].fetch_add(1);
            g_cq_taken.fetch_add(1);
        }
    });
    for (int v = 0; v < kThreads; ++v)
        if (g_cq_next[v].load() != g_cq_per_thread)
            FAIL("VI %d: %d messages, expected %d", v, g_cq_next[v].load(), g_cq_per_thread);
    VIP_VI_HANDLE vi;
    VIP_BOOLEAN rq;
    if (VipCQDone(g_cq, &vi, &rq) != VIP_NOT_DONE) FAIL("a CQ entry too many");
    if (vipl_boot_barrier() != VIPL_BOOT_OK) FAIL("barrier");
    for (int t = 0; t < kThreads; ++t) {
        CHECK(VipDisconnect(g_cq_vi[t]));
        CHECK(VipDestroyVi(g_cq_vi[t]));
    }
    CHECK(VipDestroyCQ(g_cq));
}

// ---------------------------------------------------------------- conn
// A VI connected, used for a few messages, disconnected and destroyed, again.
void connect_cycles(int t, int cycles) {
    const int peer = peer_of(t);
    Arena ar;
    ar.init(1 << 16);
    constexpr int N = 4;
    VIP_DESCRIPTOR *rd[N], *sd = ar.desc();
    char *rb[N], *sb = static_cast<char *>(ar.get(kMsg));
    for (int i = 0; i < N; ++i) {
        rd[i] = ar.desc();
        rb[i] = static_cast<char *>(ar.get(kMsg));
    }
    for (int c = 0; c < cycles; ++c) {
        VIP_VI_HANDLE vi = make_vi();
        for (int i = 0; i < N; ++i) {
            set_recv(rd[i], rb[i], kMsg, ar.mh);
            CHECK(VipPostRecv(vi, rd[i], ar.mh));
        }
        connect(vi, peer, "cyc" + std::to_string(t) + "." + std::to_string(c));
        for (int i = 0; i < N; ++i) {
            write_msg(sb, t, uint32_t(c * N + i));
            set_send(sd, sb, kMsg, ar.mh);
            CHECK(VipPostSend(vi, sd, ar.mh));
            VIP_DESCRIPTOR *d;
            CHECK(VipSendWait(vi, 20000, &d));
            expect_ok(d, VIP_STATUS_OP_SEND, "cycle send");
        }
        for (int i = 0; i < N; ++i) {
            VIP_DESCRIPTOR *d;
            CHECK(VipRecvWait(vi, 20000, &d));
            if (d != rd[i]) FAIL("cycle receive out of order");
            expect_ok(d, VIP_STATUS_OP_RECEIVE, "cycle receive");
            const Msg m = read_msg(rb[i], uint32_t(peer));
            if (m.thread != uint32_t(t) || m.seq != uint32_t(c * N + i)) FAIL("cycle %d: message %u", c, m.seq);
        }
        // Our peer may disconnect first (our VI then breaks): ours succeeds either way.
        CHECK(VipDisconnect(vi));
        CHECK(VipDestroyVi(vi));
    }
}

// A VI destroyed while another thread polls and waits on it: the poller gets
// VIP_NOT_DONE until the destroy and VIP_INVALID_PARAMETER after, never a crash.
void destroy_while_polled() {
    VIP_VI_HANDLE vi = make_vi();
    std::atomic<bool> go{false};
    std::thread poller([&] {
        VIP_DESCRIPTOR *d;
        go.store(true);
        for (;;) {
            const VIP_RETURN rc = (VipRecvDone(vi, &d));
            if (rc == VIP_INVALID_PARAMETER) break;
            if (rc != VIP_NOT_DONE) FAIL("VipRecvDone on a VI being destroyed: %s", VipxReturnString(rc));
        }
        if (VipRecvWait(vi, 10, &d) != VIP_INVALID_PARAMETER) FAIL("VipRecvWait on a destroyed VI");
    });
    while (!go.load()) sched_yield();
    CHECK(VipDestroyVi(vi));
    poller.join();
}

void scenario_conn() {
    run_threads([](int t) {
        if (t < 2) own_vi_traffic(t, scaled(30), "conn");
        else connect_cycles(t, scaled(12));
    });
    destroy_while_polled();
}

// ---------------------------------------------------------------- mem
// Thread 3: a fresh registration per message, deregistered once it is sent.
void register_cycles(int t, int n) {
    const int peer = peer_of(t);
    Arena ar;
    ar.init(1 << 16);
    VIP_VI_HANDLE vi = make_vi();
    constexpr int N = 16;
    VIP_DESCRIPTOR *rd[N], *sd = ar.desc();
    char *rb[N];
    for (int i = 0; i < N; ++i) {
        rd[i] = ar.desc();
        rb[i] = static_cast<char *>(ar.get(kMsg));
        set_recv(rd[i], rb[i], kMsg, ar.mh);
        CHECK(VipPostRecv(vi, rd[i], ar.mh));
    }
    connect(vi, peer, "mem" + std::to_string(t));
    for (int k = 0; k < n; ++k) {
        char *buf = static_cast<char *>(std::aligned_alloc(64, 4096));
        VIP_MEM_ATTRIBUTES ma{g_ptag, VIP_FALSE, VIP_FALSE};
        VIP_MEM_HANDLE mh;
        CHECK(VipRegisterMem(g_nic, buf, 4096, &ma, &mh));
        write_msg(buf, t, k);
        set_send(sd, buf, kMsg, mh);
        CHECK(VipPostSend(vi, sd, ar.mh));
        VIP_DESCRIPTOR *d;
        CHECK(VipSendWait(vi, 20000, &d));
        expect_ok(d, VIP_STATUS_OP_SEND, "send from a fresh registration");
        CHECK(VipDeregisterMem(g_nic, buf, mh));
        std::free(buf);
        CHECK(VipRecvWait(vi, 20000, &d));
        const int slot = k % N;
        if (d != rd[slot]) FAIL("receive out of order");
        expect_ok(d, VIP_STATUS_OP_RECEIVE, "receive");
        const Msg m = read_msg(rb[slot], uint32_t(peer));
        if (m.seq != uint32_t(k) || m.thread != uint32_t(t)) FAIL("message %u, expected %d", m.seq, k);
        set_recv(rd[slot], rb[slot], kMsg, ar.mh);
        CHECK(VipPostRecv(vi, rd[slot], ar.mh));
    }
    CHECK(VipDisconnect(vi));
    VIP_DESCRIPTOR *d;
    while (VipRecvDone(vi, &d) == VIP_SUCCESS) {}
    CHECK(VipDestroyVi(vi));
}

void scenario_mem() {
    run_threads([](int t) {
        if (t < 3) own_vi_traffic(t, scaled(30), "memt");
        else register_cycles(t, scaled(200));
    });
}

} // namespace

int main(int argc, char **argv) {
    const std::string what = argc > 1 ? argv[1] : "";
    if (argc > 2) {
        char *end = nullptr;
        const long pct = std::strtol(argv[2], &end, 10);
        if (*argv[2] == '\0' || *end != '\0' || pct < 1 || pct > 1000) {
            std::fprintf(stderr, "threads_vipl: the scale is a percentage from 1 to 1000, not '%s'\n", argv[2]);
            return 2;
        }
        g_percent = int(pct);
    }
    if (vipl_boot_init() != VIPL_BOOT_OK) {
        std::fprintf(stderr, "threads_vipl: run it under vipl-run\n");
        return 2;
    }
    g_rank = vipl_boot_rank();
    g_size = vipl_boot_size();
    if (g_size != 2 && g_size != 4) {
        std::fprintf(stderr, "threads_vipl: 2 or 4 processes (vipl-run -n 2|4)\n");
        return 2;
    }
    CHECK(VipOpenNic(nullptr, &g_nic));
    VIP_NIC_ATTRIBUTES na;
    CHECK(VipQueryNic(g_nic, &na));
    if (na.ThreadSafe != VIP_TRUE) {
        std::fprintf(stderr, "threads_vipl: the NIC is not thread safe (%s)\n", na.Name);
        return 2;
    }
    CHECK(VipCreatePtag(g_nic, &g_ptag));
    publish_rdma();
    if (what == "own") scenario_own();
    else if (what == "shared") scenario_shared();
    else if (what == "cq") scenario_cq();
    else if (what == "conn") scenario_conn();
    else if (what == "mem") scenario_mem();
    else {
        std::fprintf(stderr, "usage: threads_vipl own|shared|cq|conn|mem [percent]\n");
        return 2;
    }
    // Every rank is done with every peer's memory before anyone frees it.
    if (vipl_boot_barrier() != VIPL_BOOT_OK) FAIL("barrier");
    std::printf("threads_vipl %s: rank %d of %d passed\n", what.c_str(), g_rank, g_size);
    vipl_boot_finalize();
    return 0;
}
