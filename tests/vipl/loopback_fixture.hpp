// loopback_fixture.hpp - two VIs of this process's NIC connected to each other,
// parameterized over the reliability level (skipped when the NIC lacks it).
#pragma once

#include <memory>

#include "vipl_test_util.hpp"

namespace vt {

class LoopbackTest : public ::testing::TestWithParam<VIP_RELIABILITY_LEVEL> {
protected:
    VIP_RELIABILITY_LEVEL level() const { return GetParam(); }
    bool reliable() const { return level() != VIP_SERVICE_UNRELIABLE; }
    size_t max_segs() const { return std::min<size_t>(nic_attr().MaxSegmentsPerDesc, kMaxTestSegments); }

    void SetUp() override {
        if (!(nic_attr().ReliabilityLevelSupport & level()))
            GTEST_SKIP() << level_name(level()) << " not supported by " << nic_attr().Name;
        tag = std::make_unique<Ptag>();
        ASSERT_NE(tag->h(), nullptr);
        descs = std::make_unique<Descs>(64, max_segs(), tag->h());
    }

    // Creates and connects a and b (attributes may be adjusted by the caller first).
    void connect(VIP_VI_ATTRIBUTES aa, VIP_VI_ATTRIBUTES ba, VIP_CQ_HANDLE a_scq = nullptr,
                 VIP_CQ_HANDLE a_rcq = nullptr, VIP_CQ_HANDLE b_scq = nullptr, VIP_CQ_HANDLE b_rcq = nullptr) {
        a = std::make_unique<Vi>(aa, a_scq, a_rcq);
        b = std::make_unique<Vi>(ba, b_scq, b_rcq);
        VT_ASSERT_OK(a->rc);
        VT_ASSERT_OK(b->rc);
        ASSERT_TRUE(connect_loopback(a->h(), b->h()));
    }
    void connect_default() {
        VIP_VI_ATTRIBUTES at = vi_attr(level(), tag->h(), true, rdma_read_supported(level()));
        connect(at, at);
    }
    VIP_VI_ATTRIBUTES attr(bool w = true, bool r = false) const {
        return vi_attr(level(), tag->h(), w, r && rdma_read_supported(level()));
    }

    VIP_DESCRIPTOR *d(size_t i) const { return descs->at(i); }
    VIP_MEM_HANDLE dmh() const { return descs->mh(); }

    void TearDown() override {
        a.reset();
        b.reset();
        descs.reset();
    }

    std::unique_ptr<Ptag> tag;
    std::unique_ptr<Descs> descs;
    std::unique_ptr<Vi> a, b;
};

inline std::string level_param_name(const ::testing::TestParamInfo<VIP_RELIABILITY_LEVEL> &i) {
    return level_name(i.param);
}

#define VT_INSTANTIATE_LEVELS(suite)                                                                                   \
    INSTANTIATE_TEST_SUITE_P(                                                                                          \
        Levels, suite,                                                                                                 \
        ::testing::Values(VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY, VIP_SERVICE_RELIABLE_RECEPTION),      \
        ::vt::level_param_name)

} // namespace vt
