// splitc_test_main.cpp - gtest main for Split-C tests: starts the runtime
// (a job of one without the launcher, N processes under vipl-run), runs the
// tests in the same order on every processor, and fails the job if any
// processor saw a failure.
#include <gtest/gtest.h>

#include <cstdio>

#include "splitc_rt.h"

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);
    if (splitc_init(&argc, &argv) != 0) {
        std::fprintf(stderr, "splitc_init failed\n");
        return 1;
    }
    int rc = RUN_ALL_TESTS();
    long failed = splitc_all_reduce_to_all_add(rc != 0 ? 1 : 0);
    if (splitc_myproc() == 0 && failed) std::fprintf(stderr, "%ld processor(s) had failures\n", failed);
    splitc_finalize();
    return failed ? 1 : 0;
}
