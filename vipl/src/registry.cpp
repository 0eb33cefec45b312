// registry.cpp - the provider registry and the handle tables.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "handles.hpp"
#include "viastack_log.hpp"

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
std::string list_providers() {
    std::string out;
    for (auto *p : prov::providers()) out += std::string(" ") + p->name + " (default device " + p->default_device + ")";
    return out;
}
} // namespace

namespace {
// Device names of the VIA implementations public VI programs were written for:
// M-VIA ("/dev/via_lo", "/dev/via_eth0", ...) and Giganet/Emulex cLAN
// ("/dev/clanvi0", "clanvi0"; "nic0" in its NT port).  They name hardware that
// does not exist here, so each is an alias of the default provider.
bool is_legacy_name(std::string_view d) {
    auto starts = [&](std::string_view p) { return d.size() > p.size() && d.substr(0, p.size()) == p; };
    auto digits_after = [&](std::string_view p) {
        return starts(p) && d.find_first_not_of("0123456789", p.size()) == std::string_view::npos;
    };
    return starts("/dev/via_") || starts("via_") || digits_after("/dev/clanvi") || digits_after("clanvi") ||
        digits_after("nic");
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// $VIPL_DEVICE_MAP = "name=device[,name=device...]": the name a program opens on
// the left, the device (or provider name: "nicfw", "verbs") opened instead on the
// right; a name ending in '*' matches every name starting with what precedes it.
// Consulted before the built-in aliases, so it also retargets them.
bool mapped(std::string_view device, std::string *to) {
    const char *env = std::getenv("VIPL_DEVICE_MAP");
    if (!env) return false;
    std::string_view rest = env;
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string_view from = trim(item.substr(0, eq)), dest = trim(item.substr(eq + 1));
        const bool hit = (!from.empty() && from.back() == '*')
            ? device.substr(0, from.size() - 1) == from.substr(0, from.size() - 1)
            : device == from;
        if (hit) {
            *to = std::string(dest);
            return true;
        }
    }
    return false;
}
} // namespace

VIP_RETURN open_device(const char *device, prov::Nic **out) {
    auto &ps = prov::providers();
    std::string alias;
    if (device && *device && mapped(device, &alias)) {
        device = alias.c_str(); // "" = the default provider, as for NULL
    } else if (device && is_legacy_name(device)) {
        // A device of that name that a provider owns (an RDMA NIC called nic0)
        // is opened as itself; otherwise the legacy name means the default.
        bool owned = false;
        for (auto *p : ps) owned = owned || p->matches(device);
        if (!owned) device = nullptr;
    }
    if (!device || !*device) {
        // No device named: $VIPL_PROVIDER picks the provider, nicfw by default.
        const char *want = std::getenv("VIPL_PROVIDER");
        if (!want || !*want) want = "nicfw";
        for (auto *p : ps)
            if (std::strcmp(p->name, want) == 0) return p->open(p->default_device, out);
        viastack::log::error(viastack::log::Layer::vipl,
                             "VIPL_PROVIDER='{}' is not a provider of this build; providers:{}", want,
                             list_providers());
        return VIP_INVALID_PARAMETER;
    }
    for (auto *p : ps)
        if (p->matches(device)) return p->open(device, out);
    return VIP_INVALID_PARAMETER; // no provider owns that device name
}

} // namespace vipl::api
