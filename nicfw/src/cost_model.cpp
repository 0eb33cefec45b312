// cost_model.cpp - the cost model's built-in profiles, its parameter files, and
// the charging (cost_model.hpp; sources of every value: docs/cost-model.md).
#include "cost_model.hpp"
#include "vipl_instr.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace nicfw {

// ---------------------------------------------------------------- profiles
namespace {

// LANai 7 on 4-way 550 MHz Pentium III, 33 MHz 64-bit PCI, Myrinet ([Begel01]
// footnote 2).  [src] = taken from a paper, [fit] = derived from one of its
// figures, [assume] = an assumption (docs/cost-model.md says why each).
CostParams lanai7() {
    CostParams p;
    p.name = "lanai7";
    p.enabled = true;
    p.pio_read_ns = 900;        // [assume] a non-posted 33 MHz PCI read through the host bridge
    p.pio_write_ns = 250;       // [assume] a posted PCI write
    p.doorbell_writes = 2;      // [assume] LANai 7 hardware doorbell: "slightly more complex access" (§7.1)
    p.uncached_read_ns = 250;   // [assume] "un-cached reads to check descriptor fields" (§7.3)
    p.host_cq_read_ns = 150;    // [assume] a cache miss to host memory the NIC wrote
    p.pio_data_mb_s = 23.9;     // [src] [FM1] §2: processor-mediated double-word writes, 23.9 MB/s
    p.dma_setup_ns = 2500;      // [src] [Begel01] §8: "a null DMA transaction requires 2-3 usec"
    p.dma_mb_s = 130;           // [src] [BIP] §3.3: PCI transfers "at about 130MBytes/s"
    p.desc_bytes = 64;          // [assume] control segment + two data/address segments
    p.fw_loop_ns = 700;         // [src] [FM1] §4.2: baseline t0 4.2 us vs streamed 3.5 us
    p.fw_vi_poll_ns = 1800;     // [fit] [Begel01] Table 2: AMVIAv1 - AMVIAv3 RTT/2 = 3.6 us for 2 more VIs
    p.fw_send_ns = 4200;        // [fit] Table 5: 14.5 us per short send, less the DMAs, poll and link
    p.fw_recv_ns = 6200;        // [fit] Table 5: 14.5 us per short receive, less the DMAs
    p.link_mb_s = 160;          // [src] [BIP] §3.3: "the data on the wire could be cadenced at 160Mbytes/s"
    p.link_header_bytes = 8;    // [assume] Myrinet route, type and CRC
    p.switch_ns = 500;          // [assume] one Myrinet switch and cables
    p.host_mhz = 550;           // [src] [Begel01] abstract, footnote 2: 4-way 550 MHz Pentium III
    p.host_ipc_ratio = 2.0;     // [assume] a current x86 core retires ~2x a P6 core's instructions per clock
    p.host_max_self_ns = 20000; // [assume] no layer scope of a short message runs 20 us on this host
    p.recv_line_bytes = 32;     // [src] P6 cache line; [Begel01] §6: messages "initially un-cached"
    p.recv_line_ns = 250;       // [assume] as uncached_read_ns: a memory access of a 550 MHz PIII
    return p;
}

// LANai 4 on 2-way 400 MHz Pentium II, 33 MHz 32-bit PCI: the same firmware
// with emulated doorbells ([Begel01] §4: "the host [waits] for a previous token
// to be processed"), one PIO write per token, one host-DMA engine.
CostParams lanai4() {
    CostParams p = lanai7();
    p.name = "lanai4";
    p.doorbell = BellKind::Emulated;
    p.doorbell_writes = 1; // [assume] a plain token write; the wait is the emulation's
    p.dma_mb_s = 110;      // [fit] Table 1: 62.8 MB/s on 32-bit PCI vs 68.3 MB/s (LANai 7)
    p.host_mhz = 400;      // [src] [Begel01] footnote 2: 2-way 400 MHz Pentium II (a P6 core too)
    return p;
}

std::string trim(const std::string &s) {
    const size_t a = s.find_first_not_of(" \t\r");
    if (a == std::string::npos) return "";
    const size_t b = s.find_last_not_of(" \t\r");
    return s.substr(a, b - a + 1);
}

std::string num(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v); // shortest form that reads back exactly
    return std::string(buf, r.ptr);
}

// One table of every key: its name and how to read/write it.
struct Key {
    const char *name;
    uint32_t CostParams::*u;
    double CostParams::*d;
    bool zero_ok = false; // a double that may be 0 (off)
};
const Key kKeys[] = {
    {"pio_read_ns", &CostParams::pio_read_ns, nullptr},
    {"pio_write_ns", &CostParams::pio_write_ns, nullptr},
    {"doorbell_writes", &CostParams::doorbell_writes, nullptr},
    {"uncached_read_ns", &CostParams::uncached_read_ns, nullptr},
    {"host_cq_read_ns", &CostParams::host_cq_read_ns, nullptr},
    {"pio_data_mb_s", nullptr, &CostParams::pio_data_mb_s},
    {"dma_setup_ns", &CostParams::dma_setup_ns, nullptr},
    {"dma_mb_s", nullptr, &CostParams::dma_mb_s},
    {"desc_bytes", &CostParams::desc_bytes, nullptr},
    {"fw_loop_ns", &CostParams::fw_loop_ns, nullptr},
    {"fw_vi_poll_ns", &CostParams::fw_vi_poll_ns, nullptr},
    {"fw_send_ns", &CostParams::fw_send_ns, nullptr},
    {"fw_recv_ns", &CostParams::fw_recv_ns, nullptr},
    {"link_mb_s", nullptr, &CostParams::link_mb_s},
    {"link_header_bytes", &CostParams::link_header_bytes, nullptr},
    {"switch_ns", &CostParams::switch_ns, nullptr},
    {"pio_max_bytes", &CostParams::pio_max_bytes, nullptr},
    {"host_mhz", nullptr, &CostParams::host_mhz, true},
    {"host_ipc_ratio", nullptr, &CostParams::host_ipc_ratio, true},
    {"this_host_mhz", nullptr, &CostParams::this_host_mhz, true},
    {"host_max_self_ns", &CostParams::host_max_self_ns, nullptr},
    {"recv_line_bytes", &CostParams::recv_line_bytes, nullptr},
    {"recv_line_ns", &CostParams::recv_line_ns, nullptr},
};

template <class E>
bool word(const std::string &v, std::initializer_list<std::pair<const char *, E>> words, E *out) {
    for (const auto &w : words)
        if (v == w.first) {
            *out = w.second;
            return true;
        }
    return false;
}
} // namespace

bool builtin_cost_profile(const std::string &name, CostParams *out) {
    if (name == "none") *out = CostParams{};
    else if (name == "lanai7") *out = lanai7();
    else if (name == "lanai4") *out = lanai4();
    else return false;
    return true;
}

std::string dump_cost_params(const CostParams &p) {
    std::ostringstream o;
    o << "# nicfw cost model (docs/cost-model.md); times in ns, bandwidths in MB/s\n";
    o << "name = " << p.name << "\n";
    for (const Key &k : kKeys) o << k.name << " = " << (k.u ? std::to_string(p.*k.u) : num(p.*k.d)) << "\n";
    o << "cq = " << (p.cq == CqPlace::Nic ? "nic" : "host") << "\n";
    o << "doorbell = " << (p.doorbell == BellKind::Fifo ? "fifo" : "emulated") << "\n";
    o << "loop = " << (p.loop == FwLoop::Streamed ? "streamed" : "baseline") << "\n";
    o << "send_data = " << (p.send_data == SendData::Dma ? "dma" : "pio") << "\n";
    return o.str();
}

CostParams parse_cost_params(const std::string &text, const std::string &where) {
    CostParams p;
    p.name = where;
    p.enabled = true;
    std::istringstream in(text);
    std::string line;
    int n = 0;
    auto bad = [&](const std::string &why) {
        return std::runtime_error("VIPL_NICFW_PROFILE: " + where + ":" + std::to_string(n) + ": " + why);
    };
    while (std::getline(in, line)) {
        ++n;
        const size_t hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        line = trim(line);
        if (line.empty()) continue;
        const size_t eq = line.find('=');
        if (eq == std::string::npos) throw bad("'" + line + "' is not key = value");
        const std::string k = trim(line.substr(0, eq)), v = trim(line.substr(eq + 1));
        if (k == "base") { // start from a built-in profile, then override
            const std::string name = p.name;
            if (!builtin_cost_profile(v, &p) || v == "none") throw bad("base '" + v + "' is not lanai4 or lanai7");
            p.name = name;
            continue;
        }
        if (k == "name") {
            p.name = v;
            continue;
        }
        if (k == "cq") {
            if (!word<CqPlace>(v, {{"nic", CqPlace::Nic}, {"host", CqPlace::Host}}, &p.cq))
                throw bad("cq is nic or host");
            continue;
        }
        if (k == "doorbell") {
            if (!word<BellKind>(v, {{"fifo", BellKind::Fifo}, {"emulated", BellKind::Emulated}}, &p.doorbell))
                throw bad("doorbell is fifo or emulated");
            continue;
        }
        if (k == "loop") {
            if (!word<FwLoop>(v, {{"streamed", FwLoop::Streamed}, {"baseline", FwLoop::Baseline}}, &p.loop))
                throw bad("loop is streamed or baseline");
            continue;
        }
        if (k == "send_data") {
            if (!word<SendData>(v, {{"dma", SendData::Dma}, {"pio", SendData::Pio}}, &p.send_data))
                throw bad("send_data is dma or pio");
            continue;
        }
        const Key *key = nullptr;
        for (const Key &x : kKeys)
            if (k == x.name) key = &x;
        if (!key) throw bad("unknown key '" + k + "' (the keys: docs/cost-model.md)");
        if (key->u) {
            uint64_t x = 0;
            auto r = std::from_chars(v.data(), v.data() + v.size(), x);
            if (r.ec != std::errc() || r.ptr != v.data() + v.size() || x > 1000000000ull)
                throw bad(k + " = '" + v + "' is not an integer from 0 to 1000000000");
            p.*key->u = static_cast<uint32_t>(x);
        } else {
            double x = 0;
            auto r = std::from_chars(v.data(), v.data() + v.size(), x);
            if (r.ec != std::errc() || r.ptr != v.data() + v.size() || !std::isfinite(x) ||
                !(key->zero_ok ? x >= 0 : x > 0))
                throw bad(k + " = '" + v + "' is not a " + (key->zero_ok ? "number >= 0" : "positive number"));
            p.*key->d = x;
        }
    }
    if (p.dma_mb_s <= 0 || p.link_mb_s <= 0) throw bad("dma_mb_s and link_mb_s must be given (> 0)");
    if (p.send_data == SendData::Pio && p.pio_data_mb_s <= 0) throw bad("send_data = pio needs pio_data_mb_s > 0");
    if (p.host_mhz > 0 && (p.host_ipc_ratio <= 0 || p.host_max_self_ns == 0))
        throw bad(
            "host_mhz > 0 needs host_ipc_ratio > 0 and host_max_self_ns > 0 (or host_mhz = 0: no host CPU model)");
    if (p.recv_line_ns > 0 && p.recv_line_bytes == 0) throw bad("recv_line_ns > 0 needs recv_line_bytes > 0");
    return p;
}

CostParams load_cost_params(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("VIPL_NICFW_PROFILE: cannot read the profile file '" + path + "'");
    std::stringstream ss;
    ss << f.rdbuf();
    return parse_cost_params(ss.str(), path);
}

bool host_cpu_model(const CostParams &p, double this_mhz, vipl_host_model *out) {
    if (!p.enabled) return false;
    *out = vipl_host_model{};
    const double mine = p.this_host_mhz > 0 ? p.this_host_mhz : this_mhz;
    out->slowdown = p.host_mhz > 0 ? std::max(1.0, mine / p.host_mhz * p.host_ipc_ratio) : 1.0;
    out->max_self_ns = p.host_max_self_ns > 0 ? p.host_max_self_ns : 1e9;
    out->line_bytes = p.recv_line_bytes;
    out->line_ns = p.recv_line_bytes ? p.recv_line_ns : 0;
    return out->slowdown > 1.0 || out->line_ns > 0;
}

const char *cost_item_name(int i) {
    static const char *const names[kCostItems] = {
        "host PIO read", "host PIO write", "host PIO data", "host uncached read", "host CQ read", "host doorbell wait",
        "NIC loop",      "NIC VI polling", "NIC DMA",       "NIC firmware",       "link"};
    return i >= 0 && i < kCostItems ? names[i] : "?";
}

// ---------------------------------------------------------------- clock
namespace {
uint64_t real_now(void *) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
// A host charge is spun on the instrumentation's TSC clock (its rate
// calibrated against CLOCK_MONOTONIC once), not on CLOCK_MONOTONIC itself: on
// this VM (kvm-clock) a CLOCK_MONOTONIC read costs ~26 ns, and a spin of 500 ns
// on it lasted 575 ns (one read plus a pause past the end, measured), so every
// charge ran 10-15% over its parameter.  The NIC's timeline (now) stays on
// CLOCK_MONOTONIC: its stamps cross processes.
void real_spin(void *, uint64_t ns) {
    const uint64_t t0 = vipl_instr_now();
    if (__builtin_expect(t0 == 0, 0)) { // no cycle counter on this machine
        const uint64_t end = real_now(nullptr) + ns;
        while (real_now(nullptr) < end) __builtin_ia32_pause();
        return;
    }
    const uint64_t end = t0 + uint64_t(double(ns) * vipl_instr_cycles_per_ns());
    while (vipl_instr_now() < end) {}
}
} // namespace

const CostClock &real_cost_clock() {
    static const CostClock c{real_now, real_spin, nullptr};
    return c;
}

// ---------------------------------------------------------------- charging
CostModel::CostModel(const CostParams &p, const CostClock &clock) : p_(p), clock_(clock), on_(p.enabled) {}

uint64_t CostModel::dma_ns(uint64_t bytes) const {
    return p_.dma_setup_ns + uint64_t(std::llround(double(bytes) * 1000.0 / p_.dma_mb_s));
}
uint64_t CostModel::link_ns(uint64_t bytes) const {
    return uint64_t(std::llround(double(bytes + p_.link_header_bytes) * 1000.0 / p_.link_mb_s));
}

void CostModel::spin(int item, uint64_t ns) {
    if (!ns) return;
    add(item, ns);
    clock_.spin(clock_.ctx, ns);
}

void CostModel::host_doorbell(bool emulated) {
    if (emulated) {
        // The LANai 4 firmware takes a token when it starts on that send: the
        // host polls the token slot (a PIO read) until the NIC has started the
        // last one it was given, so it runs at most one message ahead.
        const uint64_t t = now(), taken = tx_start_.load(std::memory_order_relaxed);
        if (taken > t) spin(kCostBellWait, taken - t);
        spin(kCostPioRead, p_.pio_read_ns);
    }
    spin(kCostPioWrite, uint64_t(p_.pio_write_ns) * p_.doorbell_writes);
}

void CostModel::host_send_data(uint32_t bytes) {
    if (pio_path(bytes)) spin(kCostPioData, uint64_t(std::llround(double(bytes) * 1000.0 / p_.pio_data_mb_s)));
}

void CostModel::host_cq_check(bool took) {
    if (p_.cq == CqPlace::Nic) {
        spin(kCostPioRead, p_.pio_read_ns);             // the head entry, across the bus
        if (took) spin(kCostPioWrite, p_.pio_write_ns); // cleared
    } else {
        spin(kCostHostCq, p_.host_cq_read_ns); // a host cache miss; clearing it is a local write
    }
}

void CostModel::host_desc_status() { spin(kCostUncached, p_.uncached_read_ns); }

uint64_t CostModel::loop_ns(uint64_t start, bool tx) {
    if (p_.loop == FwLoop::Streamed && last_tx_ == tx && start <= last_end_) return 0;
    return p_.fw_loop_ns;
}

uint64_t CostModel::nic_tx(uint32_t bytes, uint32_t nvis, bool send_cq) {
    const uint64_t t = now(), free = nic_free_.load(std::memory_order_relaxed);
    const uint64_t start = free > t ? free : t; // a busy NIC goes straight on to it
    tx_start_.store(start, std::memory_order_relaxed);
    const uint64_t loop = loop_ns(start, true), poll = uint64_t(p_.fw_vi_poll_ns) * nvis;
    const uint64_t dma = dma_ns(p_.desc_bytes) + (pio_path(bytes) || !bytes ? 0 : dma_ns(bytes));
    const uint64_t link = link_ns(bytes);
    const uint64_t leave = start + loop + poll + dma + p_.fw_send_ns + link;
    // After the packet: the descriptor's status (and a host CQ entry) by DMA.
    const uint64_t after = dma_ns(4) + (send_cq && p_.cq == CqPlace::Host ? dma_ns(8) : 0);
    add(kCostNicLoop, loop);
    add(kCostNicPoll, poll);
    add(kCostNicDma, dma + after);
    add(kCostNicFw, p_.fw_send_ns);
    add(kCostLink, link + p_.switch_ns);
    last_end_ = leave + after;
    last_tx_ = true;
    nic_free_.store(last_end_, std::memory_order_relaxed);
    return leave + p_.switch_ns;
}

uint64_t CostModel::nic_rx(uint64_t key, uint64_t arrival, uint32_t bytes, bool recv_cq) {
    if (key == rx_key_) return rx_end_;
    const uint64_t free = nic_free_.load(std::memory_order_relaxed);
    const uint64_t start = arrival > free ? arrival : free;
    const uint64_t loop = loop_ns(arrival, false);
    // The receive descriptor fetched, the data to the host, the status written
    // (and a host CQ entry): DMAs; the firmware's own work between them.
    const uint64_t dma = dma_ns(p_.desc_bytes) + (bytes ? dma_ns(bytes) : 0) + dma_ns(4) +
        (recv_cq && p_.cq == CqPlace::Host ? dma_ns(8) : 0);
    add(kCostNicLoop, loop);
    add(kCostNicDma, dma);
    add(kCostNicFw, p_.fw_recv_ns);
    rx_key_ = key;
    rx_end_ = start + loop + dma + p_.fw_recv_ns;
    last_end_ = rx_end_;
    last_tx_ = false;
    nic_free_.store(rx_end_, std::memory_order_relaxed);
    return rx_end_;
}

} // namespace nicfw
