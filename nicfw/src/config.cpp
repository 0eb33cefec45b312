// config.cpp - Config::from_env: the VIPL_NICFW_* variables (read through the
// project's environment reader, viastack_env.hpp) and the timing-profile parser.
// Every bad value is refused with a message naming the variable (config.hpp).
#include "config.hpp"

#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "viastack_env.hpp"

namespace nicfw {

namespace {
uint32_t parse_ns(const std::string &var, const std::string &v) {
    char *end = nullptr;
    const unsigned long x = std::strtoul(v.c_str(), &end, 10);
    if (end == v.c_str() || *end || x > 100000000ul)
        throw std::runtime_error(var + ": '" + v + "' is not a delay in ns (0..100000000)");
    return static_cast<uint32_t>(x);
}

// none | lanai4 | lanai7 | file:PATH | synthetic:os=NS,or=NS,L=NS,g=NS  (any subset, others 0)
Profile parse_profile(const std::string &v) {
    Profile p;
    p.name = v;
    // The hardware-cost models (cost_model.hpp, docs/cost-model.md).
    if (builtin_cost_profile(v, &p.cost)) return p;
    if (v.rfind("file:", 0) == 0) {
        p.cost = load_cost_params(v.substr(5));
        return p;
    }
    const std::string pre = "synthetic:";
    if (v.rfind(pre, 0) != 0)
        throw std::runtime_error("VIPL_NICFW_PROFILE: '" + v +
                                 "' is not one of none, lanai4, lanai7, file:PATH, synthetic:os=NS,or=NS,L=NS,g=NS");
    std::string rest = v.substr(pre.size());
    size_t pos = 0;
    while (pos < rest.size()) {
        size_t comma = rest.find(',', pos);
        if (comma == std::string::npos) comma = rest.size();
        const std::string kv = rest.substr(pos, comma - pos);
        const size_t eq = kv.find('=');
        if (eq == std::string::npos) throw std::runtime_error("VIPL_NICFW_PROFILE: '" + kv + "' is not key=ns");
        const std::string k = kv.substr(0, eq);
        const uint32_t ns = parse_ns("VIPL_NICFW_PROFILE", kv.substr(eq + 1));
        if (k == "os") p.send_ns = ns;
        else if (k == "or") p.recv_ns = ns;
        else if (k == "L") p.wire_ns = ns;
        else if (k == "g") p.gap_ns = ns;
        else throw std::runtime_error("VIPL_NICFW_PROFILE: unknown key '" + k + "' (use os, or, L, g)");
        pos = comma + 1;
    }
    return p;
}

// VIPL_NICFW_DMA_MIN and VIPL_NICFW_DMA_MIN_SHM: "off", or a byte count (K/M
// suffix) from 1 to kMaxTransfer.
uint32_t parse_dma_min(const char *var, const std::string &v) {
    if (v == "off" || v == "0") return 0;
    char *end = nullptr;
    unsigned long long x = std::strtoull(v.c_str(), &end, 10);
    if (end != v.c_str() && (*end == 'k' || *end == 'K') && !end[1]) x <<= 10, ++end;
    else if (end != v.c_str() && (*end == 'm' || *end == 'M') && !end[1]) x <<= 20, ++end;
    if (end == v.c_str() || *end || x < 1 || x > kMaxTransfer)
        throw std::runtime_error(std::string(var) + ": '" + v +
                                 "' is not off or a byte count from 1 to 16M (K and M suffixes allowed)");
    return static_cast<uint32_t>(x);
}

// One of `words` (its index); anything else is refused.
int strict_choice(const char *var, std::initializer_list<const char *> words, const char *dflt, const char *expected) {
    const std::string v = viastack::env::str(var, dflt);
    int i = 0;
    for (const char *w : words) {
        if (v == w) return i;
        ++i;
    }
    throw std::runtime_error(std::string(var) + ": '" + v + "' is not " + expected);
}
} // namespace

Config Config::from_env() {
    Config c;
    c.mode = strict_choice("VIPL_NICFW_MODE", {"inline", "thread"}, "inline", "inline or thread") == 0 ? Mode::Inline
                                                                                                       : Mode::Thread;
    c.profile = parse_profile(viastack::env::str("VIPL_NICFW_PROFILE", "none"));
    // The doorbell of the modelled board (lanai4: emulated) unless set explicitly;
    // the model charges the doorbell actually in use.
    const char *bell_default = c.profile.cost.doorbell == BellKind::Emulated ? "emulated" : "fifo";
    c.doorbell = strict_choice("VIPL_NICFW_DOORBELL", {"fifo", "emulated"}, bell_default, "fifo or emulated") == 0
        ? Doorbell::Fifo
        : Doorbell::Emulated;
    const std::string ring = viastack::env::str("VIPL_NICFW_RING_KB", "1024");
    char *end = nullptr;
    const unsigned long kb = std::strtoul(ring.c_str(), &end, 10);
    if (end == ring.c_str() || *end || kb < 1024 || kb > 1024 * 1024)
        throw std::runtime_error("VIPL_NICFW_RING_KB: '" + ring + "' is not a size in KiB from 1024 to 1048576");
    c.ring_bytes = kb * 1024;
    c.faults = FaultSpec::parse(viastack::env::str("VIPL_NICFW_FAULTS", ""));
    // Faults make corruption possible: the CRC must be on to catch it.
    const int crc = strict_choice("VIPL_NICFW_CRC", {"", "0", "1"}, "", "0 or 1");
    if (crc == 1 && c.faults.any())
        throw std::runtime_error("VIPL_NICFW_CRC: 0 with VIPL_NICFW_FAULTS set: corrupt packets would go undetected; "
                                 "unset VIPL_NICFW_CRC (faults turn it on)");
    c.crc = crc == 2 || c.faults.any();
    const int rtx = strict_choice("VIPL_NICFW_RETRANSMIT", {"auto", "0", "1"}, "auto", "auto, 0 or 1");
    c.transport = rtx == 2 || (rtx == 0 && c.faults.any());
    const std::string lt = viastack::env::str("VIPL_NICFW_LINK_TIMEOUT_MS", "5000");
    end = nullptr;
    const unsigned long ms = std::strtoul(lt.c_str(), &end, 10);
    if (end == lt.c_str() || *end || ms < 10 || ms > 600000)
        throw std::runtime_error("VIPL_NICFW_LINK_TIMEOUT_MS: '" + lt + "' is not a time in ms from 10 to 600000");
    c.link_timeout_ms = static_cast<uint32_t>(ms);
    c.progress_thread = strict_choice("VIPL_NICFW_PROGRESS", {"0", "1"}, "0", "0 or 1") == 1;
    c.direct_send = strict_choice("VIPL_NICFW_DIRECT_SEND", {"0", "1"}, "1", "0 or 1") == 1;
    // A NIC that may have to resend, or acknowledge, keeps running while its
    // host is outside VIPL (as a real NIC does): inline mode gets the progress agent.
    if (c.transport) c.progress_thread = true;
    c.dma_min =
        parse_dma_min("VIPL_NICFW_DMA_MIN", viastack::env::str("VIPL_NICFW_DMA_MIN", std::to_string(kDefaultDmaMin)));
    // "off" for shared memory: the same crossover as any other memory.
    const uint32_t shm = parse_dma_min("VIPL_NICFW_DMA_MIN_SHM",
                                       viastack::env::str("VIPL_NICFW_DMA_MIN_SHM", std::to_string(kDefaultDmaMinShm)));
    c.dma_min_shm = shm ? shm : c.dma_min;
    const int os = strict_choice("VIPL_NICFW_ONESIDED", {"0", "shm", "1"}, "1", "0, shm or 1");
    c.onesided = os == 0 ? Config::OneSided::Off : os == 1 ? Config::OneSided::Shm : Config::OneSided::On;
    return c;
}

} // namespace nicfw
