// verbs_register.cpp - makes the verbs provider known to the VIPL core.
//
// Device names it owns: "verbs" (its default: $VIPL_VERBS_DEVICE or the first RDMA
// device with an active port), any device in /sys/class/infiniband, and the usual
// RDMA driver names (rxe0, mlx5_0, ...) so that a missing device gets this
// provider's explanation rather than "unknown device".
#include <sys/stat.h>

#include <cstring>
#include <string>

#include "verbs_provider.hpp"

namespace vipl::verbs {
namespace {

bool matches(const char *device) {
    if (!device || !*device) return false;
    if (std::strcmp(device, "verbs") == 0) return true;
    if (std::strchr(device, '/') == nullptr) {
        struct stat st;
        if (stat(("/sys/class/infiniband/" + std::string(device)).c_str(), &st) == 0) return true;
    }
    static const char *const prefixes[] = {"rxe",     "siw",  "mlx4_",  "mlx5_",      "irdma",
                                           "bnxt_re", "qedr", "hfi1_",  "efa_",       "erdma_",
                                           "cxgb4_",  "hns_", "ocrdma", "vmw_pvrdma", "ionic_"};
    for (const char *p : prefixes)
        if (std::strncmp(device, p, std::strlen(p)) == 0) return true;
    return false;
}

VIP_RETURN open(const char *device, prov::Nic **out) { return VerbsNic::open(device, out); }

const prov::ProviderInfo kVerbsProvider = {"verbs", matches, open, "verbs"};

} // namespace
} // namespace vipl::verbs

VIPL_REGISTER_PROVIDER(vipl::verbs::kVerbsProvider)
