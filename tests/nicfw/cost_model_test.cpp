// cost_model_test.cpp - the hardware-cost model (nicfw/src/cost_model.*) on a
// fake clock: every charge is a deterministic function of the operations and
// the parameters; profile files round-trip and bad ones are refused by line.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "cost_model.hpp"

using namespace nicfw;

namespace {

// A clock that only moves when the model spins on it (or the test says so).
struct FakeClock {
    uint64_t t = 1000000;
    CostClock clock() {
        return CostClock{[](void *c) { return static_cast<FakeClock *>(c)->t; },
                         [](void *c, uint64_t ns) { static_cast<FakeClock *>(c)->t += ns; }, this};
    }
};

CostParams lanai7() {
    CostParams p;
    EXPECT_TRUE(builtin_cost_profile("lanai7", &p));
    return p;
}

// Small round numbers, so the expected charges can be written down.
CostParams simple() {
    CostParams p;
    p.name = "simple";
    p.enabled = true;
    p.pio_read_ns = 1000;
    p.pio_write_ns = 100;
    p.doorbell_writes = 2;
    p.uncached_read_ns = 50;
    p.host_cq_read_ns = 20;
    p.pio_data_mb_s = 10; // 100 ns per byte
    p.dma_setup_ns = 2000;
    p.dma_mb_s = 100;  // 10 ns per byte
    p.desc_bytes = 50; // 500 ns
    p.fw_loop_ns = 300;
    p.fw_vi_poll_ns = 400;
    p.fw_send_ns = 3000;
    p.fw_recv_ns = 5000;
    p.link_mb_s = 200; // 5 ns per byte
    p.link_header_bytes = 8;
    p.switch_ns = 700;
    return p;
}

} // namespace

TEST(CostModel, OffChargesNothing) {
    FakeClock fc;
    CostModel m(CostParams{}, fc.clock());
    EXPECT_FALSE(m.on());
    CostParams none;
    ASSERT_TRUE(builtin_cost_profile("none", &none));
    EXPECT_FALSE(none.enabled);
}

TEST(CostModel, HostChargesAreTheBusOperations) {
    FakeClock fc;
    CostParams p = simple();
    CostModel m(p, fc.clock());
    uint64_t t0 = fc.t;
    m.host_cq_check(false); // NIC-resident CQ, empty: one PIO read
    EXPECT_EQ(fc.t - t0, 1000u);
    t0 = fc.t;
    m.host_cq_check(true); // an entry: read and clear
    EXPECT_EQ(fc.t - t0, 1100u);
    t0 = fc.t;
    m.host_doorbell(false); // hardware doorbell: two PIO writes
    EXPECT_EQ(fc.t - t0, 200u);
    t0 = fc.t;
    m.host_desc_status();
    EXPECT_EQ(fc.t - t0, 50u);
    t0 = fc.t;
    m.host_send_data(100); // send_data = dma: the host writes no data
    EXPECT_EQ(fc.t - t0, 0u);
    EXPECT_EQ(m.charged(kCostPioRead), 2000u);
    EXPECT_EQ(m.charged(kCostPioWrite), 300u);
    EXPECT_EQ(m.charged(kCostUncached), 50u);

    p.cq = CqPlace::Host; // host-resident CQ: a cache miss, no bus operation
    p.send_data = SendData::Pio;
    p.pio_max_bytes = 64;
    CostModel h(p, fc.clock());
    t0 = fc.t;
    h.host_cq_check(true);
    h.host_cq_check(false);
    EXPECT_EQ(fc.t - t0, 40u);
    EXPECT_EQ(h.charged(kCostPioRead) + h.charged(kCostPioWrite), 0u);
    t0 = fc.t;
    h.host_send_data(64); // hybrid: 64 bytes at 10 MB/s
    EXPECT_EQ(fc.t - t0, 6400u);
    t0 = fc.t;
    h.host_send_data(65); // above pio_max_bytes: DMA
    EXPECT_EQ(fc.t - t0, 0u);
}

TEST(CostModel, TransmitAndReceiveOccupyTheNic) {
    FakeClock fc;
    CostModel m(simple(), fc.clock());
    const uint64_t t0 = fc.t;
    EXPECT_TRUE(m.nic_free_now());
    // 100 bytes, 1 VI polled, idle NIC: loop 300 + poll 400 + descriptor DMA
    // 2500 + data DMA 3000 + firmware 3000 + link (108 B) 540 = 9740 to the
    // wire, + switch 700; then the status DMA (2040) keeps the NIC busy.
    const uint64_t arrive = m.nic_tx(100, 1, true);
    EXPECT_EQ(arrive, t0 + 9740 + 700);
    EXPECT_EQ(m.nic_free_at(), t0 + 9740 + 2040);
    EXPECT_FALSE(m.nic_free_now());
    EXPECT_EQ(m.charged(kCostNicDma), 2500u + 3000u + 2040u);
    EXPECT_EQ(m.charged(kCostLink), 540u + 700u);

    // A packet that arrived meanwhile is processed once the NIC is free: loop
    // 300 + descriptor 2500 + data 3000 + status 2040 + firmware 5000.
    const uint64_t busy = m.nic_free_at();
    const uint64_t end = m.nic_rx(7, t0 + 100, 100, false);
    EXPECT_EQ(end, busy + 300 + 2500 + 3000 + 2040 + 5000);
    EXPECT_EQ(m.nic_rx(7, t0 + 100, 100, false), end); // booked once per packet
    EXPECT_EQ(m.nic_free_at(), end);                   // and the NIC cannot send meanwhile
    fc.t = end - 1;
    EXPECT_FALSE(m.nic_free_now());
    fc.t = end;
    EXPECT_TRUE(m.nic_free_now());
}

TEST(CostModel, MorePolledVisCostMore) {
    FakeClock a, b;
    CostModel one(simple(), a.clock()), three(simple(), b.clock());
    const uint64_t d1 = one.nic_tx(16, 1, false) - a.t;
    const uint64_t d3 = three.nic_tx(16, 3, false) - b.t;
    EXPECT_EQ(d3 - d1, 2u * 400u); // [Begel01] section 7.1: each active VI is polled
}

TEST(CostModel, StreamedLoopPaysOncePerBurst) {
    for (FwLoop loop : {FwLoop::Streamed, FwLoop::Baseline}) {
        FakeClock fc;
        CostParams p = simple();
        p.loop = loop;
        CostModel m(p, fc.clock());
        m.nic_tx(16, 1, false);
        fc.t += 100000; // later, three sends posted at once: the NIC is busy for the 2nd and 3rd
        m.nic_tx(16, 1, false);
        m.nic_tx(16, 1, false);
        m.nic_tx(16, 1, false);
        EXPECT_EQ(m.charged(kCostNicLoop), loop == FwLoop::Streamed ? 2u * 300u : 4u * 300u);
    }
}

TEST(CostModel, HostCqMovesTheCostToNicDma) {
    FakeClock a, b;
    CostParams p = simple();
    CostModel nic(p, a.clock());
    p.cq = CqPlace::Host;
    CostModel host(p, b.clock());
    nic.nic_rx(1, a.t, 16, true);
    host.nic_rx(1, b.t, 16, true);
    EXPECT_EQ(host.charged(kCostNicDma) - nic.charged(kCostNicDma), host.dma_ns(8)); // the entry, by DMA
    EXPECT_EQ(host.dma_ns(8), 2000u + 80u);
}

TEST(CostModel, EmulatedDoorbellWaitsForTheNic) {
    FakeClock fc;
    CostModel m(simple(), fc.clock());
    m.nic_tx(100, 1, false); // taken at once: the NIC was idle
    uint64_t t0 = fc.t;
    m.host_doorbell(true); // no wait: reads the slot, writes the token
    EXPECT_EQ(fc.t - t0, 1000u + 200u);
    const uint64_t busy = m.nic_free_at();
    m.nic_tx(100, 1, false); // queued behind the first: taken when the NIC is free
    t0 = fc.t;
    m.host_doorbell(true); // waits until then
    EXPECT_EQ(fc.t, busy + 1000 + 200);
    EXPECT_EQ(m.charged(kCostBellWait), busy - t0);
    m.host_doorbell(false); // the FIFO doorbell never waits
    EXPECT_EQ(fc.t, busy + 1000 + 200 + 200);
}

// The lanai7 fit: a short send streamed back to back occupies the NIC for
// Table 5's 14.5 us, and so does a short receive.
TEST(CostModel, Lanai7ShortMessageOccupancyIsTable5s) {
    FakeClock fc;
    CostModel m(lanai7(), fc.clock());
    m.nic_tx(32, 1, false);
    const uint64_t t1 = m.nic_free_at();
    m.nic_tx(32, 1, false); // posted while the NIC was busy: streamed
    EXPECT_NEAR(double(m.nic_free_at() - t1), 14500.0, 150.0);
    const uint64_t t2 = m.nic_free_at();
    m.nic_rx(1, t2, 32, false);
    const uint64_t t3 = m.nic_free_at();
    m.nic_rx(2, t3, 32, false); // arrived while the NIC was still receiving: streamed
    EXPECT_NEAR(double(m.nic_free_at() - t3), 14500.0, 150.0);
}

TEST(CostProfileFile, RoundTrips) {
    CostParams odd = simple();
    odd.cq = CqPlace::Host;
    odd.doorbell = BellKind::Emulated;
    odd.loop = FwLoop::Baseline;
    odd.send_data = SendData::Pio;
    odd.pio_max_bytes = 256;
    odd.dma_mb_s = 131.25;
    odd.link_mb_s = 1.0 / 3.0; // needs every digit to come back
    for (const char *name : {"lanai4", "lanai7"}) {
        CostParams p;
        ASSERT_TRUE(builtin_cost_profile(name, &p));
        const std::string text = dump_cost_params(p);
        EXPECT_EQ(parse_cost_params(text, "x"), p) << text;
        EXPECT_EQ(dump_cost_params(parse_cost_params(text, "x")), text);
    }
    EXPECT_EQ(parse_cost_params(dump_cost_params(odd), "x"), odd);

    // Through a file, as VIPL_NICFW_PROFILE=file:PATH loads it.
    const std::string path = ::testing::TempDir() + "cost_profile_" + std::to_string(getpid()) + ".txt";
    std::ofstream(path) << dump_cost_params(odd);
    EXPECT_EQ(load_cost_params(path), odd);
    std::remove(path.c_str());
}

TEST(CostProfileFile, BaseAndOverrides) {
    const CostParams p = parse_cost_params("base = lanai7  # start from the LANai 7\nname = hostcq\ncq = host\n", "f");
    CostParams want = lanai7();
    want.name = "hostcq";
    want.cq = CqPlace::Host;
    EXPECT_EQ(p, want);
}

TEST(CostProfileFile, RefusesBadLinesByNumber) {
    auto refused = [](const std::string &text, const std::string &want) {
        try {
            parse_cost_params(text, "prof.txt");
        } catch (const std::runtime_error &e) {
            return std::string(e.what()).find(want) != std::string::npos
                ? ::testing::AssertionSuccess()
                : ::testing::AssertionFailure() << "message '" << e.what() << "' lacks '" << want << "'";
        }
        return ::testing::AssertionFailure() << "accepted: " << text;
    };
    EXPECT_TRUE(refused("base = lanai7\nbogus = 1\n", "prof.txt:2: unknown key 'bogus'"));
    EXPECT_TRUE(refused("base = lanai7\npio_read_ns = 1us\n", "prof.txt:2"));
    EXPECT_TRUE(refused("base = lanai7\npio_read_ns = -1\n", "prof.txt:2"));
    EXPECT_TRUE(refused("base = lanai7\ndma_mb_s = 0\n", "positive"));
    EXPECT_TRUE(refused("base = lanai7\ncq = pci\n", "cq is nic or host"));
    EXPECT_TRUE(refused("base = lanai9\n", "lanai9"));
    EXPECT_TRUE(refused("pio_read_ns 5\n", "prof.txt:1"));
    EXPECT_TRUE(refused("pio_read_ns = 5\n", "dma_mb_s and link_mb_s")); // no base, no bandwidths
    EXPECT_THROW(load_cost_params("/nonexistent/x.txt"), std::runtime_error);
}
