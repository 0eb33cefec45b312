// test_mp_conn.cpp - connections between partner ranks (run under `vipl-run -n 2`):
// client/server accept and reject, their private data and the request that
// does not block, timeouts, peer-to-peer, disconnect, the name service, and
// many VIs sharing one completion queue.
#include <unistd.h>

#include <functional>
#include <thread>

#include "mp_fixture.hpp"

using namespace vt;

namespace {

using MpConn = MpTest;

TEST_P(MpConn, ManyVisOnOneCompletionQueue) {
    constexpr int nvi = 3;
    VIP_CQ_HANDLE cq = nullptr;
    VT_ASSERT_OK(VipCreateCQ(nic(), 64, &cq));
    {
        std::vector<std::unique_ptr<Link>> links;
        for (int i = 0; i < nvi; i++) {
            links.push_back(std::make_unique<Link>());
            ASSERT_TRUE(
                links.back()->open(name() + "." + std::to_string(i), attr(), nullptr, is_server() ? cq : nullptr));
        }
        std::vector<std::unique_ptr<Mem>> bufs;
        for (int i = 0; i < nvi; i++) bufs.push_back(std::make_unique<Mem>(64, links[i]->ptag()));
        if (is_server()) {
            for (int i = 0; i < nvi; i++) {
                fill_recv(links[i]->d(0), {{bufs[i]->p(), bufs[i]->mh(), 64}});
                VT_ASSERT_OK(VipPostRecv(links[i]->data(), links[i]->d(0), links[i]->dmh()));
            }
            ASSERT_TRUE(links[0]->handshake(kReady));
            std::vector<int> seen(nvi, 0);
            for (int k = 0; k < nvi; k++) {
                VIP_VI_HANDLE vi = nullptr;
                VIP_BOOLEAN rq = VIP_FALSE;
                VT_ASSERT_OK(VipCQWait(cq, kWaitMs, &vi, &rq));
                EXPECT_EQ(rq, VIP_TRUE);
                for (int i = 0; i < nvi; i++)
                    if (links[i]->data() == vi) {
                        seen[i]++;
                        VIP_DESCRIPTOR *r = nullptr;
                        VT_ASSERT_OK(VipRecvDone(vi, &r));
                        EXPECT_EQ(r, links[i]->d(0));
                        EXPECT_EQ(r->CS.ImmediateData, (VIP_UINT32)i);
                    }
            }
            for (int i = 0; i < nvi; i++) EXPECT_EQ(seen[i], 1) << "CQ entries for VI " << i;
            VIP_VI_HANDLE vi;
            VIP_BOOLEAN rq;
            VT_EXPECT_RC(VIP_NOT_DONE, VipCQDone(cq, &vi, &rq));
        } else {
            ASSERT_TRUE(links[0]->handshake(kReady));
            for (int i = nvi - 1; i >= 0; i--) {
                fill_send(links[i]->d(0), {{bufs[i]->p(), bufs[i]->mh(), 8}}, true, (VIP_UINT32)i);
                VT_ASSERT_OK(VipPostSend(links[i]->data(), links[i]->d(0), links[i]->dmh()));
                ASSERT_EQ(wait_send(links[i]->data()), links[i]->d(0));
            }
        }
        ASSERT_TRUE(links[0]->handshake(kDone));
        bufs.clear();
        links.clear();
    }
    VT_EXPECT_OK(VipDestroyCQ(cq));
}

// ---- connection paths ---------------------------------------------------------------
TEST_P(MpConn, ClientServerAcceptReportsPeerAddressAndAttributes) {
    Ptag tag;
    VIP_VI_ATTRIBUTES at = attr();
    at.Ptag = tag.h();
    at.MaxTransferSize = std::min<VIP_ULONG>(at.MaxTransferSize, is_server() ? 2048 : 1024);
    Vi vi(at);
    VT_ASSERT_OK(vi.rc);
    BarrierAtScopeExit keep_until_both_checked;
    std::string disc = name() + std::string(64, 'D');
    disc.resize(std::min<size_t>(nic_attr().MaxDiscriminatorLen, 64));
    if (is_server()) {
        NetAddr local = NetAddr::local(disc), remote;
        VIP_VI_ATTRIBUTES ra{};
        VIP_CONN_HANDLE conn = nullptr;
        VT_ASSERT_OK(VipConnectWait(nic(), local.get(), kWaitMs, remote.get(), &ra, &conn));
        EXPECT_EQ(remote.host(), partner_host()) << "RemoteAddr names the client's NIC";
        EXPECT_EQ(ra.MaxTransferSize, std::min<VIP_ULONG>(max_transfer(), 1024));
        EXPECT_EQ(ra.ReliabilityLevel, level());
        VT_ASSERT_OK(VipConnectAccept(conn, vi.h()));
        EXPECT_EQ(vi_state(vi.h()), VIP_STATE_CONNECTED);
    } else {
        VIP_VI_ATTRIBUTES ra{};
        ASSERT_TRUE(connect_to_partner(vi.h(), disc, &ra));
        EXPECT_EQ(ra.MaxTransferSize, std::min<VIP_ULONG>(max_transfer(), 2048))
            << "RemoteViAttribs are the server VI's";
        EXPECT_EQ(vi_state(vi.h()), VIP_STATE_CONNECTED);
    }
}

TEST_P(MpConn, ClientServerRejectThenAccept) {
    Ptag tag;
    VIP_VI_ATTRIBUTES at = attr();
    at.Ptag = tag.h();
    Vi vi(at);
    VT_ASSERT_OK(vi.rc);
    BarrierAtScopeExit keep_until_both_checked;
    std::string disc = name();
    if (is_server()) {
        NetAddr local = NetAddr::local(disc), remote;
        VIP_VI_ATTRIBUTES ra{};
        VIP_CONN_HANDLE conn = nullptr;
        VT_ASSERT_OK(VipConnectWait(nic(), local.get(), kWaitMs, remote.get(), &ra, &conn));
        VT_ASSERT_OK(VipConnectReject(conn));
        VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectAccept(conn, vi.h())) << "a rejected connection handle is gone";
        VT_ASSERT_OK(VipConnectWait(nic(), local.get(), kWaitMs, remote.get(), &ra, &conn));
        VT_ASSERT_OK(VipConnectAccept(conn, vi.h()));
    } else {
        NetAddr local = NetAddr::local(disc + "-c");
        NetAddr remote(partner_host().data(), (VIP_UINT16)partner_host().size(), disc);
        VIP_VI_ATTRIBUTES ra{};
        VIP_RETURN rc;
        auto t0 = Clock::now();
        do {
            rc = VipConnectRequest(vi.h(), local.get(), remote.get(), kRequestMs, &ra);
        } while ((rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) && elapsed_ms(t0) < (long)kWaitMs);
        EXPECT_EQ(rc, VIP_REJECT) << rc_str(rc);
        EXPECT_EQ(vi_state(vi.h()), VIP_STATE_IDLE) << "a rejected VI returns to idle";
        ASSERT_TRUE(connect_to_partner(vi.h(), disc)) << "the VI is reusable after a reject";
    }
    EXPECT_EQ(vi_state(vi.h()), VIP_STATE_CONNECTED);
}

// The connection extensions across processes (and over verbs): a request's
// private data reaches the server, a reject's and an accept's reach the client,
// whose request does not block.  The lengths are ofi_rxm's: 24 bytes with
// fi_connect, 16 with fi_accept, a short reason with fi_reject.
TEST_P(MpConn, PrivateDataTravelsWithRequestRejectAndAccept) {
    Ptag tag;
    VIP_VI_ATTRIBUTES at = attr();
    at.Ptag = tag.h();
    Vi vi(at);
    VT_ASSERT_OK(vi.rc);
    BarrierAtScopeExit keep_until_both_checked;
    // Short: on verbs a request's data shares rdma_cm's REQ with the discriminators.
    std::string disc = "pd" + std::to_string(std::hash<std::string>{}(name()) % 1000000);
    auto bytes = [](uint8_t seed, size_t n) {
        std::vector<uint8_t> v(n);
        for (size_t i = 0; i < n; i++) v[i] = uint8_t(seed * 31 + i);
        return v;
    };
    if (is_server()) {
        NetAddr local = NetAddr::local(disc), remote;
        VIP_VI_ATTRIBUTES ra{};
        VIP_CONN_HANDLE conn = nullptr;
        uint8_t got[VIPX_CM_DATA_MAX];
        VIP_ULONG len = sizeof got;
        VT_ASSERT_OK(VipxConnectWaitData(nic(), local.get(), kWaitMs, remote.get(), &ra, &conn, got, &len));
        ASSERT_EQ(len, 24u);
        EXPECT_EQ(std::vector<uint8_t>(got, got + len), bytes(1, 24));
        auto reason = bytes(2, 2);
        VT_ASSERT_OK(VipxConnectRejectData(conn, reason.data(), reason.size()));
        len = sizeof got;
        VT_ASSERT_OK(VipxConnectWaitData(nic(), local.get(), kWaitMs, remote.get(), &ra, &conn, got, &len));
        ASSERT_EQ(len, 24u);
        EXPECT_EQ(std::vector<uint8_t>(got, got + len), bytes(3, 24));
        auto reply = bytes(4, 16);
        VT_ASSERT_OK(VipxConnectAcceptData(conn, vi.h(), reply.data(), reply.size()));
        EXPECT_EQ(vi_state(vi.h()), VIP_STATE_CONNECTED);
    } else {
        NetAddr local = NetAddr::local("");
        NetAddr remote(partner_host().data(), (VIP_UINT16)partner_host().size(), disc);
        auto request = [&](uint8_t seed, std::vector<uint8_t> *answer, VIP_VI_ATTRIBUTES *ra) {
            auto data = bytes(seed, 24);
            VIP_RETURN rc = VipxConnectRequestStart(vi.h(), local.get(), remote.get(), kWaitMs, data.data(), 24);
            if (rc != VIP_SUCCESS) return rc;
            uint8_t buf[VIPX_CM_DATA_MAX];
            VIP_ULONG len = sizeof buf;
            // Polled: the call never waits.
            while ((rc = VipxConnectRequestDone(vi.h(), ra, buf, &len)) == VIP_NOT_DONE) std::this_thread::yield();
            answer->assign(buf, buf + std::min<VIP_ULONG>(len, sizeof buf));
            return rc;
        };
        std::vector<uint8_t> answer;
        VIP_VI_ATTRIBUTES ra{};
        VT_ASSERT_RC(VIP_REJECT, request(1, &answer, &ra));
        EXPECT_EQ(answer, bytes(2, 2));
        EXPECT_EQ(vi_state(vi.h()), VIP_STATE_IDLE);
        VT_ASSERT_OK(request(3, &answer, &ra));
        EXPECT_EQ(answer, bytes(4, 16));
        EXPECT_EQ(ra.ReliabilityLevel, level());
        EXPECT_EQ(vi_state(vi.h()), VIP_STATE_CONNECTED);
    }
}

TEST_P(MpConn, ConnectTimeouts) {
    Ptag tag;
    VIP_VI_ATTRIBUTES at = attr();
    at.Ptag = tag.h();
    Vi vi(at);
    VT_ASSERT_OK(vi.rc);
    // Nobody requests this discriminator / nobody listens on that one.
    NetAddr local = NetAddr::local(name() + "-quiet"), remote;
    VIP_VI_ATTRIBUTES ra;
    VIP_CONN_HANDLE conn;
    auto t0 = Clock::now();
    VT_EXPECT_RC(VIP_TIMEOUT, VipConnectWait(nic(), local.get(), 100, remote.get(), &ra, &conn));
    EXPECT_GE(elapsed_ms(t0), 95);
    NetAddr mine = NetAddr::local(name() + "-me");
    NetAddr deaf(partner_host().data(), (VIP_UINT16)partner_host().size(), name() + "-deaf");
    t0 = Clock::now();
    VIP_RETURN rc = VipConnectRequest(vi.h(), mine.get(), deaf.get(), 100, &ra);
    EXPECT_TRUE(rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) << rc_str(rc);
    EXPECT_LT(elapsed_ms(t0), 3000);
    EXPECT_EQ(vi_state(vi.h()), VIP_STATE_IDLE);
}

TEST_P(MpConn, PeerToPeerConnectAndExchange) {
    Ptag tag;
    VIP_VI_ATTRIBUTES at = attr();
    at.Ptag = tag.h();
    Vi vi(at);
    VT_ASSERT_OK(vi.rc);
    BarrierAtScopeExit keep_until_both_checked;
    Descs ds(2, 1, tag.h());
    Mem buf(128, tag.h());
    fill_recv(ds.at(0), {{buf.p() + 64, buf.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(vi.h(), ds.at(0), ds.mh())); // before connecting: no race
    std::string base = name();
    NetAddr local = NetAddr::local(base + "-" + std::to_string(my_rank()));
    NetAddr remote(partner_host().data(), (VIP_UINT16)partner_host().size(),
                   base + "-" + std::to_string(partner_rank()));
    VT_ASSERT_OK(VipConnectPeerRequest(vi.h(), local.get(), remote.get(), kWaitMs));
    VIP_VI_ATTRIBUTES ra{};
    VT_ASSERT_OK(VipConnectPeerWait(vi.h(), &ra));
    EXPECT_EQ(ra.ReliabilityLevel, level());
    EXPECT_EQ(vi_state(vi.h()), VIP_STATE_CONNECTED);
    fill_pattern(buf.p(), 64, my_rank());
    fill_send(ds.at(1), {{buf.p(), buf.mh(), 64}});
    VT_ASSERT_OK(VipPostSend(vi.h(), ds.at(1), ds.mh()));
    EXPECT_EQ(wait_send(vi.h()), ds.at(1));
    VIP_DESCRIPTOR *r = wait_recv(vi.h());
    ASSERT_EQ(r, ds.at(0));
    EXPECT_EQ(check_pattern(buf.p() + 64, 64, partner_rank()), -1);
}

TEST_P(MpConn, DisconnectFlushesAndBreaksThePeer) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    Mem buf(64, link.ptag());
    fill_recv(link.d(0), {{buf.p(), buf.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
    ASSERT_TRUE(link.handshake(kReady));
    if (is_server()) {
        VT_ASSERT_OK(VipDisconnect(link.data()));
        EXPECT_EQ(vi_state(link.data()), VIP_STATE_IDLE);
        VIP_RETURN rc;
        VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
        ASSERT_EQ(r, link.d(0)) << "posted receive not completed by VipDisconnect: " << rc_str(rc);
        EXPECT_TRUE(status_has(r->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR));
        ASSERT_TRUE(link.handshake(kDone));
    } else {
        VIP_VI_STATE st = wait_state_change(link.data(), VIP_STATE_CONNECTED, 3000);
        EXPECT_NE(st, VIP_STATE_CONNECTED) << "the peer never noticed the disconnect";
        ASSERT_TRUE(link.handshake(kDone));
        VT_EXPECT_OK(VipDisconnect(link.data()));
        VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs);
        ASSERT_EQ(r, link.d(0));
        EXPECT_TRUE(status_has(r->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR));
    }
}

TEST_P(MpConn, APeerDisconnectEndsAWaitingReceive) {
    // The client sleeps in VipRecvWait (it never queries the VI's state) while
    // the server disconnects: the wait must hand back the receive, flushed, at
    // once; it must not sit out its timeout.
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    Mem buf(64, link.ptag());
    fill_recv(link.d(0), {{buf.p(), buf.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
    ASSERT_TRUE(link.handshake(kReady));
    if (is_server()) {
        VT_ASSERT_OK(VipDisconnect(link.data()));
        VIP_RETURN rc;
        ASSERT_EQ(wait_recv(link.data(), kWaitMs, &rc), link.d(0)) << rc_str(rc);
        ASSERT_TRUE(link.handshake(kDone));
    } else {
        VIP_RETURN rc;
        VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
        ASSERT_EQ(r, link.d(0)) << "the peer's disconnect did not end VipRecvWait: " << rc_str(rc);
        EXPECT_TRUE(status_has(r->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR)) << status_str(r->CS.Status);
        EXPECT_NE(vi_state(link.data()), VIP_STATE_CONNECTED);
        ASSERT_TRUE(link.handshake(kDone));
        VT_EXPECT_OK(VipDisconnect(link.data()));
    }
}

TEST_P(MpConn, NameServiceResolvesEveryRank) {
    VT_ASSERT_OK(VipNSInit(nic(), nullptr));
    for (int r = 0; r < vipl_boot_size(); r++) {
        std::string nm = "node" + std::to_string(r);
        NetAddr a;
        VIP_RETURN rc = VipNSGetHostByName(nic(), nm.data(), a.get(), 0);
        if (rc != VIP_SUCCESS && !provider_is_nicfw()) {
            VipNSShutdown(nic());
            GTEST_SKIP() << nic_attr().Name << " does not resolve " << nm;
        }
        VT_ASSERT_OK(rc) << nm;
        EXPECT_EQ(a.host(), host_of(r)) << nm;
        char back[128] = {};
        VIP_ULONG len = sizeof back;
        VT_ASSERT_OK(VipNSGetHostByAddr(nic(), a.get(), back, &len));
        NetAddr again;
        VT_ASSERT_OK(VipNSGetHostByName(nic(), back, again.get(), 0));
        EXPECT_EQ(again.host(), host_of(r)) << back;
    }
    VT_EXPECT_OK(VipNSShutdown(nic()));
}

// Programs written for M-VIA or cLAN resolve host names (gethostname(), a host
// list from their launcher), not "node<rank>".  Under vipl-run every rank is on
// this host: NameIndex i picks the i-th rank on it, "host#r" names rank r, and
// VipNSGetHostByAddr gives back a name that resolves to the same NIC.
TEST_P(MpConn, HostNamesResolveEveryRankOnThisHost) {
    VT_ASSERT_OK(VipNSInit(nic(), nullptr));
    char hn[256] = {};
    gethostname(hn, sizeof hn - 1);
    const std::string host = hn, shortname = host.substr(0, host.find('.'));
    const int n = vipl_boot_size();
    for (int r = 0; r < n; r++) {
        for (std::string nm : {host, shortname, std::string("localhost")}) {
            NetAddr a;
            VT_ASSERT_OK(VipNSGetHostByName(nic(), nm.data(), a.get(), VIP_ULONG(r))) << nm << " index " << r;
            EXPECT_EQ(a.host(), host_of(r)) << nm << " index " << r;
        }
        std::string qualified = shortname + "#" + std::to_string(r);
        NetAddr a;
        VT_ASSERT_OK(VipNSGetHostByName(nic(), qualified.data(), a.get(), 0)) << qualified;
        EXPECT_EQ(a.host(), host_of(r)) << qualified;

        char back[256] = {};
        VIP_ULONG len = sizeof back;
        VT_ASSERT_OK(VipNSGetHostByAddr(nic(), a.get(), back, &len));
        EXPECT_EQ(std::string(back).substr(0, shortname.size()), shortname) << back;
        NetAddr again;
        VT_ASSERT_OK(VipNSGetHostByName(nic(), back, again.get(), 0)) << back;
        EXPECT_EQ(again.host(), host_of(r)) << back;
    }
    std::string nm = host;
    NetAddr a;
    VT_EXPECT_RC(VIP_ERROR_NAMESERVICE, VipNSGetHostByName(nic(), nm.data(), a.get(), VIP_ULONG(n)));
    VT_EXPECT_OK(VipNSShutdown(nic()));
}

VT_INSTANTIATE_MP_LEVELS(MpConn);

} // namespace
