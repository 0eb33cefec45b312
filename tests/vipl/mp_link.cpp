// mp_link.cpp - see mp_link.hpp.
#include "mp_link.hpp"

#include <thread>

#include "vipl_boot.h"

namespace vt {

namespace {
std::vector<std::vector<uint8_t>> g_hosts;

// Gathers every rank's NIC address before the first test (collective).
class AddressEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        int n = vipl_boot_size();
        struct Item {
            uint16_t len;
            uint8_t bytes[VIP_MAX_HOST_ADDRESS_LEN];
        } mine{}, *all = new Item[n];
        mine.len = nic_attr().NicAddressLen;
        std::memcpy(mine.bytes, nic_attr().LocalNicAddress, mine.len);
        int rc = vipl_boot_allgather(&mine, sizeof mine, all);
        ASSERT_EQ(rc, VIPL_BOOT_OK) << "vipl_boot_allgather failed";
        for (int r = 0; r < n; r++) g_hosts.emplace_back(all[r].bytes, all[r].bytes + all[r].len);
        delete[] all;
    }
};
const ::testing::Environment *g_env = ::testing::AddGlobalTestEnvironment(new AddressEnvironment);
} // namespace

int my_rank() { return vipl_boot_rank(); }
int partner_rank() { return my_rank() ^ 1; }
const std::vector<uint8_t> &host_of(int rank) { return g_hosts.at(rank); }
const std::vector<uint8_t> &partner_host() { return host_of(partner_rank()); }
bool is_server() { return my_rank() < partner_rank(); }

::testing::AssertionResult connect_to_partner(VIP_VI_HANDLE vi, const std::string &disc,
                                              VIP_VI_ATTRIBUTES *remote_attr) {
    VIP_VI_ATTRIBUTES ra{};
    if (is_server()) {
        NetAddr local = NetAddr::local(disc);
        NetAddr remote;
        VIP_CONN_HANDLE conn = nullptr;
        VIP_RETURN rc = VipConnectWait(nic(), local.get(), kWaitMs, remote.get(), &ra, &conn);
        if (rc != VIP_SUCCESS)
            return ::testing::AssertionFailure() << "VipConnectWait(" << disc << ") returned " << rc_str(rc);
        rc = VipConnectAccept(conn, vi);
        if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "VipConnectAccept returned " << rc_str(rc);
    } else {
        NetAddr local = NetAddr::local(disc + "-client");
        const auto &h = partner_host();
        NetAddr remote(h.data(), (VIP_UINT16)h.size(), disc);
        VIP_RETURN rc;
        auto t0 = Clock::now();
        do {
            rc = VipConnectRequest(vi, local.get(), remote.get(), kRequestMs, &ra);
        } while ((rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) && elapsed_ms(t0) < (long)kWaitMs);
        if (rc != VIP_SUCCESS)
            return ::testing::AssertionFailure() << "VipConnectRequest(" << disc << ") returned " << rc_str(rc);
    }
    if (remote_attr) *remote_attr = ra;
    return ::testing::AssertionSuccess();
}

Link::Link()
    : descs_(kDataSlot0 + 48, std::min<size_t>(nic_attr().MaxSegmentsPerDesc, kMaxTestSegments), tag_.h()),
      ctl_buf_(2 * kCtlSlots * sizeof(CtlMsg), tag_.h()) {}

Link::~Link() {
    data_.reset();
    ctl_.reset();
}

::testing::AssertionResult Link::open(const std::string &name, VIP_VI_ATTRIBUTES data_attr, VIP_CQ_HANDLE data_send_cq,
                                      VIP_CQ_HANDLE data_recv_cq) {
    VIP_VI_ATTRIBUTES ca = vi_attr(supported_levels().back(), tag_.h());
    ca.MaxTransferSize = std::min<VIP_ULONG>(ca.MaxTransferSize, 4096);
    ctl_ = std::make_unique<Vi>(ca);
    data_attr.Ptag = tag_.h();
    data_ = std::make_unique<Vi>(data_attr, data_send_cq, data_recv_cq);
    if (ctl_->rc != VIP_SUCCESS || data_->rc != VIP_SUCCESS)
        return ::testing::AssertionFailure() << "VipCreateVi: " << rc_str(ctl_->rc) << " / " << rc_str(data_->rc);
    for (int i = 0; i < kCtlSlots; i++) {
        VIP_DESCRIPTOR *d = descs_.at(i);
        fill_recv(d, {{ctl_buf_.p() + i * sizeof(CtlMsg), ctl_buf_.mh(), sizeof(CtlMsg)}});
        VIP_RETURN rc = VipPostRecv(ctl_->h(), d, descs_.mh());
        if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "VipPostRecv(ctl) " << rc_str(rc);
    }
    auto r = connect_to_partner(ctl_->h(), name + "-ctl");
    if (!r) return r;
    return connect_to_partner(data_->h(), name + "-data");
}

::testing::AssertionResult Link::send_ctl(const CtlMsg &m) {
    uint8_t *buf = ctl_buf_.p() + kCtlSlots * sizeof(CtlMsg);
    std::memcpy(buf, &m, sizeof m);
    VIP_DESCRIPTOR *d = descs_.at(kCtlSlots);
    fill_send(d, {{buf, ctl_buf_.mh(), sizeof(CtlMsg)}});
    VIP_RETURN rc = VipPostSend(ctl_->h(), d, descs_.mh());
    if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "VipPostSend(ctl) " << rc_str(rc);
    VIP_DESCRIPTOR *done = wait_send(ctl_->h(), kWaitMs, &rc);
    if (done != d) return ::testing::AssertionFailure() << "control send did not complete: " << rc_str(rc);
    if (d->CS.Status & VIP_STATUS_ERROR_MASK)
        return ::testing::AssertionFailure() << "control send failed: " << status_str(d->CS.Status);
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult Link::recv_ctl(CtlMsg *m, VIP_ULONG ms) {
    VIP_RETURN rc;
    VIP_DESCRIPTOR *d = wait_recv(ctl_->h(), ms, &rc);
    if (!d)
        return ::testing::AssertionFailure() << "no control message from rank " << partner_rank() << ": " << rc_str(rc);
    int slot = next_recv_;
    next_recv_ = (next_recv_ + 1) % kCtlSlots;
    if (d != descs_.at(slot)) return ::testing::AssertionFailure() << "control receives completed out of order";
    if (d->CS.Status & VIP_STATUS_ERROR_MASK)
        return ::testing::AssertionFailure() << "control receive failed: " << status_str(d->CS.Status);
    std::memcpy(m, ctl_buf_.p() + slot * sizeof(CtlMsg), sizeof *m);
    fill_recv(d, {{ctl_buf_.p() + slot * sizeof(CtlMsg), ctl_buf_.mh(), sizeof(CtlMsg)}});
    rc = VipPostRecv(ctl_->h(), d, descs_.mh());
    if (rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "re-posting a control receive: " << rc_str(rc);
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult Link::handshake(uint32_t kind, CtlMsg *theirs, const CtlMsg *mine) {
    CtlMsg out{};
    if (mine) out = *mine;
    out.kind = kind;
    auto r = send_ctl(out);
    if (!r) return r;
    CtlMsg in{};
    r = recv_ctl(&in);
    if (!r) return r;
    if (in.kind != kind)
        return ::testing::AssertionFailure()
            << "control message kind " << in.kind << ", expected " << kind << " (ranks out of step)";
    if (theirs) *theirs = in;
    return ::testing::AssertionSuccess();
}

} // namespace vt
