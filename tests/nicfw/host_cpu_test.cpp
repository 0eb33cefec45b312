// host_cpu_test.cpp - the host-CPU part of the cost model (vipl_instr.h's
// host-CPU model, nicfw's host_* / recv_line_* parameters) on a fake clock:
// a layer scope is stretched by its self time only, provider scopes nest but
// are never stretched, a received message's lines are paid by the layer's
// first Flow Control / Semantics scopes, and the profile's parameters give
// the slowdown.
#include <gtest/gtest.h>

#include <string>

#include "cost_model.hpp"
#include "vipl_instr.h"

using namespace nicfw;

namespace {

VIPL_INSTR_DEFINE(c_fc, "test.flow control", VIPL_INSTR_FLOW_CONTROL);
VIPL_INSTR_DEFINE(c_sem, "test.semantics", VIPL_INSTR_SEMANTICS);
VIPL_INSTR_DEFINE(c_base, "test.build descriptors", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_vipl, "test.vipl call", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_fw, "test.firmware", VIPL_INSTR_FIRMWARE);

// Time moves only when the test or the model's spin moves it (1 cycle = 1 ns).
struct FakeHost {
    uint64_t t = 1000000;
    uint64_t spun = 0;
    vipl_host_model model(double slowdown, uint32_t line_bytes = 0, uint32_t line_ns = 0, double max_ns = 1e6) {
        vipl_host_model m{};
        m.slowdown = slowdown;
        m.max_self_ns = max_ns;
        m.line_bytes = line_bytes;
        m.line_ns = line_ns;
        m.now = [](void *c) { return static_cast<FakeHost *>(c)->t; };
        m.spin = [](void *c, uint64_t n) {
            static_cast<FakeHost *>(c)->t += n;
            static_cast<FakeHost *>(c)->spun += n;
        };
        m.ctx = this;
        m.cycles_per_ns = 1.0;
        return m;
    }
};

class HostCpu : public ::testing::Test {
protected:
    void TearDown() override { vipl_host_model_set(nullptr); }
    vipl_host_stats stats() {
        vipl_host_stats s;
        vipl_host_model_stats(&s);
        return s;
    }
    FakeHost h;
};

} // namespace

TEST_F(HostCpu, OffChargesNothingAndScopesStayOneBranch) {
    ASSERT_EQ(vipl_host_on, 0);
    ASSERT_EQ(vipl_instr_timing, vipl_instr_enabled());
    const vipl_host_model m = h.model(3.0);
    ASSERT_EQ(vipl_host_model_set(&m), 0);
    EXPECT_EQ(vipl_instr_timing, 1);
    ASSERT_EQ(vipl_host_model_set(nullptr), 0);
    EXPECT_EQ(vipl_instr_timing, vipl_instr_enabled());
    VIPL_INSTR_BEGIN(t);
    h.t += 100;
    VIPL_INSTR_END(c_fc, t);
    EXPECT_EQ(h.spun, 0u);
}

TEST_F(HostCpu, StretchesALayerScopeBySlowdownMinusOne) {
    const vipl_host_model m = h.model(3.0);
    ASSERT_EQ(vipl_host_model_set(&m), 0);
    EXPECT_EQ(stats().empty_cycles, 0.0); // the fake clock does not move in the calibration
    VIPL_INSTR_BEGIN(t);
    h.t += 100;
    VIPL_INSTR_END(c_fc, t);
    EXPECT_EQ(h.spun, 200u); // 100 ns of this host's time = 300 ns of the modelled host's
    EXPECT_EQ(stats().scopes, 1u);
    EXPECT_EQ(stats().stretch_cycles, 200u);
    // Firmware scopes are the NIC's, not the host's.
    VIPL_INSTR_BEGIN(f);
    h.t += 100;
    VIPL_INSTR_END(c_fw, f);
    EXPECT_EQ(h.spun, 200u);
}

TEST_F(HostCpu, NestedScopesAreLeftOutOfTheParentsSelfTime) {
    const vipl_host_model m = h.model(3.0);
    ASSERT_EQ(vipl_host_model_set(&m), 0);
    VIPL_INSTR_BEGIN(outer); // a layer's Flow Control scope ...
    h.t += 10;
    {
        VIPL_INSTR_BEGIN(call); // ... around a VIPL call: the provider's time
        h.t += 1000;
        VIPL_INSTR_PROVIDER_END(c_vipl, call);
    }
    EXPECT_EQ(h.spun, 0u);
    {
        VIPL_INSTR_BEGIN(inner); // ... and the layer's own Semantics scope
        h.t += 5;
        VIPL_INSTR_END(c_sem, inner);
    }
    EXPECT_EQ(h.spun, 10u);
    {
        VIPL_INSTR_BEGIN(poll); // a poll that found nothing: not counted, still nested
        h.t += 400;
        VIPL_INSTR_PROVIDER_END_IF(c_vipl, poll, 0);
    }
    h.t += 10;
    VIPL_INSTR_END(c_fc, outer);
    EXPECT_EQ(h.spun, 10u + 2 * 20u); // the outer scope's own 20 ns, once more twice
    EXPECT_EQ(stats().scopes, 2u);
}

TEST_F(HostCpu, AScopeThatNeverEndsIsClosedByItsParent) {
    const vipl_host_model m = h.model(2.0);
    ASSERT_EQ(vipl_host_model_set(&m), 0);
    VIPL_INSTR_BEGIN(outer);
    h.t += 30;
    {
        VIPL_INSTR_BEGIN(abandoned); // an early return: no END
        (void)abandoned;
        h.t += 50;
    }
    VIPL_INSTR_END(c_base, outer); // its 50 ns count as the parent's own
    EXPECT_EQ(h.spun, 80u);
    // The stack is empty again: a new scope is charged on its own.
    VIPL_INSTR_BEGIN(next);
    h.t += 7;
    VIPL_INSTR_END(c_base, next);
    EXPECT_EQ(h.spun, 87u);
}

TEST_F(HostCpu, ALongScopeIsAPreemptionNotSoftware) {
    const vipl_host_model m = h.model(4.0, 0, 0, 1000.0);
    ASSERT_EQ(vipl_host_model_set(&m), 0);
    VIPL_INSTR_BEGIN(t);
    h.t += 5000;
    VIPL_INSTR_END(c_sem, t);
    EXPECT_EQ(h.spun, 0u);
    EXPECT_EQ(stats().skipped, 1u);
}

TEST_F(HostCpu, ReceivedLinesArePaidByTheFirstFlowControlAndSemanticsScopes) {
    const vipl_host_model m = h.model(1.0, 32, 250); // no stretch: lines only
    ASSERT_EQ(vipl_host_model_set(&m), 0);
    vipl_host_received(100); // 4 lines of 32 bytes
    {
        VIPL_INSTR_BEGIN(t); // the layer's VipRecvDone wrapper (Base VI) reads none
        VIPL_INSTR_END(c_base, t);
    }
    EXPECT_EQ(h.spun, 0u);
    {
        VIPL_INSTR_BEGIN(t); // processing: the header line
        VIPL_INSTR_END(c_fc, t);
    }
    EXPECT_EQ(h.spun, 250u);
    {
        VIPL_INSTR_BEGIN(t); // reading the data: the other three
        VIPL_INSTR_END(c_sem, t);
    }
    EXPECT_EQ(h.spun, 1000u);
    {
        VIPL_INSTR_BEGIN(t); // read already
        VIPL_INSTR_END(c_sem, t);
    }
    EXPECT_EQ(h.spun, 1000u);
    EXPECT_EQ(stats().lines, 4u);
    EXPECT_EQ(stats().line_cycles, 1000u);
    // A message not read before the next one is handed over is not paid for.
    vipl_host_received(10);
    vipl_host_received(32);
    {
        VIPL_INSTR_BEGIN(t);
        VIPL_INSTR_END(c_sem, t);
    }
    {
        VIPL_INSTR_BEGIN(t);
        VIPL_INSTR_END(c_sem, t);
    }
    EXPECT_EQ(h.spun, 1250u);
}

TEST_F(HostCpu, RefusesBadModels) {
    vipl_host_model m = h.model(0.5);
    EXPECT_EQ(vipl_host_model_set(&m), -1);
    m = h.model(2.0, 0, 100);
    EXPECT_EQ(vipl_host_model_set(&m), -1);
    EXPECT_EQ(vipl_host_on, 0);
}

TEST(HostCpuProfile, SlowdownIsTheClockRatioTimesTheIpcRatio) {
    CostParams p;
    ASSERT_TRUE(builtin_cost_profile("lanai7", &p));
    vipl_host_model m;
    ASSERT_TRUE(host_cpu_model(p, 2200.0, &m));
    EXPECT_DOUBLE_EQ(m.slowdown, 2200.0 / 550.0 * 2.0);
    EXPECT_EQ(m.line_bytes, 32u);
    EXPECT_EQ(m.line_ns, 250u);
    EXPECT_EQ(m.max_self_ns, 20000.0);
    p.this_host_mhz = 1100; // given by the profile: the measured clock is not used
    ASSERT_TRUE(host_cpu_model(p, 2200.0, &m));
    EXPECT_DOUBLE_EQ(m.slowdown, 4.0);
    p.this_host_mhz = 200; // a host slower than the modelled one is not sped up
    ASSERT_TRUE(host_cpu_model(p, 2200.0, &m));
    EXPECT_DOUBLE_EQ(m.slowdown, 1.0);
    p.host_mhz = 0;
    p.recv_line_ns = 0;
    EXPECT_FALSE(host_cpu_model(p, 2200.0, &m)); // nothing to model
    CostParams none;
    EXPECT_FALSE(host_cpu_model(none, 2200.0, &m));
}

TEST(HostCpuProfile, RoundTripsAndRefusesHalfAModel) {
    CostParams p = parse_cost_params("base = lanai7\nhost_mhz = 233.5\nhost_ipc_ratio = 1.25\n"
                                     "this_host_mhz = 3000\nhost_max_self_ns = 777\nrecv_line_bytes = 64\n"
                                     "recv_line_ns = 90\n",
                                     "f");
    EXPECT_EQ(p.host_mhz, 233.5);
    EXPECT_EQ(p.host_ipc_ratio, 1.25);
    EXPECT_EQ(p.this_host_mhz, 3000);
    EXPECT_EQ(p.host_max_self_ns, 777u);
    EXPECT_EQ(p.recv_line_bytes, 64u);
    EXPECT_EQ(p.recv_line_ns, 90u);
    EXPECT_EQ(parse_cost_params(dump_cost_params(p), "x"), p);
    const CostParams off = parse_cost_params("base = lanai7\nhost_mhz = 0\nrecv_line_ns = 0\n", "f");
    EXPECT_EQ(off.host_mhz, 0);
    EXPECT_THROW(parse_cost_params("base = lanai7\nhost_ipc_ratio = 0\n", "f"), std::runtime_error);
    EXPECT_THROW(parse_cost_params("base = lanai7\nrecv_line_bytes = 0\n", "f"), std::runtime_error);
    EXPECT_THROW(parse_cost_params("base = lanai7\nhost_mhz = -5\n", "f"), std::runtime_error);
}
