// mp_fixture.hpp - the fixture of the multi-process suites: a barrier around each
// test, parameterized over the reliability level (skipped when unsupported).
#pragma once

#include <algorithm>
#include <string>

#include "mp_link.hpp"
#include "vipl_boot.h"

namespace vt {

enum Kind : uint32_t { kReady = 1, kInfo, kDone, kResult };

// Declared after a test's VIs, so it runs before they are destroyed: neither rank
// tears its end of a connection down while the partner still checks it.  Runs
// on every exit path (also after a failed ASSERT), so ranks stay in step.
struct BarrierAtScopeExit {
    ~BarrierAtScopeExit() { vipl_boot_barrier(); }
};

class MpTest : public ::testing::TestWithParam<VIP_RELIABILITY_LEVEL> {
protected:
    void SetUp() override {
        static unsigned tests_started = 0; // same sequence on every rank
        serial_ = ++tests_started;
        vipl_boot_barrier();
        if (vipl_boot_size() < 2 || vipl_boot_size() % 2)
            GTEST_SKIP() << "needs an even number of ranks (vipl-run -n 2)";
        if (!(nic_attr().ReliabilityLevelSupport & level()))
            GTEST_SKIP() << level_name(level()) << " not supported by " << nic_attr().Name;
    }
    void TearDown() override { vipl_boot_barrier(); }

    VIP_RELIABILITY_LEVEL level() const { return GetParam(); }
    VIP_VI_ATTRIBUTES attr(bool w = true, bool r = false) const {
        return vi_attr(level(), nullptr, w, r && rdma_read_supported(level()));
    }
    // The same on both ranks and different for every test (a discriminator prefix):
    // the start of the test name, the level and the test's serial number.
    std::string name() const {
        auto *t = ::testing::UnitTest::GetInstance()->current_test_info();
        return std::string(t->name()).substr(0, 24) + "/" + level_name(level()) + "#" + std::to_string(serial_);
    }
    size_t max_segs() const { return std::min<size_t>(nic_attr().MaxSegmentsPerDesc, kMaxTestSegments); }

private:
    unsigned serial_ = 0;
};

// Target side of the RDMA tests: registers `len` bytes, tells the initiator where.
struct Exposed {
    Mem mem;
    Exposed(Link &l, size_t len, bool w, bool r) : mem(len, l.ptag(), w, r) {}
    CtlMsg info() const {
        CtlMsg m{};
        m.addr = (uint64_t)(uintptr_t)mem.p();
        m.mh = mem.mh();
        m.len = (uint32_t)mem.size();
        return m;
    }
};

#define VT_INSTANTIATE_MP_LEVELS(suite)                                                                                \
    INSTANTIATE_TEST_SUITE_P(                                                                                          \
        Levels, suite,                                                                                                 \
        ::testing::Values(VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY, VIP_SERVICE_RELIABLE_RECEPTION),      \
        [](const auto &i) { return std::string(level_name(i.param)); })

} // namespace vt
