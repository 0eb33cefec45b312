// vipl_test_main.cpp - gtest main for the VIPL suites.
//
// Joins the job (a job of one without a launcher), opens the NIC once, and on
// ranks other than 0 replaces the verbose printer with one that prints only
// failures, prefixed with the rank, so a multi-process run stays readable.
#include <gtest/gtest.h>

#include <cstdio>

#include "vipl_boot.h"
#include "vipl_test_util.hpp"

namespace vt {
VIP_RETURN close_nic_for_exit();
}

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
    explicit RankFailurePrinter(int rank) : rank_(rank) {}
    void OnTestPartResult(const ::testing::TestPartResult &r) override {
        if (r.failed())
            std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                         r.line_number(), r.summary());
    }
    void OnTestEnd(const ::testing::TestInfo &t) override {
        if (t.result()->Failed())
            std::fprintf(stderr, "[rank %d] [  FAILED  ] %s.%s\n", rank_, t.test_suite_name(), t.name());
    }

private:
    int rank_;
};

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    int brc = vipl_boot_init();
    if (brc != VIPL_BOOT_OK) {
        std::fprintf(stderr, "vipl tests: vipl_boot_init failed (%d)\n", brc);
        return 2;
    }
    int rank = vipl_boot_rank();
    if (rank != 0) {
        auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new RankFailurePrinter(rank));
    }
    (void)vt::nic(); // open before the first test so a bad provider fails fast
    vt::install_error_recorder();
    int rc = RUN_ALL_TESTS();
    vt::close_nic_for_exit();
    vipl_boot_finalize();
    return rc;
}
