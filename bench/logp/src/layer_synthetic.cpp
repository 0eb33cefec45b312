// layer_synthetic.cpp - see layer_synthetic.hpp.
#include "layer_synthetic.hpp"

#include "timer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace logp {

SyntheticParams parse_synthetic(const std::string &spec) {
    SyntheticParams p;
    std::stringstream ss(spec);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        auto eq = item.find('=');
        if (eq == std::string::npos)
            throw std::invalid_argument("synthetic parameter '" + item + "' is not key=value (e.g. o_s=2)");
        std::string key = item.substr(0, eq), val = item.substr(eq + 1);
        char *end = nullptr;
        double v = std::strtod(val.c_str(), &end);
        if (val.empty() || *end != '\0' || !(v >= 0) || v > 1e6)
            throw std::invalid_argument("synthetic parameter '" + item + "': value must be a number >= 0");
        if (key == "o_s") p.o_s_us = v;
        else if (key == "o_r") p.o_r_us = v;
        else if (key == "g") p.g_us = v;
        else if (key == "L") p.L_us = v;
        else if (key == "t0") p.t0_us = v;
        else if (key == "r_inf") p.r_inf_mb_s = v;
        else if (key == "window") p.window = int(v);
        else
            throw std::invalid_argument("unknown synthetic parameter '" + key +
                                        "' (known: o_s, o_r, g, L, window, t0, r_inf)");
    }
    if (p.window < 1 || p.window > 1024) throw std::invalid_argument("synthetic window must be 1..1024");
    if (p.r_inf_mb_s <= 0) throw std::invalid_argument("synthetic r_inf must be > 0");
    return p;
}

std::string format_synthetic(const SyntheticParams &p) {
    return fmt::format("o_s={},o_r={},g={},L={},window={},t0={},r_inf={}", p.o_s_us, p.o_r_us, p.g_us, p.L_us, p.window,
                       p.t0_us, p.r_inf_mb_s);
}

namespace {
std::uint64_t us_to_ticks(double us) { return std::uint64_t(us * 1e3 / ns_per_cycle()); }
} // namespace

SyntheticLayer::SyntheticLayer(const SyntheticParams &p)
    : p_(p), o_s_(us_to_ticks(p.o_s_us)), o_r_(us_to_ticks(p.o_r_us)), g_(us_to_ticks(p.g_us)),
      L_(us_to_ticks(p.L_us)) {}

std::string SyntheticLayer::description() const {
    return "synthetic LogP machine with known parameters (" + format_synthetic(p_) + ")";
}

void SyntheticLayer::wait_until(std::uint64_t tick) const {
    while (std::int64_t(ticks() - tick) < 0) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

void SyntheticLayer::rtt_client(std::size_t) {
    wait_until(ticks() + o_s_);                           // our send
    std::uint64_t echo = ticks() + L_ + o_r_ + o_s_ + L_; // the peer receives and answers
    wait_until(echo);
    wait_until(ticks() + o_r_); // our receive
}

void SyntheticLayer::burst_send_one() {
    while (!departures_.empty() && std::int64_t(ticks() - departures_.front()) >= 0) departures_.pop_front();
    if (departures_.size() >= std::size_t(p_.window)) { // NIC queue full: wait for the oldest to leave
        wait_until(departures_.front());
        departures_.pop_front();
    }
    wait_until(ticks() + o_s_);
    std::uint64_t now = ticks();
    last_departure_ = (std::int64_t(now - last_departure_) > 0 ? now : last_departure_) + g_;
    departures_.push_back(last_departure_);
}

void SyntheticLayer::burst_sender_finish(int) {
    if (!departures_.empty()) wait_until(departures_.back() + L_); // the receiver has all of them
    departures_.clear();
}

void SyntheticLayer::recv_probe_send() {
    wait_until(ticks() + o_s_);
    probe_arrival_ = ticks() + L_;
}

double SyntheticLayer::recv_probe_receive(double settle_ns) {
    spin_ns(settle_ns);
    for (;;) {
        long sw = context_switches();
        std::uint64_t t0 = ticks();
        if (std::int64_t(t0 - probe_arrival_) >= 0) { // the message is there: take it
            wait_until(t0 + o_r_);
            double ns = ticks_to_ns(ticks() - t0);
            return context_switches() == sw ? ns : -ns;
        }
    }
}

double SyntheticLayer::bulk_stream_client(std::size_t bytes, int count) {
    std::uint64_t per = us_to_ticks(p_.t0_us + double(bytes) / p_.r_inf_mb_s);
    std::uint64_t t0 = ticks(), next = t0;
    for (int i = 0; i < count; ++i) wait_until(next += per); // an absolute schedule: no drift from the loop
    return ticks_to_ns(ticks() - t0);
}

} // namespace logp
