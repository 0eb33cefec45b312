// am_call_errors.cpp - the error reports of a refused request or reply: the
// exact call spelled out (name, endpoint or token, handler, sizes) and why it
// was refused, with the fix.  Never on the hot path.
#include <cstdarg>
#include <cstdio>

#include "am_internal.hpp"

namespace amvia {

// "AM_RequestXferAsync2(ep 0x.., dest 3, dest_offset 64, handler 7, source_addr 0x.., nbytes 10)"
static void describe(const CallDesc &d, char *out, size_t len) {
    static const char *const req[] = {"AM_Request", "AM_RequestI", "AM_RequestXfer"};
    static const char *const rep[] = {"AM_Reply", "AM_ReplyI", "AM_ReplyXfer"};
    const char *base = d.request ? req[d.cat] : rep[d.cat];
    const char *async = d.async ? "Async" : "";
    int n;
    if (d.request) n = std::snprintf(out, len, "%s%s%d(ep %p, dest %d", base, async, d.nargs, (void *)d.ep, d.dest);
    else n = std::snprintf(out, len, "%s%d(token %p", base, d.nargs, d.token);
    if (n < 0 || size_t(n) >= len) return;
    if (d.cat == kLong) n += std::snprintf(out + n, len - size_t(n), ", dest_offset %lu", (unsigned long)d.off);
    if (size_t(n) >= len) return;
    n += std::snprintf(out + n, len - size_t(n), ", handler %u", unsigned(d.h));
    if (size_t(n) >= len) return;
    if (d.cat != kShort) std::snprintf(out + n, len - size_t(n), ", source_addr %p, nbytes %zu)", d.src, d.nbytes);
    else std::snprintf(out + n, len - size_t(n), ")");
}

int fail_call(int rc, const CallDesc &d, const char *fmt, ...) {
    if (!AMVIA_VerboseErrors) return rc;
    char call[256], why[512];
    describe(d, call, sizeof call);
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return fail(rc, call, "%s", why);
}

// Why the arguments of a request or reply are refused, with the fix; null if they are fine.
const char *bad_args(const CallDesc &d, char *buf, size_t len) {
    if (unsigned(d.nargs) > AMVIA_MAX_SHORT) return "more than AM_MaxShort() = 16 handler arguments";
    if (d.h == 0) return "handler 0 is the returned-message handler; use a handler index 1..255";
    if (d.cat == kMedium && d.nbytes > AMVIA_MAX_MEDIUM) {
        std::snprintf(buf, len,
                      "nbytes exceeds AM_MaxMedium() = %d; move larger data with "
                      "AM_RequestXfer into the peer's segment",
                      AMVIA_MAX_MEDIUM);
        return buf;
    }
    if (d.cat == kLong && d.nbytes > AMVIA_MAX_LONG) {
        std::snprintf(buf, len,
                      "nbytes exceeds AM_MaxLong() = %d; split the transfer into "
                      "several long messages",
                      AMVIA_MAX_LONG);
        return buf;
    }
    if (d.nbytes && !d.src) return "source_addr is NULL with nbytes > 0";
    return nullptr;
}

} // namespace amvia
