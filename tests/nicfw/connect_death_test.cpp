// connect_death_test.cpp - a connection request to a process that is gone must
// not wait for its timeout (for ever with VIP_INFINITE): the firmware's watch
// on its peers' processes ends it.
//
//   vipl-run -n 2 nicfw_connect_death_tests
//
// Both ranks open their NIC (which publishes the process for the peers' watch)
// and meet at a barrier; rank 1 then exits.  Rank 0 asks rank 1 for a
// connection, with private data and no timeout: VipxConnectRequestDone, polled,
// must answer VIP_NO_MATCH within seconds and leave the VI idle; so must a
// VipConnectRequest with VIP_INFINITE made afterwards.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "nicfw_pair.hpp"
#include "vipl_boot.h"

using namespace nt;

namespace {
constexpr const char *kProg = "nicfw_connect_death_tests";
int fail(const char *what, VIP_RETURN rc = VIP_SUCCESS) { return pair_fail(kProg, what, rc); }
} // namespace

int main() {
    VIP_NIC_HANDLE nic;
    VIP_PROTECTION_HANDLE tag;
    if (int rc = pair_start(kProg, &nic, &tag)) return rc;
    const int rank = vipl_boot_rank();
    vipl_boot_barrier();
    if (rank == 1) {
        std::fflush(nullptr);
        _exit(0); // gone without a word: nobody will answer rank 0
    }
    VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_DELIVERY);
    VIP_VI_HANDLE vi;
    if (VIP_RETURN rc = VipCreateVi(nic, &at, nullptr, nullptr, &vi); rc != VIP_SUCCESS) return fail("VipCreateVi", rc);
    auto local = net_addr(nic, 0, "");
    auto remote = net_addr(nic, 1, "listener");
    const unsigned char data[24] = {1, 2, 3};
    if (VIP_RETURN rc = VipxConnectRequestStart(vi, as_addr(local), as_addr(remote), VIP_INFINITE, data, sizeof data);
        rc != VIP_SUCCESS)
        return fail("VipxConnectRequestStart", rc);
    const auto t0 = std::chrono::steady_clock::now();
    VIP_RETURN rc;
    while ((rc = VipxConnectRequestDone(vi, nullptr, nullptr, nullptr)) == VIP_NOT_DONE) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20))
            return fail("the request to a dead process is still pending after 20 s", rc);
        usleep(1000);
    }
    if (rc != VIP_NO_MATCH) return fail("VipxConnectRequestDone to a dead process", rc);
    if (vi_state(vi) != VIP_STATE_IDLE) return fail("the VI is not idle after the request failed");
    VIP_VI_ATTRIBUTES ra;
    if (rc = VipConnectRequest(vi, as_addr(local), as_addr(remote), VIP_INFINITE, &ra); rc != VIP_NO_MATCH)
        return fail("VipConnectRequest(VIP_INFINITE) to a dead process", rc);
    if (VIP_RETURN r = VipDestroyVi(vi); r != VIP_SUCCESS) return fail("VipDestroyVi", r);
    VipDestroyPtag(nic, tag);
    VipCloseNic(nic);
    std::printf("nicfw_connect_death_tests: a request to a dead process ends with VIP_NO_MATCH\n");
    return 0;
}
