// am_stats.cpp - per-endpoint message statistics (the amx statistics
// extension: get, reset, aggregate, dump) and AMVIA_FatalErr.  The counters
// themselves are bumped on the send and receive paths (count_sent in
// am_internal.hpp, run_request/run_reply in am_poll.cpp).
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <algorithm>

#include "am_internal.hpp"
#include "vipl_boot.h"

using namespace amvia;

extern "C" {

const amvia_stats_t AMVIA_initial_stats = {};

int AMVIA_GetEndpointStatistics(ep_t ep, amvia_stats_t *stats) {
    if (!valid_ep(ep) || !stats)
        return fail(AM_ERR_BAD_ARG, "AMVIA_GetEndpointStatistics", "%s",
                    !stats ? "stats is NULL" : "ep is not an endpoint from AM_AllocateEndpoint");
    BundleGuard hold(ep->eb);
    *stats = ep->stats;
    stats->Endpoints = 1;
    return AM_OK;
}

int AMVIA_ResetEndpointStatistics(ep_t ep) {
    if (!valid_ep(ep))
        return fail(AM_ERR_BAD_ARG, "AMVIA_ResetEndpointStatistics", "ep is not an endpoint from AM_AllocateEndpoint");
    BundleGuard hold(ep->eb);
    ep->stats = AMVIA_initial_stats;
    return AM_OK;
}

int AMVIA_AggregateStatistics(amvia_stats_t *runningsum, amvia_stats_t *newvalues) {
    if (!runningsum || !newvalues)
        return fail(AM_ERR_BAD_ARG, "AMVIA_AggregateStatistics", "runningsum and newvalues must not be NULL");
    // Every field is a uint64_t count (latency is not collected, so its
    // min/max/sum stay 0 and adding is as good as min/max).
    static_assert(sizeof(amvia_stats_t) % sizeof(uint64_t) == 0);
    uint64_t a[sizeof(amvia_stats_t) / sizeof(uint64_t)], b[sizeof a / sizeof a[0]];
    std::memcpy(a, runningsum, sizeof a);
    std::memcpy(b, newvalues, sizeof b);
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) a[i] += b[i];
    std::memcpy(runningsum, a, sizeof a);
    return AM_OK;
}

namespace {
struct Out {
    char *buf;
    size_t cap, len = 0;
    __attribute__((format(printf, 2, 3))) void put(const char *fmt, ...) {
        if (len >= cap) return;
        va_list ap;
        va_start(ap, fmt);
        int n = std::vsnprintf(buf + len, cap - len, fmt, ap);
        va_end(ap);
        if (n > 0) len = std::min(cap, len + size_t(n));
    }
    void cats(const char *name, const uint64_t *v) {
        put("%-26s short %llu medium %llu long %llu total %llu\n", name, (unsigned long long)v[0],
            (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)(v[0] + v[1] + v[2]));
    }
    void one(const char *name, uint64_t v) { put("%-26s %llu\n", name, (unsigned long long)v); }
};
uint64_t sum3(const uint64_t *v) { return v[0] + v[1] + v[2]; }
} // namespace

const char *AMVIA_DumpStatistics(void *fp, amvia_stats_t *stats, int globalAnalysis) {
    static char text[4096];
    text[0] = '\0';
    if (!stats) {
        fail(AM_ERR_BAD_ARG, "AMVIA_DumpStatistics", "stats is NULL");
        return text;
    }
    const amvia_stats_t &s = *stats;
    Out o{text, sizeof text - 1};
    o.put("AM statistics (%s, %llu endpoint%s):\n", globalAnalysis ? "global" : "local",
          (unsigned long long)s.Endpoints, s.Endpoints == 1 ? "" : "s");
    o.cats("Requests sent:", s.RequestsSent);
    o.cats("Replies sent:", s.RepliesSent);
    o.cats("Requests received:", s.RequestsReceived);
    o.cats("Replies received:", s.RepliesReceived);
    o.cats("Request data bytes sent:", s.RequestDataBytesSent);
    o.cats("Reply data bytes sent:", s.ReplyDataBytesSent);
    o.cats("Request total bytes sent:", s.RequestTotalBytesSent);
    o.cats("Reply total bytes sent:", s.ReplyTotalBytesSent);
    o.one("Total bytes sent:", s.TotalBytesSent);
    o.one("Returned messages:", s.ReturnedMessages);
    o.one("Credit stalls:", s.CreditStalls);
    o.one("Send slot stalls:", s.SendSlotStalls);
    o.one("Retransmissions:", sum3(s.RequestsRetransmitted) + sum3(s.RepliesRetransmitted));
    o.one("Out-of-order messages:", s.OutOfOrderRequests + s.OutOfOrderReplies);
    const uint64_t msgs = sum3(s.RequestsSent) + sum3(s.RepliesSent);
    const uint64_t data = sum3(s.RequestDataBytesSent) + sum3(s.ReplyDataBytesSent);
    o.put("%-26s %.1f\n", "Average data bytes/msg:", msgs ? double(data) / double(msgs) : 0.0);
    o.put("%-26s %.1f\n", "Average total bytes/msg:", msgs ? double(s.TotalBytesSent) / double(msgs) : 0.0);
    o.put("%-26s %.1f%%\n",
          "Data/total bytes:", s.TotalBytesSent ? 100.0 * double(data) / double(s.TotalBytesSent) : 0.0);
    if (globalAnalysis) {
        // Summed over the whole job, every message sent was received once.
        o.put("%-26s %lld\n", "Unreceived requests:", (long long)(sum3(s.RequestsSent) - sum3(s.RequestsReceived)));
        o.put("%-26s %lld\n", "Unreceived replies:", (long long)(sum3(s.RepliesSent) - sum3(s.RepliesReceived)));
    }
    text[o.len] = '\0';
    if (fp) {
        std::fputs(text, static_cast<FILE *>(fp));
        std::fflush(static_cast<FILE *>(fp));
    }
    return text;
}

void AMVIA_FatalErr(const char *msg, ...) {
    char text[1024];
    va_list ap;
    va_start(ap, msg);
    std::vsnprintf(text, sizeof text, msg ? msg : "(no message)", ap);
    va_end(ap);
    std::fflush(stdout);
    char line[1100];
    std::snprintf(line, sizeof line, "AMVIA_FatalErr: %s", text);
    vipl_boot_abort(1, line); // prints the reason, ends the whole job; never returns
    std::abort();             // (not declared noreturn)
}

} // extern "C"
