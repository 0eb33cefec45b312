// rt_init.cpp - start-up and shut-down: join the job, open the NIC, map and
// register the symmetric heap (and the static data when it sits at one
// address everywhere), lay out descriptors and buffers, connect one VI per
// peer with the peer-to-peer calls.
#include <link.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rt_internal.hpp"
#include "viastack_env.hpp"
#include "viastack_log.hpp"
#include "viastack/peer_vi.hpp"
#include "viastack/regcache.hpp"
#include "vipl_boot.h"

int splitc_rt_procs = 1;
int splitc_rt_myproc = 0;
int splitc_rt_procslog = 0;
// Before splitc_init a program is a job of one: processor 0 is local.
int splitc_rt_fast_proc = 0;

namespace splitc::rt {

Runtime g;

namespace {

constexpr VIP_ULONG kConnectTimeoutMs = 60000;

constexpr auto kLayer = viastack::log::Layer::splitc;

[[gnu::cold]] bool init_fail(const char *what, VIP_RETURN rc) {
    report(SPLITC_ERR_INIT, "%s failed: %s", what, VipxReturnString(rc));
    return false;
}

// The heap and the static data: peers RDMA-write and RDMA-read them (bulk
// transfers, rt_bulk.cpp), within the same ranges their requests may name.
bool register_region(void *p, size_t n, VIP_MEM_HANDLE *mh, const char *what) {
    VIP_MEM_ATTRIBUTES ma{};
    ma.Ptag = g.ptag;
    ma.EnableRdmaWrite = VIP_TRUE;
    ma.EnableRdmaRead = VIP_TRUE;
    VIP_RETURN rc = VipRegisterMem(g.nic, p, VIP_ULONG(n), &ma, mh);
    if (rc != VIP_SUCCESS) {
        report(SPLITC_ERR_INIT, "VipRegisterMem(%s, %zu bytes) failed: %s", what, n, VipxReturnString(rc));
        return false;
    }
    return true;
}

// The main program's writable data (.data + .bss), without its RELRO part
// (read-only after relocation, so it cannot be registered for writing).  The
// first object dl_iterate_phdr reports is the executable, whether this
// runtime is linked into it or loaded as a shared library (translated Split-C
// programs link libsplitc.so, where __data_start/_end would name the
// library's own data).
struct DataRange {
    uintptr_t lo = 0, hi = 0, relro_lo = 0, relro_hi = 0;
};

DataRange program_data() {
    DataRange r;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *arg) -> int {
            auto *r = static_cast<DataRange *>(arg);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
                if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W)) {
                    if (!r->lo || lo < r->lo) r->lo = lo;
                    if (hi > r->hi) r->hi = hi;
                } else if (ph.p_type == PT_GNU_RELRO) {
                    r->relro_lo = lo;
                    r->relro_hi = hi;
                }
            }
            return 1; // stop after the executable
        },
        &r);
    return r;
}

// Static data is remotely addressable only if it is at the same address in
// every process (a non-PIE executable, or ASLR off).
bool setup_statics() {
    long page = sysconf(_SC_PAGESIZE);
    DataRange d = program_data();
    uintptr_t lo = d.lo & ~uintptr_t(page - 1);
    if (d.relro_hi > lo && d.relro_lo <= d.lo) lo = (d.relro_hi + uintptr_t(page) - 1) & ~uintptr_t(page - 1);
    uintptr_t hi = (d.hi + uintptr_t(page) - 1) & ~uintptr_t(page - 1);
    uintptr_t mine = lo;
    std::vector<uintptr_t> all(size_t(g.procs));
    if (vipl_boot_allgather(&mine, sizeof mine, all.data()) != VIPL_BOOT_OK) return false;
    for (uintptr_t a : all)
        if (a != mine) return true; // not symmetric: leave g.statics empty
    if (!lo || hi <= lo) return true;
    if (!register_region(reinterpret_cast<void *>(lo), hi - lo, &g.statics.mh, "static data")) return false;
    g.statics.lo = lo;
    g.statics.hi = hi;
    return true;
}

// Every peer's channel (channel/): one registered region holds all their
// slots, 2k + 2 sends and 2k + 1 receives of max_msg bytes each.
bool setup_buffers() {
    g.layout = chan::layout_for(g.credits, g.max_msg, kExtraSendSlots);
    const size_t per_peer = chan::Channel::region_bytes(g.layout);
    std::string why;
    if (!g.slots.allocate(g.nic, g.ptag, per_peer * size_t(g.procs - 1), &why)) {
        report(SPLITC_ERR_INIT, "%s", why.c_str());
        return false;
    }
    uint8_t *next = g.slots.base();
    for (int r = 0; r < g.procs; ++r) {
        if (r == g.me) continue;
        Peer &p = g.peers[size_t(r)];
        p.attach(g.layout, next, g.slots.handle());
        p.rank = r;
        next += per_peer;
    }
    return true;
}

// Every peer's VI (viastack/peer_vi.hpp): receives (and, with SPLITC_SEND_CQ,
// sends) on completion queues unless a job of two polls its one VI
// directly; RDMA write and read for bulk transfers (rt_bulk.cpp).  Every
// peer request is issued first, then waited for: the pairs complete in any
// order.
bool setup_vis() {
    bool direct = g.procs == 2 && !viastack::env::flag("SPLITC_RECV_CQ");
    VIP_RETURN rc = VIP_SUCCESS;
    if (!direct) {
        rc = VipCreateCQ(g.nic, VIP_ULONG(g.layout.nrecv) * VIP_ULONG(g.procs - 1) + 16, &g.recv_cq);
        if (rc != VIP_SUCCESS) return init_fail("VipCreateCQ(receives)", rc);
    }
    if (viastack::env::flag("SPLITC_SEND_CQ")) {
        rc = VipCreateCQ(g.nic, VIP_ULONG(g.layout.nsend) * VIP_ULONG(g.procs - 1) + 16, &g.send_cq);
        if (rc != VIP_SUCCESS) return init_fail("VipCreateCQ(sends)", rc);
    }
    std::vector<chan::NicAddress> addrs;
    std::string why;
    if (!chan::exchange_addresses(g.nic_attr, nullptr, 0, &addrs, nullptr, &why)) {
        report(SPLITC_ERR_INIT, "%s (a processor died during start-up?)", why.c_str());
        return false;
    }
    chan::PeerViConfig cfg;
    cfg.nic = g.nic;
    cfg.attr = &g.nic_attr;
    cfg.ptag = g.ptag;
    cfg.send_cq = g.send_cq;
    cfg.recv_cq = g.recv_cq;
    cfg.max_transfer = g.rdma_chunk > g.max_msg ? g.rdma_chunk : g.max_msg;
    cfg.rdma_read = true;
    cfg.connect_timeout_ms = kConnectTimeoutMs;
    for (int r = 0; r < g.procs; ++r) {
        if (r == g.me) continue;
        Peer &p = g.peers[size_t(r)];
        chan::SetupError err;
        const bool ok = chan::start_rank_vi(cfg, p, "SP", addrs, unsigned(g.me), unsigned(r), 0, &err);
        if (direct) g.direct_vi = p.vi();
        if (ok) continue;
        if (!err.call) report(SPLITC_ERR_INIT, "connecting to processor %d: %s", r, err.limit.c_str());
        else if (std::strcmp(err.call, "VipConnectPeerRequest") == 0)
            report(SPLITC_ERR_INIT, "VipConnectPeerRequest to processor %d failed: %s", r, VipxReturnString(err.rc));
        else init_fail(err.call, err.rc);
        return false;
    }
    const uint64_t deadline = chan::connect_deadline(cfg.connect_timeout_ms);
    for (int r = 0; r < g.procs; ++r) {
        if (r == g.me) continue;
        rc = chan::finish_peer_vi(g.peers[size_t(r)], deadline);
        if (rc != VIP_SUCCESS) {
            report(SPLITC_ERR_INIT, "connecting to processor %d failed: %s (is it running the same program?)", r,
                   VipxReturnString(rc));
            return false;
        }
    }
    return true;
}

// Set once every processor is past the final barrier: peers then tear their
// VIs down, and the resulting connection-lost errors are expected.
std::atomic<bool> g_closing{false};

void on_async_error(VIP_PVOID, VIP_ERROR_DESCRIPTOR *e) {
    if (g_closing.load(std::memory_order_acquire)) return;
    report(SPLITC_ERR_NETWORK, "asynchronous VI error %d on resource %d (a peer process died or the NIC failed)",
           int(e->ErrorCode), int(e->ResourceCode));
}

// Opens the NIC and checks what Split-C/VI needs of it.  Sets *pins when
// registering memory pins it (chan::registration_pins), which bounds the
// default heap size.
// The NIC is the one $SPLITC_NIC names (as AM's is $VIASTACK_AM_NIC), else
// $VIPL_PROVIDER's default.
bool open_nic(bool *pins) {
    const char *dev = std::getenv("SPLITC_NIC");
    if (dev && !*dev) dev = nullptr;
    VIP_RETURN rc = VipOpenNic(dev, &g.nic);
    if (rc != VIP_SUCCESS) {
        report(SPLITC_ERR_INIT, "VipOpenNic(%s) failed: %s (check $VIPL_PROVIDER / $SPLITC_NIC)",
               dev ? dev : "default NIC", VipxReturnString(rc));
        return false;
    }
    VIP_NIC_ATTRIBUTES &na = g.nic_attr;
    rc = VipQueryNic(g.nic, &na);
    if (rc != VIP_SUCCESS) return init_fail("VipQueryNic", rc);
    if (!(na.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY)) {
        report(SPLITC_ERR_INIT, "NIC %s lacks Reliable Delivery, which Split-C/VI needs (exactly once, in order)",
               na.Name);
        return false;
    }
    if (na.MaxSegmentsPerDesc < 2) {
        report(SPLITC_ERR_INIT, "NIC %s allows %lu data segments per descriptor; Split-C/VI needs 2", na.Name,
               (unsigned long)na.MaxSegmentsPerDesc);
        return false;
    }
    if (na.MaxTransferSize && na.MaxTransferSize < g.max_msg) g.max_msg = uint32_t(na.MaxTransferSize);
    g.max_payload = g.max_msg - uint32_t(sizeof(MsgHdr));
    // Bulk RDMA pieces: as large as the NIC moves in one descriptor, at most 1 GiB.
    g.rdma_chunk =
        na.MaxTransferSize ? uint32_t(std::min<VIP_ULONG>(na.MaxTransferSize, VIP_ULONG(1) << 30)) : (1u << 30);
    if (!(na.RDMAReadSupport & VIP_SERVICE_RELIABLE_DELIVERY)) g.rdma_chunk = 0; // no RDMA read: bulk stays on messages
    int nic_rank = VipxNicRank(g.nic);
    if (nic_rank >= 0 && nic_rank != g.me) {
        report(SPLITC_ERR_INIT, "NIC address says rank %d but the job says %d; start the job with vipl-run", nic_rank,
               g.me);
        return false;
    }
    *pins = chan::registration_pins(g.nic);
    return true;
}

bool init_network() {
    VipErrorCallback(g.nic, nullptr, on_async_error);
    VIP_RETURN rc = VipCreatePtag(g.nic, &g.ptag);
    if (rc != VIP_SUCCESS) return init_fail("VipCreatePtag", rc);
    if (!register_region(reinterpret_cast<void *>(g.heap.lo), g.heap.hi - g.heap.lo, &g.heap.mh, "symmetric heap"))
        return false;
    if (!(setup_statics() && setup_buffers() && setup_vis() && bulk_setup())) return false;
    g.net_up = true;
    return true;
}

// Credits per peer, k (SPLITC_CREDITS, else the default for this NIC).  Stores
// get no reply: their credits come back in batches of k/2 (channel.hpp), one
// STORE_ACK per k/2 stores, or with any reply going back sooner.
//
// The default is 32 where registering memory does not pin it (the emulated
// NIC), 16 where it does.  A store stream is bound by its target, and a
// STORE_ACK is a send through the NIC (~900 instructions of transmit and
// reaping at the target with the emulated NIC's inline firmware): with 16 credits ~112 of the target's
// ~1 150 instructions per store, with 32 ~56; store g 0.86-0.97x of 16
// credits' (docs/splitc.md, "Store stream").  The price is
// 2k+2 send and 2k+1 receive slots of SPLITC_MAX_MSG bytes per peer (~0.5 MiB
// at k = 32, half that at 16), which where memory is pinned comes out of
// RLIMIT_MEMLOCK beside the heap (default_heap_size), per peer: there the
// smaller default keeps the pinned memory per peer at half.
void choose_credits(bool pins) {
    const long k = viastack::env::integer(kLayer, "SPLITC_CREDITS", pins ? 16 : 32, 1, 120);
    g.credits = uint32_t(k);
    g.store_ack_every = chan::Channel::credit_batch(g.credits, 254);
}

bool read_config() {
    size_t m = viastack::env::bytes(kLayer, "SPLITC_MAX_MSG", 4096);
    if (m < 256 || m > (1u << 20)) {
        report(SPLITC_ERR_INIT, "SPLITC_MAX_MSG=%zu: want 256..1M bytes", m);
        return false;
    }
    g.max_msg = uint32_t(m);
    g.max_payload = g.max_msg - uint32_t(sizeof(MsgHdr));
    // SPLITC_RDMA_MIN: bulk transfers of at least this many bytes go by RDMA
    // (rt_bulk.cpp); "off" (or 0) keeps every byte on messages.  4 KiB: a put
    // carries no acknowledged request of its own, so RDMA beats two fragments
    // at 4 and 8 KiB for put, get and store alike (docs/splitc.md, "Measurements").
    const char *rm = viastack::env::raw("SPLITC_RDMA_MIN");
    g.rdma_min = rm && (std::strcmp(rm, "off") == 0)
        ? 0
        : uint32_t(std::min<size_t>(viastack::env::bytes(kLayer, "SPLITC_RDMA_MIN", 4096), 1u << 30));
    g.check_collectives = viastack::env::flag("SPLITC_CHECK_COLLECTIVES");
    // Waiting (vipl_wait.h): long spins only pay when every process can have
    // a core of its own; the window adapts unless SPLITC_SPIN fixes it.
    vipl_wait::Mode mode;
    if (!vipl_wait::mode_from_env(&mode)) {
        report(SPLITC_ERR_INIT, "VIASTACK_WAIT=%s is not a wait policy; set it to %s", std::getenv("VIASTACK_WAIT"),
               vipl_wait::kAllowed);
        return false;
    }
    vipl_wait::init(g.wait, mode, g.procs);
    if (viastack::env::raw("SPLITC_SPIN"))
        vipl_wait::fix_window(g.wait, uint32_t(viastack::env::integer(kLayer, "SPLITC_SPIN", 64, 0, 1L << 30)));
    return true;
}

constexpr size_t kMiB = size_t(1) << 20;
// The heap never shrinks below the old fixed size, and stays far below the
// 2 TiB between the candidate addresses (rt_alloc.cpp).
constexpr size_t kHeapMin = 64 * kMiB;
constexpr size_t kHeapMax = size_t(1) << 40;
// Where registration pins memory, the whole heap is pinned at start-up,
// i.e. touched and kept resident: keep the default modest there.
constexpr size_t kHeapMaxPinned = size_t(1) << 30;

// Identifies this host: processes with the same boot id share its memory.
uint64_t host_id() {
    char buf[128] = {0};
    if (FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
        if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
        std::fclose(f);
    }
    if (!buf[0]) gethostname(buf, sizeof buf - 1);
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (const char *c = buf; *c; ++c) h = (h ^ uint8_t(*c)) * 1099511628211ull;
    return h;
}

// The heap is mapped with MAP_NORESERVE and (where registration does not pin)
// registered for free, so
// a large default costs nothing until touched: half of physical memory, shared
// among this host's processes of the job.  Where registration pins memory it
// is at most kHeapMaxPinned and half of RLIMIT_MEMLOCK (the message buffers
// need the rest).
size_t default_heap_size(int local_procs, bool pins) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t phys = pages > 0 && page > 0 ? size_t(pages) * size_t(page) : 2 * kHeapMin;
    size_t n = phys / 2 / size_t(local_procs > 0 ? local_procs : 1);
    if (pins) {
        n = std::min(n, kHeapMaxPinned);
        struct rlimit rl;
        if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            n = std::min(n, size_t(rl.rlim_cur) / 2);
        n = std::max(n, 2 * kMiB);
    } else {
        n = std::max(n, kHeapMin);
    }
    n = std::min(n, kHeapMax);
    return n / (2 * kMiB) * (2 * kMiB);
}

// Collective.  Every processor needs the same heap size (the scope stack
// grows down from its top at the same address everywhere): the smallest one
// asked for wins.  Returns 0 after reporting on failure.
size_t agree_heap_size(bool pins) {
    const char *env = viastack::env::raw("SPLITC_HEAP_SIZE");
    g.heap_size_explicit = env != nullptr;
    struct {
        uint64_t host, size;
    } mine{host_id(), 0}, *all = nullptr;
    std::vector<decltype(mine)> v(size_t(g.procs));
    int local = 1;
    if (g.procs > 1) {
        all = v.data();
        if (vipl_boot_allgather(&mine, sizeof mine, all) != VIPL_BOOT_OK) {
            report(SPLITC_ERR_INIT, "start-up all-gather failed (a processor died during start-up)");
            return 0;
        }
        local = 0;
        for (auto &x : v) local += x.host == mine.host;
    }
    size_t want = g.heap_size_explicit ? viastack::env::bytes(kLayer, "SPLITC_HEAP_SIZE", kHeapMin)
                                       : default_heap_size(local, pins);
    if (want < 4096 || want > kHeapMax) {
        report(SPLITC_ERR_INIT, "SPLITC_HEAP_SIZE=%s: want 4K..1T bytes", env);
        return 0;
    }
    want = (want + 4095) / 4096 * 4096;
    if (g.procs == 1) return want;
    mine.size = want;
    if (vipl_boot_allgather(&mine, sizeof mine, all) != VIPL_BOOT_OK) {
        report(SPLITC_ERR_INIT, "start-up all-gather failed (a processor died during start-up)");
        return 0;
    }
    for (auto &x : v) want = std::min(want, size_t(x.size));
    return want;
}

// Maps the heap; the default size halves until it fits (a kernel in strict
// overcommit mode ignores MAP_NORESERVE and may refuse a large mapping).
bool map_heap(bool pins) {
    size_t n = agree_heap_size(pins);
    if (!n) return false;
    if (g.heap_size_explicit) return heap_map(n, false);
    for (;;) {
        bool last = n / 2 < kHeapMin;
        if (heap_map(n, !last)) return true;
        if (last) return false;
        n = n / 2 / 4096 * 4096;
    }
}

} // namespace

} // namespace splitc::rt

using namespace splitc::rt;

extern "C" {

int splitc_init(int *argc, char ***argv) {
    if (g.initialized) return 0;
    g_closing.store(false, std::memory_order_release); // a program may init again after finalize
    int rc = vipl_boot_init();
    if (rc != VIPL_BOOT_OK) {
        report(SPLITC_ERR_INIT, "vipl_boot_init failed (%d); start the program with vipl-run -n N", rc);
        return -1;
    }
    g.procs = vipl_boot_size();
    g.me = vipl_boot_rank();
    if (g.procs < 1 || g.procs > SPLITC_MAX_PROCS || g.me < 0 || g.me >= g.procs) {
        report(SPLITC_ERR_INIT, "bad job geometry: rank %d of %d", g.me, g.procs);
        return -1;
    }
    splitc_rt_procs = g.procs;
    splitc_rt_myproc = g.me;
    // Split-C's PROCSLOG: exact log2, or -1 when PROCS is not a power of two.
    splitc_rt_procslog = -1;
    if ((g.procs & (g.procs - 1)) == 0)
        for (splitc_rt_procslog = 0; (1 << splitc_rt_procslog) < g.procs; ++splitc_rt_procslog) {}
    g.peers.assign(size_t(g.procs), Peer{});
    g.unconfirmed_peers = 0;
    g.coll.vals[0].assign(size_t(g.procs), CollPayload{});
    g.coll.vals[1].assign(size_t(g.procs), CollPayload{});
    g.coll.ops[0].assign(size_t(g.procs), 0);
    g.coll.ops[1].assign(size_t(g.procs), 0);
    if (!read_config()) return -1;
    // A job of one has no peers: every access is local and no NIC is needed.
    bool pins = false;
    if (g.procs > 1 && !open_nic(&pins)) return -1;
    choose_credits(pins);
    // Bulk transfers register the caller's buffers through a cache
    // (rt_bulk.cpp).  Where registration pins pages, an entry for
    // memory free() gave back to the kernel and malloc() mapped again would
    // move stale bytes: keep the C heap mapped, as AM does
    // (VIASTACK_AM_KEEP_HEAP) and MPI libraries' leave-pinned modes do.
    // SPLITC_KEEP_HEAP=0|1 overrides.
    if (g.procs > 1 && viastack::env::integer(kLayer, "SPLITC_KEEP_HEAP", pins ? 1 : 0, 0, 1)) {
        mallopt(M_TRIM_THRESHOLD, -1);
        mallopt(M_MMAP_MAX, 0);
    }
    if (!map_heap(pins)) return -1;
    if (g.procs > 1 && !init_network()) return -1;
    place_static_objects();
    g.initialized = true;
    splitc_rt_fast_proc = g.me;
    g.live_procs = unsigned(g.procs);
    if (vipl_boot_barrier() != VIPL_BOOT_OK) {
        report(SPLITC_ERR_INIT, "start-up barrier failed (a processor died during start-up)");
        return -1;
    }
    return 0;
}

int splitc_initialized(void) { return g.initialized ? 1 : 0; }

void splitc_finalize(void) {
    if (!g.initialized) return;
    splitc_sync();
    splitc_barrier();
    // After everyone's sends have completed nothing is in flight, so the VIs
    // can be torn down without a peer seeing an error.
    if (g.procs > 1) drain_all_sends();
    g_closing.store(true, std::memory_order_release);
    vipl_boot_barrier();
    g.net_up = false;
    g.direct_vi = nullptr;
    g.stash_vi = nullptr;
    if (g.procs > 1) {
        for (int r = 0; r < g.procs; ++r) {
            Peer &p = g.peers[size_t(r)];
            if (!p.vi()) continue;
            chan::close_vi(p, [](Slot *) {});
            p.detach();
        }
        if (g.recv_cq) VipDestroyCQ(g.recv_cq);
        if (g.send_cq) VipDestroyCQ(g.send_cq);
        g.recv_cq = g.send_cq = nullptr;
        g.slots.release();
        bulk_shutdown();
        if (g.statics.lo) VipDeregisterMem(g.nic, reinterpret_cast<void *>(g.statics.lo), g.statics.mh);
        if (g.heap.lo) VipDeregisterMem(g.nic, reinterpret_cast<void *>(g.heap.lo), g.heap.mh);
        heap_unmap(); // VipxAllocMemAt memory goes back before its NIC closes
        if (g.ptag) VipDestroyPtag(g.nic, g.ptag);
        VipCloseNic(g.nic);
        g.nic = nullptr;
    }
    heap_unmap();
    g.statics = Segment{};
    g.initialized = false;
    g.live_procs = 1;
    // Like the out-of-line check: after shut-down only processor 0 is "local".
    splitc_rt_fast_proc = g.me == 0 ? 0 : -1;
    vipl_boot_finalize();
}

int splitc_run(int argc, char **argv, int (*fn)(int, char **)) {
    if (splitc_init(&argc, &argv) != 0) return 1;
    int rc = fn(argc, argv);
    splitc_finalize();
    return rc;
}

} // extern "C"
