// nicfw_pair.hpp - the start and the failure report shared by the nicfw tests
// that are a plain main() run under vipl-run -n 2 (no gtest fixture).
#pragma once

#include <cstdio>

#include "nicfw_vipl_util.hpp"
#include "vipl_boot.h"

namespace nt {

// Prints "<prog> rank r: what (rc)" and returns the test's failing exit code.
inline int pair_fail(const char *prog, const char *what, VIP_RETURN rc = VIP_SUCCESS) {
    std::fprintf(stderr, "%s rank %d: %s (%s)\n", prog, vipl_boot_rank(), what, rc_name(rc));
    return 1;
}

// The bootstrap (exactly two ranks), nicfw0 and a protection tag.  Returns 0,
// or the exit code after saying what failed.
inline int pair_start(const char *prog, VIP_NIC_HANDLE *nic, VIP_PROTECTION_HANDLE *tag) {
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() != 2) {
        std::fprintf(stderr, "%s: run under vipl-run -n 2\n", prog);
        return 2;
    }
    if (VIP_RETURN rc = VipOpenNic("nicfw0", nic); rc != VIP_SUCCESS) return pair_fail(prog, "VipOpenNic", rc);
    if (VIP_RETURN rc = VipCreatePtag(*nic, tag); rc != VIP_SUCCESS) return pair_fail(prog, "VipCreatePtag", rc);
    return 0;
}

} // namespace nt
