// fake_hooks.cpp - the C fault-injection API of fake_hooks.h: rules the
// switchboard applies to the messages it carries (fake_wire.cpp).
#include "fake_provider.hpp"

using namespace vipl::fake;

namespace {
bool valid_fault(vipl_fake_fault f) { return f >= VIPL_FAKE_DROP && f <= VIPL_FAKE_CORRUPT; }

// The rule's VI: nullptr for "every VI"; false if h names no live fake VI.
bool rule_vi(VIP_VI_HANDLE h, FakeVi **out) {
    *out = nullptr;
    if (!h) return true;
    *out = board().find_vi(h);
    return *out != nullptr;
}
} // namespace

extern "C" {

VIP_RETURN vipl_fake_fault_next(VIP_VI_HANDLE vi, vipl_fake_fault fault, unsigned count, unsigned delay_posts) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    FaultRule r;
    if (!valid_fault(fault) || count == 0 || (fault == VIPL_FAKE_DELAY && delay_posts == 0) || !rule_vi(vi, &r.vi))
        return VIP_INVALID_PARAMETER;
    r.fault = fault;
    r.count = count;
    r.delay_posts = delay_posts ? delay_posts : 1;
    b.rules.push_back(r);
    return VIP_SUCCESS;
}

VIP_RETURN vipl_fake_fault_random(VIP_VI_HANDLE vi, vipl_fake_fault fault, double probability, uint64_t seed,
                                  unsigned delay_posts) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    FaultRule r;
    if (!valid_fault(fault) || !(probability >= 0 && probability <= 1) ||
        (fault == VIPL_FAKE_DELAY && delay_posts == 0) || !rule_vi(vi, &r.vi))
        return VIP_INVALID_PARAMETER;
    r.fault = fault;
    r.random = true;
    r.probability = probability;
    r.rng = seed;
    r.delay_posts = delay_posts ? delay_posts : 1;
    b.rules.push_back(r);
    return VIP_SUCCESS;
}

void vipl_fake_faults_clear(void) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    b.rules.clear();
}

void vipl_fake_release_held(void) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    for (Held &h : b.held) {
        h.posts_left = 0;
        h.after_next = false;
    }
    b.release_ready();
    b.settle();
}

VIP_RETURN vipl_fake_break_connection(VIP_VI_HANDLE h) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    FakeVi *vi = b.find_vi(h);
    if (!vi) return VIP_INVALID_PARAMETER;
    if (vi->state != ViState::Connected) return VIP_INVALID_STATE;
    b.break_connection(vi, VIP_ERROR_CONN_LOST, nullptr, VIP_ERROR_CONN_LOST);
    b.settle();
    return VIP_SUCCESS;
}

void vipl_fake_get_stats(vipl_fake_stats *out) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    *out = b.stats;
}

void vipl_fake_reset_stats(void) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    b.stats = vipl_fake_stats{};
}

} // extern "C"
