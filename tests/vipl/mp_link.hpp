// mp_link.hpp - a connection between this rank and its partner (rank ^ 1) for the
// multi-process suite: a control VI (reliable when the NIC allows) carrying small
// "ready"/"info" messages, and a data VI at the level under test.
//
// Tests never call collective operations in their bodies: ranks synchronise only
// through control messages with timeouts, so a failure on one rank makes the other
// fail its wait instead of hanging, and the per-test barrier in SetUp/TearDown
// keeps the ranks in step.
#pragma once

#include <memory>
#include <string>

#include "vipl_test_util.hpp"

namespace vt {

// The partner's NIC address, gathered once before the tests (mp_main environment).
int my_rank();
int partner_rank();
const std::vector<uint8_t> &partner_host();
const std::vector<uint8_t> &host_of(int rank);
bool is_server(); // the lower rank of the pair serves

// The timeout of each VipConnectRequest in a requester's retry loop.  A
// second, as docs/verbs.md advises on soft-RoCE: an rdma_cm handshake in the
// emulated guest on a loaded machine can outlast a shorter one, and each
// withdrawn attempt then races the server's accept.  It costs nothing when the
// server comes late: its NIC holds the request until it waits.
constexpr VIP_ULONG kRequestMs = 1000;

// Connects vi to the partner with the client/server calls: the server waits on
// (its address, disc) and accepts; the client retries its request until the server
// listens.  Both ranks must call it with the same disc.
::testing::AssertionResult connect_to_partner(VIP_VI_HANDLE vi, const std::string &disc,
                                              VIP_VI_ATTRIBUTES *remote_attr = nullptr);

struct CtlMsg {
    uint32_t kind;
    uint32_t value;
    uint64_t addr;
    uint32_t mh;
    uint32_t len;
    uint8_t pad[40];
};
static_assert(sizeof(CtlMsg) == 64);

class Link {
public:
    static constexpr int kCtlSlots = 8;   // control receives kept posted
    static constexpr int kDataSlot0 = 16; // first descriptor slot free for tests

    Link();
    ~Link();
    // Creates both VIs (data VI with `data_attr`), pre-posts control receives and
    // connects both.  `name` must be the same on both ranks.
    ::testing::AssertionResult open(const std::string &name, VIP_VI_ATTRIBUTES data_attr,
                                    VIP_CQ_HANDLE data_send_cq = nullptr, VIP_CQ_HANDLE data_recv_cq = nullptr);
    ::testing::AssertionResult send_ctl(const CtlMsg &m);
    ::testing::AssertionResult recv_ctl(CtlMsg *m, VIP_ULONG ms = kWaitMs);
    // Sends a message of `kind` and waits for the partner's message of the same kind.
    ::testing::AssertionResult handshake(uint32_t kind, CtlMsg *theirs = nullptr, const CtlMsg *mine = nullptr);

    VIP_VI_HANDLE data() const { return data_->h(); }
    VIP_VI_HANDLE ctl() const { return ctl_->h(); }
    VIP_PROTECTION_HANDLE ptag() const { return tag_.h(); }
    VIP_DESCRIPTOR *d(size_t i) const { return descs_.at(kDataSlot0 + i); }
    VIP_MEM_HANDLE dmh() const { return descs_.mh(); }
    void close_data() { data_.reset(); }

private:
    Ptag tag_;
    Descs descs_;
    Mem ctl_buf_;
    std::unique_ptr<Vi> ctl_, data_;
    int next_recv_ = 0;
};

} // namespace vt
