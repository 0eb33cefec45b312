// rt_error.cpp - error reporting.  Usage errors go to a handler that may
// return (the operation is then skipped); network and start-up failures end
// the job after the handler ran, since the runtime cannot continue.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rt_internal.hpp"
#include "viastack_log.hpp"
#include "vipl_boot.h"

namespace {

splitc_error_handler_t g_handler = nullptr;
void *g_handler_ctx = nullptr;
splitc_error_t g_last = SPLITC_OK;

[[noreturn]] void abort_job(splitc_error_t code, const char *msg) {
    std::fflush(stdout);
    // msg starts with "splitc: " (the handler's text); the splitc logger adds it.
    const char *text = std::strncmp(msg, "splitc: ", 8) == 0 ? msg + 8 : msg;
    viastack::log::error(viastack::log::Layer::splitc, "{}", text);
    std::fflush(stderr);
    vipl_boot_abort(70 + int(code), msg);
    std::_Exit(70 + int(code)); // vipl_boot_abort does not return; belt and braces
}

} // namespace

namespace splitc::rt {

void report(splitc_error_t code, const char *fmt, ...) {
    char msg[768];
    int n = std::snprintf(msg, sizeof msg, "splitc: processor %d: %s: ", g.me, splitc_error_string(code));
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && size_t(n) < sizeof msg) std::vsnprintf(msg + n, sizeof msg - size_t(n), fmt, ap);
    va_end(ap);
    g_last = code;
    bool fatal = code == SPLITC_ERR_NETWORK;
    if (g_handler) {
        g_handler(code, msg, g_handler_ctx);
        if (!fatal) return;
    }
    abort_job(code, msg);
}

void fatal_vip(const char *what, VIP_RETURN rc) {
    report(SPLITC_ERR_NETWORK, "%s failed: %s", what, VipxReturnString(rc));
    std::_Exit(70 + int(SPLITC_ERR_NETWORK));
}

} // namespace splitc::rt

extern "C" {

splitc_error_handler_t splitc_set_error_handler(splitc_error_handler_t h, void *ctx) {
    splitc_error_handler_t old = g_handler;
    g_handler = h;
    g_handler_ctx = ctx;
    return old;
}

splitc_error_t splitc_take_last_error(void) {
    splitc_error_t e = g_last;
    g_last = SPLITC_OK;
    return e;
}

// For rt_main.c (C, linked against libsplitc only): one error line through
// the splitc logger (vipl/log, $VIASTACK_LOG).  Not in splitc_rt.h.
void splitc_rt_log_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    viastack::log::vlogf(viastack::log::Layer::splitc, viastack::log::Level::error, fmt, ap);
    va_end(ap);
}

void splitc_report_error(splitc_error_t code, const char *message) {
    // A C caller may pass any int; a value outside the enumeration is not a
    // splitc_error_t to C++ code (the handler's, ours), so it is read as an
    // int and reported as a bad argument naming the value.
    int raw;
    std::memcpy(&raw, &code, sizeof raw);
    if (raw < int(SPLITC_OK) || raw > int(SPLITC_ERR_INIT)) {
        splitc::rt::report(SPLITC_ERR_BAD_ARGUMENT,
                           "splitc_report_error: %d is not a splitc_error_t code (message: %s)", raw,
                           message ? message : "(no message)");
        return;
    }
    splitc::rt::report(code, "%s", message ? message : "(no message)");
}

const char *splitc_error_string(splitc_error_t code) {
    switch (code) {
    case SPLITC_OK: return "no error";
    case SPLITC_ERR_NULL_POINTER: return "null pointer";
    case SPLITC_ERR_BAD_PROC: return "processor out of range";
    case SPLITC_ERR_MISALIGNED: return "misaligned address";
    case SPLITC_ERR_OUT_OF_SEGMENT: return "address outside the global segment";
    case SPLITC_ERR_BAD_ARGUMENT: return "bad argument";
    case SPLITC_ERR_NOT_INITIALIZED: return "runtime not initialized";
    case SPLITC_ERR_NO_MEMORY: return "symmetric heap exhausted";
    case SPLITC_ERR_COLLECTIVE_MISMATCH: return "collective arguments differ between processors";
    case SPLITC_ERR_NETWORK: return "network failure";
    case SPLITC_ERR_INIT: return "start-up failed";
    }
    return "unknown error";
}

} // extern "C"
