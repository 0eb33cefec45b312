// registry.cpp - the provider registry and the handle tables.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "handles.hpp"

namespace vipl::prov {
namespace {
std::vector<const ProviderInfo *> &providers() {
    static std::vector<const ProviderInfo *> v; // filled by static constructors
    return v;
}
} // namespace

void register_provider(const ProviderInfo *p) { providers().push_back(p); }
} // namespace vipl::prov

namespace vipl::api {

namespace {
void list_providers(FILE *f) {
    for (auto *p : prov::providers()) std::fprintf(f, " %s (default device %s)", p->name, p->default_device);
}
} // namespace

VIP_RETURN open_device(const char *device, prov::Nic **out) {
    auto &ps = prov::providers();
    if (!device || !*device) {
        // No device named: $VIPL_PROVIDER picks the provider, nicfw by default.
        const char *want = std::getenv("VIPL_PROVIDER");
        if (!want || !*want) want = "nicfw";
        for (auto *p : ps)
            if (std::strcmp(p->name, want) == 0) return p->open(p->default_device, out);
        std::fprintf(stderr, "viastack: VIPL_PROVIDER='%s' is not a provider of this build; providers:", want);
        list_providers(stderr);
        std::fprintf(stderr, "\n");
        return VIP_INVALID_PARAMETER;
    }
    for (auto *p : ps)
        if (p->matches(device)) return p->open(device, out);
    return VIP_INVALID_PARAMETER; // no provider owns that device name
}

} // namespace vipl::api
