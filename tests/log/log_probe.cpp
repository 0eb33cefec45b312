// log_probe.cpp - triggers known diagnostics of two layers through the real
// libraries, for the tests of the logging facility (tests/log/CMakeLists.txt,
// docs/logging.md):
//   boot: vipl_boot_bcast with an out-of-range root ("vipl_boot[rank R]: ...")
//   vipl: VipOpenNic with VIPL_PROVIDER naming no provider ("viastack: ...")
// Then prints "log_probe: done" on stdout and exits 0.
#include <cstdio>
#include <cstdlib>

#include "vipl.h"
#include "vipl_boot.h"

int main() {
    if (vipl_boot_init() != VIPL_BOOT_OK) {
        std::printf("log_probe: vipl_boot_init failed\n");
        return 1;
    }
    char b = 0;
    if (vipl_boot_bcast(&b, 1, 99) == VIPL_BOOT_OK) {
        std::printf("log_probe: vipl_boot_bcast accepted root 99\n");
        return 1;
    }
    setenv("VIPL_PROVIDER", "no-such-provider", 1);
    VIP_NIC_HANDLE nic = nullptr;
    if (VipOpenNic(nullptr, &nic) == VIP_SUCCESS) {
        std::printf("log_probe: VipOpenNic accepted VIPL_PROVIDER=no-such-provider\n");
        return 1;
    }
    vipl_boot_finalize();
    std::printf("log_probe: done\n");
    return 0;
}
