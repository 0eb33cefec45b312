// poll.hpp - waiting for a NIC condition: spin (stepping an inline firmware),
// then yield, then sleep briefly, until the condition holds or time runs out.
// Spinning first keeps ping-pong latency low; yielding and sleeping keep eight
// waiting processes from starving each other on two cores.
#pragma once

#include <sched.h>
#include <time.h>

#include "firmware.hpp"
#include "vipl.h"

namespace nicfw {

// How long a wait keeps spinning under the cost model: about two one-way
// short-message times of the modelled NIC (longer spins only hold the CPU a
// descheduled peer needs on a loaded machine).
constexpr uint64_t kCostSpinNs = 50000;

// `host` is anything with host_poll() (the NIC).
template <class Host, class F>
bool poll_until(Host &host, VIP_ULONG timeout_ms, F &&cond) {
    if (cond()) return true;
    const bool forever = timeout_ms == VIP_INFINITE;
    const uint64_t deadline = forever ? 0 : now_ns() + uint64_t(timeout_ms) * 1000000ull;
    uint64_t mark = host.fw.rx_mark();
    const uint64_t spin_until = host.fw.cost().on() ? host.fw.cost().now() + kCostSpinNs : 0;
    for (uint32_t i = 0;; ++i) {
        host.host_poll();
        if (cond()) return true;
        // Packets keep arriving (a peer streams bulk requests this NIC must
        // serve): keep spinning rather than sleep between them.
        if (const uint64_t m = host.fw.rx_mark(); m != mark) {
            mark = m;
            if (i >= 2000) i = 0;
        }
        if (i < 2000) {
            __builtin_ia32_pause();
            continue;
        }
        // Under the cost model the NIC's own time passes before a message shows:
        // keep spinning through a modelled delay rather than give the CPU away.
        if (__builtin_expect(host.fw.cost().on(), 0) && host.fw.cost().now() < spin_until) continue;
        if (!forever && now_ns() >= deadline) return false;
        if (i < 20000) {
            sched_yield();
        } else {
            timespec ts{0, 50000};
            nanosleep(&ts, nullptr);
        }
    }
}

} // namespace nicfw
