// faults_unit_test.cpp - the pieces of nicfw's fault handling that need no NIC:
// VIPL_NICFW_FAULTS parsing, the injector's draws and corruption, the
// retransmit window, the RFC 6298 estimator, sequence arithmetic.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "fault_inject.hpp"
#include "reliable.hpp"

using namespace nicfw;

TEST(FaultSpec, ParsesEveryKey) {
    const FaultSpec f = FaultSpec::parse(
        "drop=0.05,dup=0.01,reorder=0.02,delay=0.03,delay_us=700,corrupt=0.001,seed=7,kill=1@2000,linkdown=0@1500");
    EXPECT_DOUBLE_EQ(f.drop, 0.05);
    EXPECT_DOUBLE_EQ(f.dup, 0.01);
    EXPECT_DOUBLE_EQ(f.reorder, 0.02);
    EXPECT_DOUBLE_EQ(f.delay, 0.03);
    EXPECT_DOUBLE_EQ(f.corrupt, 0.001);
    EXPECT_EQ(f.delay_us, 700u);
    EXPECT_EQ(f.seed, 7u);
    EXPECT_EQ(f.kill_rank, 1);
    EXPECT_EQ(f.kill_ms, 2000u);
    EXPECT_EQ(f.linkdown_rank, 0);
    EXPECT_EQ(f.linkdown_ms, 1500u);
    EXPECT_TRUE(f.any());
    EXPECT_FALSE(FaultSpec::parse("").any());
    EXPECT_FALSE(FaultSpec::parse("off").any());
    EXPECT_FALSE(FaultSpec::parse("seed=3").any());
    // The dead-producer test hook is not a wire fault: alone it turns nothing on.
    const FaultSpec d = FaultSpec::parse("die_reserved=2@5");
    EXPECT_EQ(d.die_reserved_rank, 2);
    EXPECT_EQ(d.die_reserved_n, 5u);
    EXPECT_FALSE(d.any());
}

TEST(FaultSpec, RefusesBadItemsNamingThem) {
    for (const char *bad :
         {"drop", "drop=", "drop=x", "drop=1.5", "drop=-0.1", "bogus=1", "kill=1", "kill=a@1", "linkdown=1@", "seed=-1",
          "die_reserved=1", "die_reserved=1@0", "drop=0.6,dup=0.5", "delay_us=99999999"}) {
        try {
            FaultSpec::parse(bad);
            ADD_FAILURE() << "accepted " << bad;
        } catch (const std::runtime_error &e) {
            EXPECT_NE(std::string(e.what()).find("VIPL_NICFW_FAULTS"), std::string::npos) << e.what();
        }
    }
}

TEST(FaultInjector, DrawsMatchTheProbabilitiesAndTheSeedRepeats) {
    const FaultSpec f = FaultSpec::parse("drop=0.05,dup=0.01,reorder=0.01,corrupt=0.001,seed=7");
    FaultInjector a(f, 0, 0), b(f, 0, 0), other_rank(f, 1, 0);
    constexpr int kN = 400000;
    int n[6] = {};
    int same = 0, same_other = 0;
    for (int i = 0; i < kN; ++i) {
        const Fate x = a.decide();
        ++n[int(x)];
        same += x == b.decide();
        same_other += x == other_rank.decide();
    }
    EXPECT_EQ(same, kN);       // the same seed and rank: the same faults
    EXPECT_LT(same_other, kN); // another rank draws differently
    EXPECT_NEAR(n[int(Fate::Drop)] / double(kN), 0.05, 0.003);
    EXPECT_NEAR(n[int(Fate::Duplicate)] / double(kN), 0.01, 0.0015);
    EXPECT_NEAR(n[int(Fate::Reorder)] / double(kN), 0.01, 0.0015);
    EXPECT_NEAR(n[int(Fate::Corrupt)] / double(kN), 0.001, 0.0004);
    EXPECT_EQ(n[int(Fate::Delay)], 0);
}

TEST(FaultInjector, CorruptFlipsExactlyOneBitPastTheFifoFields) {
    FaultInjector inj(FaultSpec::parse("corrupt=1"), 0, 0);
    for (int t = 0; t < 1000; ++t) {
        unsigned char pkt[96] = {}, orig[96] = {};
        inj.corrupt(pkt, sizeof pkt);
        int bits = 0;
        for (size_t i = 0; i < sizeof pkt; ++i) {
            bits += __builtin_popcount(pkt[i] ^ orig[i]);
            if (pkt[i] != orig[i]) { EXPECT_GE(i, offsetof(PacketHeader, op)); }
        }
        EXPECT_EQ(bits, 1);
    }
}

TEST(FaultInjector, KillAndLinkdownTimes) {
    const FaultSpec f = FaultSpec::parse("kill=1@10,linkdown=2@20");
    FaultInjector r1(f, 1, 1000), r2(f, 2, 1000), r3(f, 3, 1000);
    EXPECT_FALSE(r1.dead(1000 + 9'000'000));
    EXPECT_TRUE(r1.dead(1000 + 10'000'001));
    EXPECT_FALSE(r3.dead(UINT64_MAX));
    EXPECT_FALSE(r2.cut(1000 + 19'000'000, 0));
    EXPECT_TRUE(r2.cut(1000 + 20'000'001, 0));  // rank 2's own link
    EXPECT_TRUE(r3.cut(1000 + 20'000'001, 2));  // packets from rank 2
    EXPECT_FALSE(r3.cut(1000 + 20'000'001, 1)); // other links stay up
}

TEST(RetransmitWindow, HoldsRequestsToHalfAndRepliesToAll) {
    RetransmitWindow w;
    uint32_t seq = 0;
    while (w.room(1000, false)) {
        std::memset(w.push(seq, 1000, false, 0), int(seq + 1), 1000);
        ++seq;
    }
    EXPECT_EQ(w.count(), RetransmitWindow::kEntries / 2); // entries, not bytes, bound 1000-byte packets
    EXPECT_TRUE(w.room(1000, true));
    while (w.room(1000, true)) w.push(seq++, 1000, true, 0);
    EXPECT_EQ(w.count(), RetransmitWindow::kEntries);
    // In order out; the bytes are what was pushed.
    EXPECT_EQ(w.oldest().seq, 0u);
    EXPECT_EQ(w.data(w.oldest())[0], 1);
    w.pop();
    EXPECT_EQ(w.oldest().seq, 1u);
    while (!w.empty()) w.pop();
    // Large packets: bounded by bytes, never wrapping.
    seq = 0;
    while (w.room(60000, false)) {
        unsigned char *p = w.push(seq++, 60000, false, 0);
        std::memset(p, 0xab, 60000);
    }
    EXPECT_EQ(w.count(), RetransmitWindow::kBytes / 2 / 60000);
    for (int round = 0; round < 50; ++round) { // slide far past the ring's end
        w.pop();                               // the copy that would wrap wastes the ring's end: sometimes two must go
        if (!w.room(60000, false)) w.pop();
        ASSERT_TRUE(w.room(60000, false));
        unsigned char *p = w.push(seq++, 60000, false, 0);
        ASSERT_GE(p, w.data(w.at(0)) - RetransmitWindow::kBytes);
        std::memset(p, 0xcd, 60000);
        for (uint32_t i = 0; i + 1 < w.count(); ++i) { // earlier copies untouched
            const unsigned char *q = w.data(w.at(i));
            EXPECT_TRUE(q[0] == 0xab || q[0] == 0xcd);
        }
    }
    while (!w.empty()) w.pop();
    EXPECT_TRUE(w.room(65592, false)); // the largest staged packet fits an empty window
    EXPECT_FALSE(w.room(RetransmitWindow::kBytes / 2 + 1, false));
}

TEST(LinkState, Rfc6298Estimator) {
    LinkState l;
    l.reset();
    EXPECT_EQ(l.rto, LinkState::kInitialRto);
    l.rtt_sample(2'000'000); // first sample: SRTT = R, RTTVAR = R/2, RTO = R + 4 R/2
    EXPECT_EQ(l.srtt, 2'000'000u);
    EXPECT_EQ(l.rttvar, 1'000'000u);
    EXPECT_EQ(l.rto, 6'000'000u);
    for (int i = 0; i < 200; ++i) l.rtt_sample(2'000'000); // steady: RTTVAR decays, RTO to SRTT + G
    EXPECT_EQ(l.srtt, 2'000'000u);
    EXPECT_EQ(l.rto, 2'100'000u);
    for (int i = 0; i < 200; ++i) l.rtt_sample(10'000); // a fast link: the floor
    EXPECT_EQ(l.rto, LinkState::kMinRto);
    for (int i = 0; i < 20; ++i) l.backoff(); // doubling, capped
    EXPECT_EQ(l.rto, LinkState::kMaxRto);
}

TEST(Sequence, ComparesAcrossTheWrap) {
    EXPECT_TRUE(seq_before(1, 2));
    EXPECT_FALSE(seq_before(2, 2));
    EXPECT_TRUE(seq_before(0xFFFFFFF0u, 5));
    EXPECT_FALSE(seq_before(5, 0xFFFFFFF0u));
}
