// test_errors_loopback.cpp - descriptor validation and the spec's error semantics:
// format errors, local protection errors (memory handles, protection tags, region
// bounds), length errors, RDMA protection errors, and the VI states they lead to.
//
// Spec rules asserted (VI Architecture Specification 1.0):
//  * errors are reported in the descriptor's Status word (DONE plus error bits);
//  * on Reliable Delivery / Reliable Reception VIs an error breaks the connection:
//    the VI goes to VIP_STATE_ERROR; on Unreliable VIs it stays connected;
//  * an RDMA whose address segment fails the target's checks (region, ptag of the
//    target VI, RDMA enable of region and VI) writes nothing; Reliable Reception
//    reports VIP_STATUS_RDMA_PROT_ERROR to the initiator; otherwise the target
//    reports VIP_ERROR_RDMAW_PROT through its error callback;
//  * an RDMA read that fails the target's checks completes with RDMA_PROT_ERROR.
#include <thread>

#include "loopback_fixture.hpp"

using namespace vt;

namespace {

class Errors : public LoopbackTest {
protected:
    // After a locally detected error: reliable VIs are in ERROR, unreliable stay up.
    void expect_state_after_error(VIP_VI_HANDLE vi) {
        if (reliable()) {
            EXPECT_EQ(wait_state_change(vi, VIP_STATE_CONNECTED, 2000), VIP_STATE_ERROR)
                << "a " << level_name(level()) << " VI must enter the error state";
        } else
            EXPECT_EQ(vi_state(vi), VIP_STATE_CONNECTED) << "an unreliable VI stays connected after a descriptor error";
    }
    // Unreliable VIs must still carry a good message after the error.
    void expect_still_usable() {
        if (reliable()) return;
        Mem m(16, tag->h());
        fill_recv(d(40), {{m.p(), m.mh(), 16}});
        ASSERT_EQ(VipPostRecv(b->h(), d(40), dmh()), VIP_SUCCESS);
        fill_send(d(41), {{m.p(), m.mh(), 16}});
        ASSERT_EQ(VipPostSend(a->h(), d(41), dmh()), VIP_SUCCESS);
        VIP_DESCRIPTOR *r = wait_recv(b->h());
        ASSERT_EQ(r, d(40)) << "unreliable VI unusable after an error";
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
        EXPECT_EQ(wait_send(a->h()), d(41));
    }
    // Posts a malformed send; the spec's NIC reports FORMAT_ERROR in the descriptor.
    // A provider may instead refuse it at post time with VIP_DESCRIPTOR_ERROR.
    void expect_format_error(VIP_DESCRIPTOR *bad) {
        VIP_RETURN rc = VipPostSend(a->h(), bad, dmh());
        if (rc == VIP_DESCRIPTOR_ERROR) return;
        ASSERT_EQ(rc, VIP_SUCCESS) << "VipPostSend of a malformed descriptor returned " << rc_str(rc);
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, bad) << "malformed descriptor did not complete: " << rc_str(rc);
        EXPECT_TRUE(status_has(s->CS.Status, VIP_STATUS_FORMAT_ERROR));
        expect_state_after_error(a->h());
        expect_still_usable();
    }
};

TEST_P(Errors, ReservedOpcodeIsFormatError) {
    connect_default();
    Mem m(64, tag->h());
    fill_send(d(1), {{m.p(), m.mh(), 8}});
    d(1)->CS.Control = VIP_CONTROL_OP_RESERVED;
    expect_format_error(d(1));
}

TEST_P(Errors, ReservedControlBitsAreFormatError) {
    connect_default();
    Mem m(64, tag->h());
    fill_send(d(1), {{m.p(), m.mh(), 8}});
    d(1)->CS.Control |= 0x0100;
    expect_format_error(d(1));
}

TEST_P(Errors, TooManySegmentsIsFormatError) {
    connect_default();
    Mem m(64, tag->h());
    fill_send(d(1), {{m.p(), m.mh(), 8}});
    d(1)->CS.SegCount = (VIP_UINT16)(nic_attr().MaxSegmentsPerDesc + 1);
    expect_format_error(d(1));
}

TEST_P(Errors, LengthNotSumOfSegmentsIsFormatError) {
    connect_default();
    Mem m(64, tag->h());
    fill_send(d(1), {{m.p(), m.mh(), 8}, {m.p() + 8, m.mh(), 8}});
    d(1)->CS.Length = 24;
    expect_format_error(d(1));
}

TEST_P(Errors, RdmaWithoutAddressSegmentIsFormatError) {
    connect_default();
    fill_send(d(1), {});
    d(1)->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
    d(1)->CS.SegCount = 0;
    expect_format_error(d(1));
}

// A broken reliable VI: new descriptors are flushed (or refused), VipDisconnect takes
// it back to idle, and it can then be connected again.
TEST_P(Errors, ErrorStateFlushesAndRecoversThroughDisconnect) {
    if (!reliable()) GTEST_SKIP() << "unreliable VIs do not break on descriptor errors";
    connect_default();
    Mem m(64, tag->h());
    fill_send(d(1), {{m.p(), m.mh() ^ 0x00110000u, 8}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    ASSERT_EQ(wait_send(a->h()), d(1));
    ASSERT_EQ(wait_state_change(a->h(), VIP_STATE_CONNECTED, 2000), VIP_STATE_ERROR);

    fill_recv(d(2), {{m.p(), m.mh(), 64}});
    VIP_RETURN rc = VipPostRecv(a->h(), d(2), dmh());
    if (rc == VIP_SUCCESS) {
        VIP_DESCRIPTOR *r = wait_recv(a->h(), kWaitMs, &rc);
        ASSERT_EQ(r, d(2)) << "a receive posted to a VI in the error state never completed";
        EXPECT_TRUE(status_has(r->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR));
    } else {
        EXPECT_EQ(rc, VIP_INVALID_STATE) << rc_str(rc);
    }
    fill_send(d(3), {{m.p(), m.mh(), 8}});
    rc = VipPostSend(a->h(), d(3), dmh());
    if (rc == VIP_SUCCESS) {
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(3)) << "a send posted to a VI in the error state never completed";
        EXPECT_TRUE(status_has(s->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR));
    } else {
        EXPECT_EQ(rc, VIP_INVALID_STATE) << rc_str(rc);
    }

    VT_ASSERT_OK(VipDisconnect(a->h()));
    EXPECT_EQ(vi_state(a->h()), VIP_STATE_IDLE);
    VipDisconnect(b->h());
    VIP_DESCRIPTOR *junk;
    while (VipRecvDone(b->h(), &junk) == VIP_SUCCESS || VipSendDone(b->h(), &junk) == VIP_SUCCESS) {}
    ASSERT_EQ(vi_state(b->h()), VIP_STATE_IDLE);
    ASSERT_TRUE(connect_loopback(a->h(), b->h())) << "reconnecting after an error";
    fill_recv(d(4), {{m.p(), m.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(4), dmh()));
    fill_send(d(5), {{m.p(), m.mh(), 8}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(5), dmh()));
    VIP_DESCRIPTOR *r = wait_recv(b->h());
    ASSERT_EQ(r, d(4));
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
    EXPECT_EQ(wait_send(a->h()), d(5));
}

// ---- local protection errors ------------------------------------------------------
enum class BadSeg { PastRegionEnd, ForgedHandle, OtherPtag, Deregistered };

class LocalProtection : public Errors {
protected:
    void run(BadSeg kind) {
        connect_default();
        Ptag other;
        Mem good(4096, tag->h()), foreign(4096, other.h());
        Mem gone(4096, tag->h());
        VT_ASSERT_OK(good.rc);
        VT_ASSERT_OK(foreign.rc);
        VT_ASSERT_OK(VipDeregisterMem(nic(), gone.p(), gone.mh()));
        gone.forget();
        Seg seg{good.p(), good.mh(), 64};
        switch (kind) {
        case BadSeg::PastRegionEnd: seg = {good.p() + 4096 - 32, good.mh(), 64}; break;
        case BadSeg::ForgedHandle: seg = {good.p(), good.mh() ^ 0x5a5a0000u, 64}; break;
        case BadSeg::OtherPtag: seg = {foreign.p(), foreign.mh(), 64}; break;
        case BadSeg::Deregistered: seg = {gone.p(), gone.mh(), 64}; break;
        }
        Mem rbuf(128, tag->h());
        fill_recv(d(0), {{rbuf.p(), rbuf.mh(), 128}});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
        fill_send(d(1), {seg});
        VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(1)) << rc_str(rc);
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, VIP_STATUS_PROTECTION_ERROR));
        expect_state_after_error(a->h());
        if (reliable()) {
            // The error was judged before the descriptor completed (observed
            // above); anything it made the receiver see is there by now.
            VIP_DESCRIPTOR *r = nullptr;
            if (VipRecvDone(b->h(), &r) == VIP_SUCCESS) {
                EXPECT_NE(r->CS.Status & VIP_STATUS_ERROR_MASK, 0u)
                    << "a message whose gather failed protection checks was delivered";
            }
            return;
        }
        // Unreliable: a good message sent after it is the barrier (one VI delivers
        // in order).  It fills the receive that the failed one never reached; a
        // provider may instead have reported the failed one there, as an error.
        fill_pattern(good.p(), 64, 71);
        fill_send(d(2), {{good.p(), good.mh(), 64}});
        VT_ASSERT_OK(VipPostSend(a->h(), d(2), dmh()));
        VIP_DESCRIPTOR *r2 = wait_recv(b->h(), kWaitMs, &rc);
        ASSERT_EQ(r2, d(0)) << "unreliable VI unusable after an error: " << rc_str(rc);
        if ((r2->CS.Status & VIP_STATUS_ERROR_MASK) == 0) {
            EXPECT_TRUE(status_is(r2->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
            EXPECT_EQ(check_pattern(rbuf.p(), 64, 71), -1)
                << "a message whose gather failed protection checks was delivered";
        }
        EXPECT_EQ(wait_send(a->h()), d(2));
    }
};

TEST_P(LocalProtection, SegmentPastRegionEnd) { run(BadSeg::PastRegionEnd); }
TEST_P(LocalProtection, ForgedMemoryHandle) { run(BadSeg::ForgedHandle); }
TEST_P(LocalProtection, RegionUnderAnotherPtag) { run(BadSeg::OtherPtag); }
TEST_P(LocalProtection, DeregisteredMemory) { run(BadSeg::Deregistered); }

TEST_P(Errors, ReceiveIntoAnotherPtagIsProtectionError) {
    connect_default();
    Ptag other;
    Mem foreign(4096, other.h()), src(64, tag->h());
    fill_recv(d(0), {{foreign.p(), foreign.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    fill_send(d(1), {{src.p(), src.mh(), 32}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
    ASSERT_EQ(r, d(0)) << rc_str(rc);
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, VIP_STATUS_PROTECTION_ERROR));
    expect_state_after_error(b->h());
    wait_send(a->h(), 1000);
}

TEST_P(Errors, InOrderCompletionAroundAnError) {
    if (reliable()) GTEST_SKIP() << "needs a VI that survives a descriptor error (unreliable)";
    connect_default();
    Mem src(64, tag->h()), dst(4 * 16, tag->h());
    for (int i = 0; i < 3; i++) {
        fill_recv(d(i), {{dst.p() + 16 * i, dst.mh(), 16}});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(i), dmh()));
    }
    for (int i = 0; i < 4; i++) {
        VIP_MEM_HANDLE mh = i == 1 ? src.mh() ^ 0x00770000u : src.mh();
        fill_send(d(10 + i), {{src.p(), mh, 16}}, true, (VIP_UINT32)i);
        VT_ASSERT_OK(VipPostSend(a->h(), d(10 + i), dmh()));
    }
    for (int i = 0; i < 4; i++) {
        VIP_DESCRIPTOR *s = wait_send(a->h());
        ASSERT_EQ(s, d(10 + i)) << "send completions out of order";
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, i == 1 ? VIP_STATUS_PROTECTION_ERROR : 0));
    }
    for (VIP_UINT32 want : {0u, 2u, 3u}) {
        VIP_DESCRIPTOR *r = wait_recv(b->h());
        ASSERT_NE(r, nullptr);
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, true));
        EXPECT_EQ(r->CS.ImmediateData, want);
    }
}

// ---- a message that finds no receive posted ---------------------------------------
// Unreliable: the message is dropped and the VI carries on.  Reliable levels: the
// receiving VI breaks (VIP_STATE_ERROR) and reports VIP_ERROR_RECVQ_EMPTY through
// the error callback; on Reliable Reception the send does not succeed either.
TEST_P(Errors, SendWithNoReceivePosted) {
    connect_default();
    Mem src(64, tag->h()), dst(64, tag->h());
    size_t mark = error_mark();
    fill_send(d(1), {{src.p(), src.mh(), 16}}, true, 1);
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, d(1)) << rc_str(rc);
    if (!reliable()) {
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, 0));
        // The message must have reached b (and been dropped) before a receive is
        // posted: an RDMA write behind it on the same VI consumes no receive and
        // is the barrier (one VI delivers in order).
        Mem flag(64, tag->h(), true);
        VT_ASSERT_OK(flag.rc);
        src.p()[32] = 0x5a;
        fill_rdma(d(3), VIP_CONTROL_OP_RDMAWRITE, flag.p(), flag.mh(), {{src.p() + 32, src.mh(), 1}});
        VT_ASSERT_OK(VipPostSend(a->h(), d(3), dmh()));
        ASSERT_EQ(wait_send(a->h()), d(3));
        ASSERT_TRUE(poll_until([&] { return __atomic_load_n(&flag.p()[0], __ATOMIC_ACQUIRE) == 0x5a; }))
            << "the RDMA write behind the dropped message never landed";
        EXPECT_EQ(vi_state(b->h()), VIP_STATE_CONNECTED);
        fill_recv(d(0), {{dst.p(), dst.mh(), 64}});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
        fill_send(d(2), {{src.p(), src.mh(), 16}}, true, 2);
        VT_ASSERT_OK(VipPostSend(a->h(), d(2), dmh()));
        VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
        ASSERT_EQ(r, d(0)) << rc_str(rc);
        EXPECT_EQ(r->CS.ImmediateData, 2u) << "the dropped message must not be delivered later";
        EXPECT_EQ(wait_send(a->h()), d(2));
        return;
    }
    if (level() == VIP_SERVICE_RELIABLE_RECEPTION) {
        EXPECT_NE(s->CS.Status & VIP_STATUS_ERROR_MASK, 0u)
            << "reliable reception: a send that found no receive must not succeed; got " << status_str(s->CS.Status);
    }
    EXPECT_EQ(wait_state_change(b->h(), VIP_STATE_CONNECTED, 2000), VIP_STATE_ERROR) << "the receiving VI must break";
    ErrorRecord e{};
    EXPECT_TRUE(wait_error(mark, VIP_ERROR_RECVQ_EMPTY, 2000, &e))
        << "no VIP_ERROR_RECVQ_EMPTY delivered to the error callback";
    if (e.vi) { EXPECT_EQ(e.vi, b->h()); }
}

// ---- length errors -------------------------------------------------------------
TEST_P(Errors, MessageLongerThanReceiveIsLengthError) {
    connect_default();
    Mem src(256, tag->h()), dst(256, tag->h());
    fill_pattern(src.p(), 128, 3);
    fill_recv(d(0), {{dst.p(), dst.mh(), 32}, {dst.p() + 32, dst.mh(), 32}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    fill_send(d(1), {{src.p(), src.mh(), 128}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
    ASSERT_EQ(r, d(0)) << rc_str(rc);
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, VIP_STATUS_LENGTH_ERROR));
    EXPECT_EQ(dst.p()[64], 0) << "wrote beyond the posted receive buffers";
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, d(1)) << rc_str(rc);
    if (level() == VIP_SERVICE_RELIABLE_RECEPTION) {
        EXPECT_NE(s->CS.Status & VIP_STATUS_ERROR_MASK, 0u)
            << "reliable reception: the send must not succeed when the receive failed; got "
            << status_str(s->CS.Status);
    }
    expect_state_after_error(b->h());
}

TEST_P(Errors, SendOverViMaxTransferSizeIsLengthError) {
    VIP_VI_ATTRIBUTES at = attr();
    at.MaxTransferSize = std::min<VIP_ULONG>(256, nic_attr().MaxTransferSize / 2);
    connect(at, at);
    Mem src(1024, tag->h()), dst(1024, tag->h());
    fill_recv(d(0), {{dst.p(), dst.mh(), 1024}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    fill_send(d(1), {{src.p(), src.mh(), (VIP_UINT32)(2 * at.MaxTransferSize)}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, d(1)) << rc_str(rc);
    EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, VIP_STATUS_LENGTH_ERROR));
    VIP_DESCRIPTOR *r = nullptr;
    rc = VipRecvWait(b->h(), 50, &r);
    if (rc == VIP_SUCCESS) { // allowed only as a flush when the connection broke
        EXPECT_TRUE(reliable());
        EXPECT_TRUE(status_has(r->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR)) << "an over-MTU message was delivered";
    } else {
        EXPECT_EQ(rc, VIP_TIMEOUT);
    }
    expect_state_after_error(a->h());
}

// ---- RDMA protection at the target ------------------------------------------------
enum class BadTarget { RegionNotEnabled, ViNotEnabled, PastRegionEnd, OtherPtag, ForgedHandle };

class RdmaProtection : public Errors {
protected:
    void write(BadTarget kind) {
        if (!reliable() && !reports_unreliable_rdma_errors())
            GTEST_SKIP() << "this provider drops unreliable RDMA protection violations silently "
                            "(UC queue pairs on verbs: docs/verbs.md)";
        Ptag other;
        bool vi_enabled = kind != BadTarget::ViNotEnabled;
        connect(attr(true), attr(vi_enabled));
        bool mem_enabled = kind != BadTarget::RegionNotEnabled;
        Mem target(4096, kind == BadTarget::OtherPtag ? other.h() : tag->h(), mem_enabled);
        Mem src(4096, tag->h());
        VT_ASSERT_OK(target.rc);
        fill_pattern(target.p(), 4096, 1234);
        fill_pattern(src.p(), 4096, 999);
        uint8_t *raddr = target.p();
        VIP_MEM_HANDLE rmh = target.mh();
        VIP_UINT32 len = 256;
        if (kind == BadTarget::PastRegionEnd) raddr = target.p() + 4096 - 128;
        if (kind == BadTarget::ForgedHandle) rmh ^= 0x00330000u;
        size_t mark = error_mark();
        fill_rdma(d(1), VIP_CONTROL_OP_RDMAWRITE, raddr, rmh, {{src.p(), src.mh(), len}});
        VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(1)) << rc_str(rc);
        if (level() == VIP_SERVICE_RELIABLE_RECEPTION) {
            EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, VIP_STATUS_RDMA_PROT_ERROR));
        } else {
            bool initiator_told = (s->CS.Status & VIP_STATUS_RDMA_PROT_ERROR) != 0;
            ErrorRecord e{};
            bool target_told = wait_error_on(mark, VIP_ERROR_RDMAW_PROT, b->h(), 2000, &e);
            EXPECT_TRUE(initiator_told || target_told)
                << "an RDMA write protection error must be reported (initiator status " << status_str(s->CS.Status)
                << ", no VIP_ERROR_RDMAW_PROT callback)";
            if (target_told) {
                EXPECT_EQ(e.vi, b->h()) << "the error names the target VI";
                EXPECT_EQ(e.resource, VIP_RESOURCE_VI);
            }
        }
        // Nothing written, whatever the level.  The report observed above (the
        // initiator's status or the target's error callback) means the target
        // has already judged the write: no wait is needed.
        EXPECT_EQ(check_pattern(target.p(), 4096, 1234), -1) << "protected memory was written";
        if (reliable()) {
            EXPECT_EQ(wait_state_change(b->h(), VIP_STATE_CONNECTED, 2000), VIP_STATE_ERROR)
                << "the target VI must enter the error state (connection broken)";
        }
        b.reset();
        a.reset();
    }

    void read(BadTarget kind) {
        if (!rdma_read_supported(level())) GTEST_SKIP() << "RDMA read not supported at " << level_name(level());
        Ptag other;
        bool vi_enabled = kind != BadTarget::ViNotEnabled;
        connect(attr(true, true), attr(true, vi_enabled));
        bool mem_enabled = kind != BadTarget::RegionNotEnabled;
        Mem remote(4096, kind == BadTarget::OtherPtag ? other.h() : tag->h(), false, mem_enabled);
        Mem local(4096, tag->h());
        fill_pattern(remote.p(), 4096, 55);
        uint8_t *raddr = kind == BadTarget::PastRegionEnd ? remote.p() + 4000 : remote.p();
        VIP_MEM_HANDLE rmh = kind == BadTarget::ForgedHandle ? remote.mh() ^ 0x00440000u : remote.mh();
        fill_rdma(d(1), VIP_CONTROL_OP_RDMAREAD, raddr, rmh, {{local.p(), local.mh(), 512}});
        VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(1)) << rc_str(rc);
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_READ, VIP_STATUS_RDMA_PROT_ERROR));
        for (int i = 0; i < 512; i++)
            if (local.p()[i] != 0) {
                ADD_FAILURE() << "a failed RDMA read delivered data at byte " << i;
                break;
            }
        EXPECT_EQ(wait_state_change(a->h(), VIP_STATE_CONNECTED, 2000), VIP_STATE_ERROR);
        b.reset();
        a.reset();
    }
};

TEST_P(RdmaProtection, WriteRegionWithoutRdmaWrite) { write(BadTarget::RegionNotEnabled); }
TEST_P(RdmaProtection, WriteViWithoutRdmaWrite) { write(BadTarget::ViNotEnabled); }
TEST_P(RdmaProtection, WritePastRegionEnd) { write(BadTarget::PastRegionEnd); }
TEST_P(RdmaProtection, WriteRegionUnderAnotherPtag) { write(BadTarget::OtherPtag); }
TEST_P(RdmaProtection, WriteForgedHandle) { write(BadTarget::ForgedHandle); }
TEST_P(RdmaProtection, ReadRegionWithoutRdmaRead) { read(BadTarget::RegionNotEnabled); }
TEST_P(RdmaProtection, ReadViWithoutRdmaRead) { read(BadTarget::ViNotEnabled); }
TEST_P(RdmaProtection, ReadPastRegionEnd) { read(BadTarget::PastRegionEnd); }
TEST_P(RdmaProtection, ReadRegionUnderAnotherPtag) { read(BadTarget::OtherPtag); }

TEST_P(Errors, SetMemAttributesTogglesRdmaWrite) {
    // Enabled -> write lands; disabled via VipSetMemAttributes -> protection error.
    if (!reliable() && !reports_unreliable_rdma_errors())
        GTEST_SKIP() << "this provider drops unreliable RDMA protection violations silently";
    connect_default();
    Mem target(4096, tag->h(), true), src(4096, tag->h());
    fill_pattern(src.p(), 64, 8);
    fill_rdma(d(1), VIP_CONTROL_OP_RDMAWRITE, target.p(), target.mh(), {{src.p(), src.mh(), 64}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_DESCRIPTOR *s = wait_send(a->h());
    ASSERT_EQ(s, d(1));
    EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0));
    fill_recv(d(2), {});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(2), dmh()));
    fill_send(d(3), {});
    VT_ASSERT_OK(VipPostSend(a->h(), d(3), dmh()));
    ASSERT_EQ(wait_recv(b->h()), d(2));
    ASSERT_EQ(wait_send(a->h()), d(3));
    EXPECT_EQ(check_pattern(target.p(), 64, 8), -1);

    VIP_MEM_ATTRIBUTES ma = {tag->h(), VIP_FALSE, VIP_FALSE};
    VIP_RETURN set_rc = VipSetMemAttributes(nic(), target.p(), target.mh(), &ma);
    if (set_rc == VIP_ERROR_RESOURCE && !provider_is_nicfw())
        GTEST_SKIP() << "a verbs device without memory windows cannot change RDMA enables in place (docs/verbs.md)";
    VT_ASSERT_OK(set_rc);
    std::memset(target.p(), 0, 64);
    size_t mark = error_mark();
    fill_rdma(d(4), VIP_CONTROL_OP_RDMAWRITE, target.p(), target.mh(), {{src.p(), src.mh(), 64}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(4), dmh()));
    s = wait_send(a->h());
    ASSERT_EQ(s, d(4));
    if (level() == VIP_SERVICE_RELIABLE_RECEPTION) {
        EXPECT_TRUE(status_has(s->CS.Status, VIP_STATUS_RDMA_PROT_ERROR));
    } else
        EXPECT_TRUE((s->CS.Status & VIP_STATUS_RDMA_PROT_ERROR) ||
                    wait_error_on(mark, VIP_ERROR_RDMAW_PROT, b->h(), 2000))
            << "write into a region whose RDMA write was disabled was not reported";
    // The report just observed means the target has judged the write already.
    EXPECT_EQ(target.p()[0], 0) << "write landed after RDMA write was disabled";
}

VT_INSTANTIATE_LEVELS(Errors);
VT_INSTANTIATE_LEVELS(LocalProtection);
VT_INSTANTIATE_LEVELS(RdmaProtection);

} // namespace
