// viastack_env.hpp - reading the environment variables that configure every
// layer (VIASTACK_*, VIPL_*, SPLITC_*), written once for all of them.
//
// Each reader returns the default when the variable is unset or empty.  A set
// but malformed value is reported once through the logging facility, naming
// the variable, what was expected and the value used instead, and the default
// is used: a typo never aborts a job and never goes unnoticed.  Callers that
// must refuse a bad value (nicfw's profile strings) use raw() and say why.
// Only start-up paths read the environment: nothing here is on a hot path.
#pragma once

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

#include "viastack_log.hpp"

namespace viastack::env {

// The value, or nullptr when unset or empty.
inline const char *raw(const char *name) {
    const char *v = std::getenv(name);
    return v && *v ? v : nullptr;
}

inline std::string str(const char *name, std::string_view dflt) {
    const char *v = raw(name);
    return v ? std::string(v) : std::string(dflt);
}

// Set and not "0", "no", "off" or "false".
inline bool flag(const char *name, bool dflt = false) {
    const char *v = raw(name);
    if (!v) return dflt;
    return std::strcmp(v, "0") && std::strcmp(v, "no") && std::strcmp(v, "off") && std::strcmp(v, "false");
}

// A decimal integer in [lo, hi].
inline long integer(log::Layer layer, const char *name, long dflt, long lo, long hi) {
    const char *v = raw(name);
    if (!v) return dflt;
    char *end = nullptr;
    long x = std::strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) {
        log::warn(layer, "ignoring {}={} (expected an integer in [{}, {}]); using {}", name, v, lo, hi, dflt);
        return dflt;
    }
    return x;
}

// A byte count: decimal, 0x hex or 0 octal, with an optional K, M or G suffix.
inline size_t bytes(log::Layer layer, const char *name, size_t dflt) {
    const char *v = raw(name);
    if (!v) return dflt;
    char *end = nullptr;
    unsigned long long x = std::strtoull(v, &end, 0);
    int shift = 0;
    if (end != v && *end && !end[1]) {
        switch (*end) {
        case 'k':
        case 'K': shift = 10; break;
        case 'm':
        case 'M': shift = 20; break;
        case 'g':
        case 'G': shift = 30; break;
        default: shift = -1;
        }
    } else if (end == v || *end) {
        shift = -1;
    }
    if (shift < 0 || (shift && x > (~0ull >> shift))) {
        log::warn(layer, "ignoring {}={} (expected a byte count with an optional K, M or G suffix); using {}", name, v,
                  dflt);
        return dflt;
    }
    return size_t(x << shift);
}

// One of the given words; returns its index, or dflt_index when unset or bad.
inline int choice(log::Layer layer, const char *name, std::initializer_list<const char *> words, int dflt_index) {
    const char *v = raw(name);
    if (!v) return dflt_index;
    int i = 0;
    std::string allowed;
    for (const char *w : words) {
        if (!std::strcmp(v, w)) return i;
        allowed += allowed.empty() ? "" : "|";
        allowed += w;
        i++;
    }
    log::warn(layer, "ignoring {}={} (expected {}); using {}", name, v, allowed, words.begin()[dflt_index]);
    return dflt_index;
}

} // namespace viastack::env
