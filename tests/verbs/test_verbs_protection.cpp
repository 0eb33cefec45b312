// test_verbs_protection.cpp - what the RDMA device enforces and what the verbs
// provider checks itself, one test per row of the table in docs/security.md
// ("Protection on verbs").  Two VIs of one NIC connected to each other (the VIPL
// suite's loopback fixture), at every reliability level the device offers:
// Unreliable is a UC queue pair, Reliable Delivery and Reliable Reception are RC.
//
// Where the device is silent (UC: IB class D errors at the responder are dropped
// without a NAK), each test states the library's behaviour and checks it: the
// initiator's descriptor, the target's memory, and both VIs' states afterwards.
// A good message behind a dropped one on the same VI is the barrier: a VI delivers
// in order, so once it has arrived the target has judged the dropped one.
#include <cstring>

#include "loopback_fixture.hpp"

using namespace vt;

namespace {

class VerbsProtection : public LoopbackTest {
protected:
    void SetUp() override {
        if (provider_is_nicfw() || provider_is_fake()) GTEST_SKIP() << "verbs provider only (VIPL_PROVIDER=verbs)";
        LoopbackTest::SetUp();
    }

    // a -> b: one good 16-byte send arrives and completes without error.
    void expect_good_message(uint32_t imm) {
        Mem src(64, tag->h()), dst(64, tag->h());
        fill_pattern(src.p(), 16, imm);
        fill_recv(d(50), {{dst.p(), dst.mh(), 64}});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(50), dmh()));
        fill_send(d(51), {{src.p(), src.mh(), 16}}, true, imm);
        VT_ASSERT_OK(VipPostSend(a->h(), d(51), dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
        ASSERT_EQ(r, d(50)) << "the VI is unusable after the violation: " << rc_str(rc);
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, true));
        EXPECT_EQ(r->CS.ImmediateData, imm);
        EXPECT_EQ(check_pattern(dst.p(), 16, imm), -1);
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(51)) << rc_str(rc);
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, 0));
    }

    // After an error the library or the device detected at the initiator a:
    // RC breaks the connection (both VIs end in ERROR), UC carries on.
    void expect_after_initiator_error() {
        if (reliable()) {
            EXPECT_EQ(wait_state_change(a->h(), VIP_STATE_CONNECTED, 5000), VIP_STATE_ERROR);
        } else {
            EXPECT_EQ(vi_state(a->h()), VIP_STATE_CONNECTED);
            EXPECT_EQ(vi_state(b->h()), VIP_STATE_CONNECTED);
            expect_good_message(77);
        }
    }

    // A send whose gather list fails the library's checks never reaches the
    // device: PROTECTION_ERROR in the descriptor, nothing at the receiver.
    void local_gather(const Seg &seg) {
        Mem rbuf(128, tag->h());
        fill_recv(d(0), {{rbuf.p(), rbuf.mh(), 128}});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
        fill_send(d(1), {seg});
        VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(1)) << rc_str(rc);
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, VIP_STATUS_PROTECTION_ERROR));
        if (reliable()) {
            expect_after_initiator_error();
            return;
        }
        // UC: the good message takes the receive the bad one never reached.
        Mem src(64, tag->h());
        fill_pattern(src.p(), 16, 5);
        fill_send(d(2), {{src.p(), src.mh(), 16}}, true, 5);
        VT_ASSERT_OK(VipPostSend(a->h(), d(2), dmh()));
        VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
        ASSERT_EQ(r, d(0)) << rc_str(rc);
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, true));
        EXPECT_EQ(r->CS.ImmediateData, 5u) << "the refused send was delivered";
        EXPECT_EQ(wait_send(a->h()), d(2));
    }

    enum class Target { NotEnabled, ViNotEnabled, PastEnd, OtherPtag, Deregistered };

    // RDMA write a -> b into a target that refuses it.  RC: the device refuses
    // (REM_ACCESS_ERR / REM_INV_REQ_ERR), the initiator's descriptor completes
    // with RDMA_PROT_ERROR, both ends break.  UC: the device drops the write
    // silently (the library cannot see the target's memory), the initiator's
    // descriptor completes without error, nothing is written, both VIs stay
    // connected -- except a VI without RDMA write, which the library knows from
    // the connection exchange and refuses before posting (RDMA_PROT_ERROR).
    void rdma_write(Target kind) {
        Ptag other;
        connect(attr(true), attr(kind != Target::ViNotEnabled));
        Mem target(4096, kind == Target::OtherPtag ? other.h() : tag->h(), kind != Target::NotEnabled);
        Mem src(4096, tag->h());
        VT_ASSERT_OK(target.rc);
        fill_pattern(target.p(), 4096, 1234);
        fill_pattern(src.p(), 4096, 999);
        uint8_t *raddr = kind == Target::PastEnd ? target.p() + 4096 - 128 : target.p();
        VIP_MEM_HANDLE rmh = target.mh();
        std::unique_ptr<Mem> gone;
        if (kind == Target::Deregistered) {
            gone = std::make_unique<Mem>(4096, tag->h(), true);
            VT_ASSERT_OK(gone->rc);
            fill_pattern(gone->p(), 4096, 1234);
            raddr = gone->p();
            rmh = gone->mh();
            VT_ASSERT_OK(VipDeregisterMem(nic(), gone->p(), gone->mh()));
            gone->forget();
        }
        const uint8_t *watched = gone ? gone->p() : target.p();
        fill_rdma(d(1), VIP_CONTROL_OP_RDMAWRITE, raddr, rmh, {{src.p(), src.mh(), 256}});
        VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(1)) << rc_str(rc);
        if (reliable() || kind == Target::ViNotEnabled) {
            EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, VIP_STATUS_RDMA_PROT_ERROR));
        } else {
            EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0))
                << "UC: the device drops the write without telling the initiator";
        }
        if (reliable()) {
            // The initiator's error came back from the target: it judged the write.
            EXPECT_EQ(check_pattern(watched, 4096, 1234), -1) << "protected memory was written";
            EXPECT_EQ(wait_state_change(a->h(), VIP_STATE_CONNECTED, 5000), VIP_STATE_ERROR);
            EXPECT_EQ(wait_state_change(b->h(), VIP_STATE_CONNECTED, 5000), VIP_STATE_ERROR)
                << "the target VI must notice that the device stopped its queue pair";
            return;
        }
        expect_good_message(78); // the barrier: the target has judged the write
        EXPECT_EQ(check_pattern(watched, 4096, 1234), -1) << "protected memory was written";
        EXPECT_EQ(vi_state(a->h()), VIP_STATE_CONNECTED);
        EXPECT_EQ(vi_state(b->h()), VIP_STATE_CONNECTED);
    }

    // RDMA read a <- b.  RC: the device refuses, RDMA_PROT_ERROR, nothing read,
    // the initiator breaks.  UC has no RDMA read: VIP_INVALID_RDMAREAD at create,
    // and a read descriptor on a UC VI is refused by the library (FORMAT_ERROR).
    void rdma_read(Target kind) {
        if (!reliable()) {
            VIP_VI_ATTRIBUTES at = vi_attr(level(), tag->h(), true, true);
            VIP_VI_HANDLE vi = nullptr;
            EXPECT_EQ(VipCreateVi(nic(), &at, nullptr, nullptr, &vi), VIP_INVALID_RDMAREAD);
            connect(attr(true), attr(true));
            Mem remote(4096, tag->h(), true, true), local(4096, tag->h());
            fill_pattern(remote.p(), 4096, 55);
            fill_rdma(d(1), VIP_CONTROL_OP_RDMAREAD, remote.p(), remote.mh(), {{local.p(), local.mh(), 512}});
            VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
            VIP_DESCRIPTOR *s = wait_send(a->h());
            ASSERT_EQ(s, d(1));
            EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_READ, VIP_STATUS_FORMAT_ERROR));
            EXPECT_EQ(local.p()[0], 0);
            expect_after_initiator_error();
            return;
        }
        Ptag other;
        connect(attr(true, true), attr(true, kind != Target::ViNotEnabled));
        Mem remote(4096, kind == Target::OtherPtag ? other.h() : tag->h(), false, kind != Target::NotEnabled);
        Mem local(4096, tag->h());
        fill_pattern(remote.p(), 4096, 55);
        uint8_t *raddr = kind == Target::PastEnd ? remote.p() + 4000 : remote.p();
        fill_rdma(d(1), VIP_CONTROL_OP_RDMAREAD, raddr, remote.mh(), {{local.p(), local.mh(), 512}});
        VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(1)) << rc_str(rc);
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_READ, VIP_STATUS_RDMA_PROT_ERROR));
        for (int i = 0; i < 512; i++)
            if (local.p()[i] != 0) {
                ADD_FAILURE() << "a refused RDMA read delivered data at byte " << i;
                break;
            }
        EXPECT_EQ(wait_state_change(a->h(), VIP_STATE_CONNECTED, 5000), VIP_STATE_ERROR);
    }
};

// ---- wrong protection tag ---------------------------------------------------------
TEST_P(VerbsProtection, GatherFromRegionUnderAnotherPtag) {
    connect_default();
    Ptag other;
    Mem foreign(4096, other.h());
    local_gather({foreign.p(), foreign.mh(), 64});
}

TEST_P(VerbsProtection, ScatterIntoRegionUnderAnotherPtag) {
    connect_default();
    Ptag other;
    Mem foreign(4096, other.h()), src(64, tag->h());
    fill_recv(d(0), {{foreign.p(), foreign.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
    ASSERT_EQ(r, d(0)) << "the library refuses the receive at post time: " << rc_str(rc);
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, VIP_STATUS_PROTECTION_ERROR));
    if (reliable()) EXPECT_EQ(wait_state_change(b->h(), VIP_STATE_CONNECTED, 5000), VIP_STATE_ERROR);
    else expect_good_message(79);
}

TEST_P(VerbsProtection, RdmaWriteIntoRegionUnderAnotherPtag) { rdma_write(Target::OtherPtag); }
TEST_P(VerbsProtection, RdmaReadFromRegionUnderAnotherPtag) { rdma_read(Target::OtherPtag); }

// ---- RDMA enables ------------------------------------------------------------------
TEST_P(VerbsProtection, RdmaWriteRegionWithoutEnable) { rdma_write(Target::NotEnabled); }
TEST_P(VerbsProtection, RdmaWriteViWithoutEnable) { rdma_write(Target::ViNotEnabled); }
TEST_P(VerbsProtection, RdmaReadRegionWithoutEnable) { rdma_read(Target::NotEnabled); }
TEST_P(VerbsProtection, RdmaReadViWithoutEnable) { rdma_read(Target::ViNotEnabled); }

// ---- outside the region --------------------------------------------------------------
TEST_P(VerbsProtection, GatherPastRegionEnd) {
    connect_default();
    Mem good(4096, tag->h());
    local_gather({good.p() + 4096 - 32, good.mh(), 64});
}
TEST_P(VerbsProtection, RdmaWritePastRegionEnd) { rdma_write(Target::PastEnd); }
TEST_P(VerbsProtection, RdmaReadPastRegionEnd) { rdma_read(Target::PastEnd); }

// ---- deregistered memory -------------------------------------------------------------
TEST_P(VerbsProtection, GatherFromDeregisteredMemory) {
    connect_default();
    Mem gone(4096, tag->h());
    VT_ASSERT_OK(VipDeregisterMem(nic(), gone.p(), gone.mh()));
    gone.forget();
    local_gather({gone.p(), gone.mh(), 64});
}
TEST_P(VerbsProtection, RdmaWriteIntoDeregisteredRegion) { rdma_write(Target::Deregistered); }

// ---- descriptors: the device never sees one (verbs posts work requests) -------------
TEST_P(VerbsProtection, DescriptorOutsideItsMemoryHandle) {
    connect_default();
    Mem other(4096, tag->h()), src(64, tag->h());
    fill_send(d(1), {{src.p(), src.mh(), 16}});
    // The descriptor lies in dmh()'s region, not in `other`'s.
    VIP_RETURN rc = VipPostSend(a->h(), d(1), other.mh());
    if (rc == VIP_INVALID_PARAMETER) {
        EXPECT_EQ(vi_state(a->h()), VIP_STATE_CONNECTED);
        return;
    }
    ASSERT_EQ(rc, VIP_SUCCESS) << rc_str(rc);
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, d(1)) << rc_str(rc);
    EXPECT_TRUE(status_has(s->CS.Status, VIP_STATUS_PROTECTION_ERROR));
    expect_after_initiator_error();
}

TEST_P(VerbsProtection, UnregisteredDescriptor) {
    connect_default();
    alignas(VIP_DESCRIPTOR_ALIGNMENT) static VIP_DESCRIPTOR plain[2];
    Mem src(64, tag->h());
    std::memset(plain, 0, sizeof plain);
    fill_send(&plain[0], {{src.p(), src.mh(), 16}});
    VIP_RETURN rc = VipPostSend(a->h(), &plain[0], src.mh());
    if (rc == VIP_INVALID_PARAMETER) {
        EXPECT_EQ(vi_state(a->h()), VIP_STATE_CONNECTED);
        return;
    }
    ASSERT_EQ(rc, VIP_SUCCESS) << rc_str(rc);
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, &plain[0]) << rc_str(rc);
    EXPECT_TRUE(status_has(s->CS.Status, VIP_STATUS_PROTECTION_ERROR));
    expect_after_initiator_error();
}

// ---- receive too small: the device checks it at the receiver ------------------------
// RC: the receive completes with LENGTH_ERROR, nothing beyond it is written, the
// sender's descriptor fails (rxe: REM_INV_REQ_ERR -> REMOTE_DESC_ERROR, or a
// transport error when the NAK is lost), both VIs break.  UC: the receive fails
// the same way, the sender is not told (DONE, no error), and the library restarts
// the queue pair the device stopped, so the VI carries the next message.
TEST_P(VerbsProtection, ReceiveTooSmall) {
    connect_default();
    Mem src(256, tag->h()), dst(256, tag->h());
    fill_pattern(src.p(), 128, 3);
    fill_recv(d(0), {{dst.p(), dst.mh(), 32}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    fill_send(d(1), {{src.p(), src.mh(), 128}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
    ASSERT_EQ(r, d(0)) << rc_str(rc);
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, VIP_STATUS_LENGTH_ERROR));
    for (int i = 32; i < 256; i++)
        if (dst.p()[i] != 0) {
            ADD_FAILURE() << "wrote beyond the posted receive at byte " << i;
            break;
        }
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, d(1)) << rc_str(rc);
    if (reliable()) {
        EXPECT_NE(s->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << status_str(s->CS.Status);
        EXPECT_EQ(wait_state_change(b->h(), VIP_STATE_CONNECTED, 5000), VIP_STATE_ERROR);
        EXPECT_EQ(wait_state_change(a->h(), VIP_STATE_CONNECTED, 5000), VIP_STATE_ERROR);
        return;
    }
    EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, 0)) << "UC: the sender is not told";
    EXPECT_EQ(vi_state(b->h()), VIP_STATE_CONNECTED);
    expect_good_message(80);
}

VT_INSTANTIATE_LEVELS(VerbsProtection);

} // namespace
