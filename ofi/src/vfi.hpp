// vfi.hpp - the viastack libfabric provider: objects shared by its files.
//
// libfabric's C ABI outside (fid_* structs whose first member is the fid),
// VIPL (vipl.h) inside.  One NIC per process, opened on first use.
//
// Threads (docs/man/fi_viastack.7.md, "Threading"): the provider offers
// FI_THREAD_SAFE.  Each object guards its own state: an endpoint its rings
// and credits (Ep::mu), a CQ the VIP CQ it drains (Cq::drain) and its entry
// queues (Cq::entries, a leaf lock).  Connection management, EQs, the
// registries and opening/closing objects take the control lock (ctl_lock()),
// which the data path never takes.  Lock order: ctl_lock, then a CQ's drain,
// then an endpoint's mu, then any CQ's entries; a thread holding an endpoint
// takes another CQ's drain only by try_lock.  When the NIC reports
// ThreadSafe = VIP_FALSE, every entry point also holds serial_lock() (Serial),
// so the provider never calls VIPL from two threads at once.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/providers/fi_prov.h>

#include <netinet/in.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "vipl.h"

namespace vfi {

extern struct fi_provider provider;
constexpr const char *kProvName = "viastack";
constexpr const char *kFabricName = "viastack";
constexpr uint32_t kProvVersion = FI_VERSION(0, 1);

// ---- locking --------------------------------------------------------------
// A recursive lock: paths that hold it call helpers that take it.  The
// uncontended case is one compare-exchange and one store (a recursive pthread
// mutex costs ~60 instructions a lock/unlock pair); a thread that finds it
// held spins a little, then yields, then sleeps (lock_slow), since the holder
// may be another rank's CPU share away, or in a collective close
// (vipl_boot_finalize).
class Lock {
public:
    void lock() {
        pthread_t me = pthread_self();
        if (owner_.load(std::memory_order_relaxed) == me) {
            depth_++;
            return;
        }
        pthread_t none = 0;
        if (!owner_.compare_exchange_strong(none, me, std::memory_order_acquire, std::memory_order_relaxed))
            lock_slow(me);
        depth_ = 1;
    }
    // False, without waiting, when another thread holds it.
    bool try_lock() {
        pthread_t me = pthread_self();
        if (owner_.load(std::memory_order_relaxed) == me) {
            depth_++;
            return true;
        }
        pthread_t none = 0;
        if (!owner_.compare_exchange_strong(none, me, std::memory_order_acquire, std::memory_order_relaxed))
            return false;
        depth_ = 1;
        return true;
    }
    void unlock() {
        if (--depth_ == 0) owner_.store(0, std::memory_order_release);
    }

private:
    void lock_slow(pthread_t me);
    std::atomic<pthread_t> owner_{0}; // 0: free (pthread_self() is never 0 on Linux)
    unsigned depth_ = 0;              // written by the owner only
};
using Guard = std::lock_guard<Lock>;

// Connection management, EQs, registries, object life: never the data path.
extern Lock g_ctl_lock;
inline Lock &ctl_lock() { return g_ctl_lock; }

// Held by every entry point while the NIC is not thread safe
// (VIP_NIC_ATTRIBUTES.ThreadSafe = VIP_FALSE): the provider then serialises
// its callers, as VIPL requires.  Set once when the NIC opens, before any
// object that could be used concurrently exists.
extern Lock g_serial_lock;
extern std::atomic<bool> g_serialise;
class Serial {
public:
    Serial() : held_(g_serialise.load(std::memory_order_relaxed)) {
        if (held_) g_serial_lock.lock();
    }
    ~Serial() {
        if (held_) g_serial_lock.unlock();
    }
    Serial(const Serial &) = delete;
    Serial &operator=(const Serial &) = delete;

private:
    bool held_;
};

// An entry point of the control path: serialised if need be, then the control lock.
struct CtlGuard {
    Serial s;
    Guard g{ctl_lock()};
};

// ---- the NIC (vfi_fabric.cpp) ---------------------------------------------
struct Nic {
    VIP_NIC_HANDLE handle = nullptr;
    VIP_NIC_ATTRIBUTES attr{};
    VIP_PROTECTION_HANDLE ptag = nullptr;
    std::vector<uint8_t> host; // this NIC's host address bytes
};
// Opens the process's NIC on first use; nullptr (and a warning) if VIPL cannot.
Nic *nic();
VIP_RELIABILITY_LEVEL reliability(); // the level the provider's VIs use

// ---- addresses (vfi_addr.cpp) ---------------------------------------------
// An endpoint name is a sockaddr_in6 carrying the VI net address: the port is
// the discriminator, the address is fd56:49xx:: (fd 'V' 'I' <host length>)
// followed by the host address bytes.  rxm sets and reads ports of the names
// it handles, so the name has to be a socket address; the ULA prefix keeps it
// apart from any real IPv6 host.
constexpr size_t kAddrLen = sizeof(sockaddr_in6);
constexpr size_t kMaxHostLen = 12;
bool addr_make(const std::vector<uint8_t> &host, uint16_t disc, sockaddr_in6 *out);
// False if the bytes are not a viastack name (wrong length/family/prefix).
bool addr_parse(const void *addr, size_t len, std::vector<uint8_t> *host, uint16_t *disc);
uint16_t addr_port(const sockaddr_in6 &a);
std::string addr_str(const void *addr, size_t len);
// VIP_NET_ADDRESS built in a caller's buffer (>= VIP_NET_ADDRESS_SIZE(12, 2)).
struct NetAddr {
    alignas(8) uint8_t buf[VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, 2)];
    VIP_NET_ADDRESS *get() { return reinterpret_cast<VIP_NET_ADDRESS *>(buf); }
};
void net_addr(const std::vector<uint8_t> &host, uint16_t disc, NetAddr *out);
bool net_addr_split(VIP_NET_ADDRESS *a, std::vector<uint8_t> *host, uint16_t *disc);
// node/service of fi_getinfo → a name; -FI_ENODATA (with a warning) if the
// node names no NIC of the job, -FI_EINVAL for a malformed service.
int resolve(const char *node, const char *service, sockaddr_in6 *out);
uint16_t next_auto_port();

// ---- getinfo (vfi_getinfo.cpp) --------------------------------------------
int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags, const struct fi_info *hints,
            struct fi_info **info);
// User private data: a request over verbs carries 43 bytes with both
// discriminators (2 bytes each here), less the provider's 12-byte header.
constexpr size_t kCmDataMax = 27;
constexpr size_t kIovLimit = 4;
// Large enough for ofi_rxm's eager header (72 bytes) and a short MPI
// message: rxm injects a packet only when it fits the connected endpoint's
// inject size, and otherwise sends it from one of its own buffers with a
// completion that both sides must then handle (a CQ entry here, rxm's handler
// to free the buffer).  Each transmit slot has a buffer this large in the
// endpoint's registered block.
constexpr size_t kInjectSize = 256;
constexpr size_t kDefaultQueue = 256;

// ---- objects ----------------------------------------------------------------
struct Eq;
struct Cq;
struct Ep;

struct Fabric {
    fid_fabric fab{};
};

struct Domain {
    fid_domain dom{};
    Fabric *fabric = nullptr;
    int refs = 0;
    // Endpoints closed on this domain, kept as stubs until the domain closes
    // (ep_close says why).
    std::vector<Ep *> closed_eps;
    ~Domain();
};

struct Mr {
    fid_mr mr{};
    Domain *domain = nullptr;
    void *addr = nullptr;
    size_t len = 0;
    VIP_MEM_HANDLE handle = 0;
};

// A FIFO in one growing array: a completion queue's push and pop touch no
// allocator (std::deque allocates a block every few entries); it grows, by
// doubling, only when the application leaves more entries unread than ever.
template <class T>
class Ring {
public:
    bool empty() const { return n_ == 0; }
    size_t size() const { return n_; }
    T &front() { return buf_[head_]; }
    void pop_front() {
        head_ = head_ + 1 == buf_.size() ? 0 : head_ + 1;
        n_--;
    }
    void push_back(const T &v) {
        if (n_ == buf_.size()) grow();
        size_t i = head_ + n_;
        buf_[i >= buf_.size() ? i - buf_.size() : i] = v;
        n_++;
    }

private:
    void grow() {
        std::vector<T> b(buf_.empty() ? 64 : 2 * buf_.size());
        for (size_t k = 0; k < n_; k++) b[k] = buf_[(head_ + k) % buf_.size()];
        buf_.swap(b);
        head_ = 0;
    }
    std::vector<T> buf_;
    size_t head_ = 0, n_ = 0;
};

// Wait support shared by EQ and CQ: an eventfd made readable while entries
// are queued (only once someone asked for it with FI_GETWAIT).
struct Waitable {
    fi_wait_obj wait_obj = FI_WAIT_NONE;
    int fd = -1;
    bool fd_signalled = false;
    // Keeps the fd readable exactly while entries are pending; inline, as
    // every poll calls it and a CQ without an fd has nothing to do.
    void signal_if(bool pending) {
        if (fd >= 0 && pending != fd_signalled) signal_change(pending);
    }
    void signal_change(bool pending);
    void close_fd();
    int control(int cmd, void *arg); // fi_control's FI_GETWAIT / FI_GETWAITOBJ for a CQ or EQ
};

struct EqEntry {
    uint32_t event = 0;
    bool error = false;
    fid_t fid = nullptr;
    void *context = nullptr;
    fi_info *info = nullptr; // FI_CONNREQ: owned until read
    std::vector<uint8_t> data;
    int err = 0;
};

struct Eq {
    fid_eq eq{};
    Fabric *fabric = nullptr;
    Waitable wait;
    std::deque<EqEntry> q;
    std::vector<uint8_t> last_err_data; // fi_eq_readerr's err_data stays valid till the next read
    void push(EqEntry e);
    void drop_fid(fid_t f); // entries of a closing endpoint
};

struct CqEntry {
    void *context = nullptr;
    uint64_t flags = 0;
    size_t len = 0;
    void *buf = nullptr;
    uint64_t data = 0;
    int err = 0; // 0 or a positive FI_E* code
    uint32_t vip_status = 0;
};

struct Cq {
    fid_cq cq{};
    Domain *domain = nullptr;
    fi_cq_format format = FI_CQ_FORMAT_CONTEXT;
    VIP_CQ_HANDLE vcq = nullptr;
    int refs = 0; // control lock
    // Held while taking completions off the VIP CQ: guards the endpoints bound
    // here (eps, last) and the capacity.  A VIP CQ holds exactly what it was
    // sized for (one more is an overrun), so it grows with the work queues of
    // the VIs that complete on it.
    Lock drain;
    std::vector<Ep *> eps; // enabled endpoints with a queue on this CQ
    Ep *last = nullptr;    // the endpoint whose VI completed last here
    size_t capacity = 0, needed = 0;
    int reserve(size_t n); // room for n more entries (takes drain)
    void release(size_t n) {
        Guard g(drain);
        needed -= n;
    }
    Ep *ep_of_vi(VIP_VI_HANDLE vi); // caller holds drain
    // The entries the application reads, and the wait fd that mirrors them:
    // a leaf lock, taken from any path (never anything under it).
    Lock entries;
    Waitable wait;
    Ring<CqEntry> q, errq;
    void push(const CqEntry &e);
    size_t queued() {
        Guard g(entries);
        return q.size() + errq.size();
    }
};

// An endpoint's state in the connection life.
enum class EpState { Idle, Connecting, Accepting, Connected, Shutdown };

// Operation kinds of a posted descriptor.
enum class Op : uint8_t { None, Send, Write, Read, CreditWrite, Recv };

struct Slot { // what the provider remembers about a posted descriptor
    Op op = Op::None;
    bool signal = true; // report a completion
    void *context = nullptr;
    size_t len = 0;
    void *buf = nullptr;
    uint64_t flags = 0;
};

// Connection private data the provider puts in front of the user's: where
// the peer writes its posted-receive count (vfi_data.cpp).  Packed: the
// request's private data is scarce (kCmDataMax).
struct __attribute__((packed)) CmHeader {
    uint64_t credit_addr;   // the registered word the peer RDMA-writes its posted count into
    uint32_t credit_handle; // its memory handle
};
static_assert(sizeof(CmHeader) == 12);

struct Pep {
    fid_pep pep{};
    Fabric *fabric = nullptr;
    Eq *eq = nullptr;
    fi_info *info = nullptr;
    sockaddr_in6 name{};
    bool listening = false;
};

struct Ep {
    fid_ep ep{};
    // Guards everything below that changes after fi_enable: the rings, the
    // credits, the pending queue and the connection state.
    Lock mu;
    bool reaping = false; // inside post_credit's drain of the send CQ
    Domain *domain = nullptr;
    fi_info *info = nullptr;
    Eq *eq = nullptr;
    Cq *tx_cq = nullptr, *rx_cq = nullptr;
    uint64_t tx_flags = 0, rx_flags = 0; // bind flags (FI_SELECTIVE_COMPLETION)
    uint64_t tx_op_flags = 0, rx_op_flags = 0;
    VIP_VI_HANDLE vi = nullptr;
    EpState state = EpState::Idle;
    bool enabled = false;
    sockaddr_in6 local{}, peer{};
    VIP_CONN_HANDLE conn = nullptr; // passive side: the request being answered

    // Descriptor rings (registered block): tx_n send slots, rx_n receive slots.
    size_t tx_n = 0, rx_n = 0, tx_user_max = 0, rx_max = 0;
    uint8_t *block = nullptr;
    size_t block_len = 0;
    VIP_MEM_HANDLE block_handle = 0;
    VIP_MEM_HANDLE credit_handle = 0; // the word the peer writes
    std::vector<Slot> tx_slots, rx_slots;
    size_t tx_head = 0, tx_tail = 0, tx_user_inflight = 0, tx_credit_inflight = 0;
    size_t rx_head = 0, rx_tail = 0;

    // Credits (vfi_data.cpp): counts are cumulative since the connection began.
    uint64_t posted = 0;     // receives the user posted (and the provider handed to VI)
    uint64_t advertised = 0; // the count the peer knows
    uint64_t received = 0;   // receive descriptors that completed (each used one peer credit)
    uint64_t sent = 0;       // sends + writedata posted (each uses one credit)
    uint64_t peer_credit_addr = 0;
    VIP_MEM_HANDLE peer_credit_handle = 0;
    bool credit_owed = false; // a credit write could not be posted yet

    // Operations waiting for a peer credit, or posted behind one that is, in
    // posting order (vfi_data.cpp).  They count against the transmit queue's
    // size; an injected payload is copied here since the caller may reuse it.
    struct PendingTx {
        Op op;
        std::vector<struct iovec> iov;
        std::vector<void *> desc;
        bool has_data;
        uint64_t data, raddr, rkey;
        void *context;
        uint64_t flags;
        std::vector<uint8_t> inject;
    };
    std::deque<PendingTx> pending;

    VIP_DESCRIPTOR *tx_desc(size_t i);
    VIP_DESCRIPTOR *rx_desc(size_t i);
    volatile uint64_t *credit_word(); // written by the peer
    uint64_t *credit_src(size_t i);   // per-slot source of our credit writes
    uint8_t *inject_buf(size_t i);
    uint64_t peer_posted() const;
};

// ---- cross-file operations ---------------------------------------------------
extern struct fi_ops_cm pep_cm_ops, ep_cm_ops;
extern struct fi_ops_msg ep_msg_ops;
extern struct fi_ops_rma ep_rma_ops;

int fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
int domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom, void *context);
int eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq, void *context);
int pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep, void *context);
int cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context);
int ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context);
extern struct fi_ops_mr mr_ops;

// Progress (takes the CQ's drain and the endpoints' locks itself).
// Moves VI completions of this CQ into it, until it holds `want` entries (a
// reader asking for one entry leaves the rest in the VI CQ for its next read
// instead of paying a poll that finds nothing) or the VI CQ is empty.
constexpr size_t kDrainAll = SIZE_MAX;
void progress_cq(Cq *cq, size_t want = kDrainAll);
// progress_cq unless another thread is draining cq (then false, at once).
bool try_progress_cq(Cq *cq, size_t want = kDrainAll);
void ep_flush_pending(Ep *e);  // posts the queued operations the peer's credits now allow
void flush_pending_on(Cq *cq); // ep_flush_pending for the CQ's endpoints with a queue (holds drain)
void ep_drop_pending(Ep *e);   // at close: the queued operations are dropped
std::vector<Ep *> &eps();
void progress_cm(); // listeners, connecting and connected endpoints (control lock)
void progress_all();
void register_pep(Pep *p, bool on);
void register_ep(Ep *e, bool on); // also on the endpoint's CQs (control lock held)
void all_cqs(std::vector<Cq *> *out);
void register_cq(Cq *c, bool on);
void register_eq(Eq *e, bool on);
void all_eqs(std::vector<Eq *> *out);
void start_wait_thread(); // the thread that keeps FI_GETWAIT fds honest

// Endpoint internals used by the CM (vfi_data.cpp, vfi_ep.cpp).
void ep_connected(Ep *e, const CmHeader &peer);
void ep_fill_header(Ep *e, CmHeader *h);
void ep_process(Ep *e, bool recv_queue); // one completed descriptor of this VI queue
void ep_credit_check(Ep *e);
int ep_create_vi(Ep *e);

// Generic fid helpers (vfi_fabric.cpp).
int no_bind(struct fid *, struct fid *, uint64_t);
int no_control(struct fid *, int, void *);
int no_ops_open(struct fid *, const char *, uint64_t, void **, void *);
int no_tostr(const struct fid *, char *, size_t);
int no_ops_set(struct fid *, const char *, uint64_t, void *, void *);
fi_info *info_dup(const fi_info *i);

int vip_to_fi(VIP_RETURN rc);      // a negative FI_E* code
int status_to_fi(uint32_t status); // a positive FI_E* code for a descriptor error status

void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

} // namespace vfi
