// fault_inject.cpp - parsing VIPL_NICFW_FAULTS and the injector (fault_inject.hpp).
#include "fault_inject.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "packet_check.hpp"

namespace nicfw {

namespace {
constexpr size_t kMaxHeld = 16; // beyond this, a packet to hold is delivered at once
// Room for the largest staged packet (header, RDMA extension, 64 KiB, stamp),
// made and touched up front so held copies never grow the process over a run.
constexpr size_t kHeldBytes = 32 + 16 + 64 * 1024 + 8 + 64;

[[noreturn]] void bad(const std::string &item, const std::string &why) {
    throw std::runtime_error("VIPL_NICFW_FAULTS: '" + item + "': " + why +
                             " (accepted: drop=P,dup=P,reorder=P,delay=P,corrupt=P with P in 0..1, "
                             "delay_us=N, seed=N, kill=RANK@MS, linkdown=RANK@MS; or off)");
}

double prob(const std::string &item, const std::string &v) {
    char *end = nullptr;
    const double p = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end || !(p >= 0.0 && p <= 1.0)) bad(item, "not a probability in 0..1");
    return p;
}

uint64_t number(const std::string &item, const std::string &v, uint64_t max) {
    char *end = nullptr;
    const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
    if (end == v.c_str() || *end || v[0] == '-' || x > max) bad(item, "not a number in 0.." + std::to_string(max));
    return x;
}

void rank_at(const std::string &item, const std::string &v, int *rank, uint32_t *ms) {
    const size_t at = v.find('@');
    if (at == std::string::npos) bad(item, "not RANK@MS");
    *rank = static_cast<int>(number(item, v.substr(0, at), 65534));
    *ms = static_cast<uint32_t>(number(item, v.substr(at + 1), 86400000));
}
} // namespace

FaultSpec FaultSpec::parse(const std::string &s) {
    FaultSpec f;
    if (s.empty() || s == "off" || s == "0") return f;
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t comma = s.find(',', pos);
        if (comma == std::string::npos) comma = s.size();
        const std::string item = s.substr(pos, comma - pos);
        pos = comma + 1;
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos) bad(item, "not key=value");
        const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
        if (k == "drop") f.drop = prob(item, v);
        else if (k == "dup") f.dup = prob(item, v);
        else if (k == "reorder") f.reorder = prob(item, v);
        else if (k == "delay") f.delay = prob(item, v);
        else if (k == "corrupt") f.corrupt = prob(item, v);
        else if (k == "delay_us") f.delay_us = static_cast<uint32_t>(number(item, v, 10000000));
        else if (k == "seed") f.seed = number(item, v, UINT64_MAX);
        else if (k == "kill") rank_at(item, v, &f.kill_rank, &f.kill_ms);
        else if (k == "linkdown") rank_at(item, v, &f.linkdown_rank, &f.linkdown_ms);
        else if (k == "die_reserved") {
            rank_at(item, v, &f.die_reserved_rank, &f.die_reserved_n);
            if (f.die_reserved_n == 0) bad(item, "N counts data packets from 1");
        } else bad(item, "unknown key");
    }
    if (f.drop + f.dup + f.reorder + f.delay + f.corrupt > 1.0) bad(s, "the probabilities add up to more than 1");
    return f;
}

FaultInjector::FaultInjector(const FaultSpec &spec, int rank, uint64_t opened_ns)
    : spec_(spec), rank_(rank), state_(spec.seed ^ (0x9E3779B97F4A7C15ull * uint64_t(rank + 1))) {
    if (spec.kill_rank == rank) kill_at_ = opened_ns + uint64_t(spec.kill_ms) * 1000000ull + 1;
    if (spec.linkdown_rank >= 0) linkdown_at_ = opened_ns + uint64_t(spec.linkdown_ms) * 1000000ull + 1;
    held_.resize(kMaxHeld);
    for (Held &e : held_) {
        e.bytes.resize(kHeldBytes);
        e.bytes.clear(); // capacity kept
    }
    scratch_.resize(kHeldBytes);
}

uint64_t FaultInjector::next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

Fate FaultInjector::decide() {
    double u = uniform();
    if ((u -= spec_.drop) < 0) return Fate::Drop;
    if ((u -= spec_.dup) < 0) return Fate::Duplicate;
    if ((u -= spec_.reorder) < 0) return Fate::Reorder;
    if ((u -= spec_.delay) < 0) return Fate::Delay;
    if ((u -= spec_.corrupt) < 0) return Fate::Corrupt;
    return Fate::Deliver;
}

void FaultInjector::corrupt(unsigned char *pkt, size_t bytes) {
    // Bytes 0..5 (tag, nslots) are the FIFO's, consumed before the packet is read.
    const size_t first = offsetof(PacketHeader, op);
    if (bytes <= first) return;
    const uint64_t r = next();
    const size_t byte = first + (r >> 8) % (bytes - first);
    pkt[byte] ^= static_cast<unsigned char>(1u << (r & 7));
}

bool FaultInjector::hold(const PacketHeader *h, uint64_t release_ns, uint32_t after) {
    if (nheld_ >= held_.size()) return false;
    for (Held &e : held_) {
        if (e.used) continue;
        // Never past the packet's own slots (a corrupt length must not read beyond them).
        const size_t n = std::min<size_t>(kHeaderBytes + packet_read_bytes(*h), size_t(h->nslots) * kSlotBytes);
        e.bytes.assign(reinterpret_cast<const unsigned char *>(h), reinterpret_cast<const unsigned char *>(h) + n);
        e.release_ns = release_ns;
        e.after = after;
        e.used = true;
        ++nheld_;
        return true;
    }
    return false;
}

void FaultInjector::packet_taken() {
    if (!nheld_) return;
    for (Held &e : held_)
        if (e.used && e.after) --e.after;
}

unsigned char *FaultInjector::scratch(size_t bytes) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
}

} // namespace nicfw
