// vi_setup.hpp - the VIs vi_thread_rate streams over: NIC handles with one
// registered region each, descriptors with their buffers carved from it, and
// connected VI pairs ("links") grouped into the setups the variants run on.
//
// A link has a sending end (the client of the connection) and a receiving end
// (the server).  In a two-process job rank 0 holds every sending end and
// rank 1 every receiving end; in a single-process run this process holds
// both, connected over the loopback of its own NIC.
#pragma once

#include "vipl.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace logp {
class Job;
}

namespace thbench {

constexpr std::size_t kMsgBytes = 16; // the measured message (the LogP suite's burst message)
constexpr std::size_t kBufBytes = 64;
constexpr int kRecvPerLink = 256;  // receives kept posted on each end of a link
constexpr int kMaxWindow = 64;     // messages in flight per sending thread
constexpr int kMaxThreads = 2;     // sending threads of a variant (and receiving ones)
constexpr int kConfirmSlots = 8;   // confirmation descriptors per receiving thread
constexpr double kTimeoutS = 30.0; // a wait longer than this is a failure, not a figure

// A descriptor with its buffer and a flag saying it is posted and not yet
// handed back by VipSendDone, in registered memory.  The descriptor comes
// first, so a completed descriptor's address is its slot's.
struct alignas(VIP_DESCRIPTOR_ALIGNMENT) Slot {
    VIP_DESCRIPTOR desc;
    char buf[kBufBytes];
    std::atomic<std::uint8_t> busy{0};
};
inline Slot *slot_of(VIP_DESCRIPTOR *d) { return reinterpret_cast<Slot *>(d); }

// What a message carries: its kind, the sending thread it belongs to (the
// data's sender, the thread a confirmation credits, or the thread a receiving
// thread tells that it runs), its number in that thread's stream, and the
// stream it belongs to.
enum : std::uint32_t { kData = 0xda7a, kConfirm = 0xc0f1, kReady = 0x4ead };
struct Msg {
    std::uint32_t kind, thread, seq, stream;
};
static_assert(sizeof(Msg) == kMsgBytes);

// One VipOpenNic: its protection tag and one registered region that slots
// are carved from.
struct Nic {
    VIP_NIC_HANDLE h = nullptr;
    VIP_PROTECTION_HANDLE ptag = nullptr;
    VIP_MEM_HANDLE mh{};
    VIP_NIC_ATTRIBUTES attrs{};
    char *base = nullptr;
    std::size_t size = 0, used = 0;
    bool registered = false;

    void open(const std::string &device, std::size_t slots);
    void close();
    Slot *slot();
};

// One end of a connected VI pair.
struct LinkEnd {
    Nic *nic = nullptr;
    VIP_VI_HANDLE vi = nullptr;
    bool connected = false;
};

// The layout a variant runs on.  Sending thread t uses link min(t, links-1);
// receiving thread r serves link min(r, links-1), or, with a shared CQ, takes
// from the CQ the receive queues of every link are bound to.  The links' ends
// are on this process's first NIC handle, link i's on handle i with
// two_nics, or, alone, on NIC handles of their own that no other setup uses
// (the sending and the receiving end on two, in one process).
struct SetupShape {
    std::string name; // "alone", "one_vi", "two_vis", "two_nics", "two_vis_cq"
    int links = 1;
    bool two_nics = false;
    bool shared_cq = false;
    bool alone = false;
};

struct Setup {
    SetupShape shape;
    std::vector<LinkEnd> send_end, recv_end;          // per link (only this process's ends are open)
    VIP_CQ_HANDLE recv_cq = nullptr;                  // the receiving side's shared CQ (shared_cq)
    std::vector<std::vector<Slot *>> send_ring;       // per sending thread: 2 * kMaxWindow slots
    std::vector<std::vector<Slot *>> confirm_ring;    // per receiving thread
    Nic *alone_send = nullptr, *alone_recv = nullptr; // the NIC handles of an `alone` setup's ends
};

// Everything this process opened.  The constructor opens the NICs (two when
// a setup asks for them) and creates and connects every setup's VIs;
// failures throw std::runtime_error naming the call and its return code.
class Fabric {
public:
    Fabric(const logp::Job &job, bool single, const std::string &device, const std::vector<SetupShape> &shapes);
    ~Fabric();
    Fabric(const Fabric &) = delete;
    Fabric &operator=(const Fabric &) = delete;

    bool sends() const { return sends_; }
    bool receives() const { return receives_; }
    Setup &setup(const std::string &name);
    const Nic &nic(int i) const { return nics_[std::size_t(i)]; }
    int nics() const { return int(nics_.size()); }

private:
    void release(); // everything opened, closed (the destructor; a constructor that fails)
    Nic *open_nic(const std::string &device, std::size_t slots);
    Nic *nic_for(const Setup &s, int link, bool send_end);
    void build(Setup &s, const logp::Job &job);
    void connect(Setup &s, int link, const logp::Job &job);

    bool single_, sends_, receives_;
    std::deque<Nic> nics_; // [0] every setup's but alone's, [1] two_nics' second, then alone's
    std::string device_;
    std::vector<Setup> setups_;
};

// Reposts a receive slot (kBufBytes).
void post_recv(const LinkEnd &end, Slot *s);
// Fills a send slot with a message of kMsgBytes; the caller posts it.
void fill_send(const LinkEnd &end, Slot *s, const Msg &m);
// Throws naming `what` unless d completed without an error.
void check_done(const VIP_DESCRIPTOR *d, const char *what);
void check(VIP_RETURN rc, const char *what);

} // namespace thbench
