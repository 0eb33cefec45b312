// viastack_log.hpp - viastack's one logging facility (docs/logging.md), for
// the C++ sources of every layer.  Built on spdlog (vipl/log/log.cpp):
//   - levels from $VIASTACK_LOG: off|error|warn|info|debug|trace (default
//     warn), optionally per layer ("warn,am=debug"); a bad value is reported
//     naming the variable and the allowed values, and warn is used;
//   - one spdlog logger per layer: vipl, nicfw, verbs, boot, launcher, am,
//     splitc, logp; each line keeps the layer's established tag
//     ("viastack AM: ...", "vipl-run: ...");
//   - "[rank R] " before the line once the job rank is known ($VIASTACK_RANK,
//     or the boot layer's rank via set_rank);
//   - stderr, one write(2) per line: the lines of several ranks sharing a
//     terminal or a pipe do not interleave, and nothing is buffered.
// Only error and slow paths log.  A disabled level costs one load and one
// branch (enabled()); the message is formatted only when it is printed.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdarg>
#include <string_view>
#include <utility>

#include "viastack_log.h"

namespace viastack::log {

enum class Layer : unsigned char {
    vipl = VIASTACK_LOG_VIPL,
    nicfw = VIASTACK_LOG_NICFW,
    verbs = VIASTACK_LOG_VERBS,
    boot = VIASTACK_LOG_BOOT,
    launcher = VIASTACK_LOG_LAUNCHER,
    am = VIASTACK_LOG_AM,
    splitc = VIASTACK_LOG_SPLITC,
    logp = VIASTACK_LOG_LOGP,
    fm = VIASTACK_LOG_FM,
    bip = VIASTACK_LOG_BIP,
};
enum class Level : unsigned char {
    trace = VIASTACK_LOG_TRACE,
    debug = VIASTACK_LOG_DEBUG,
    info = VIASTACK_LOG_INFO,
    warn = VIASTACK_LOG_WARN,
    error = VIASTACK_LOG_ERROR,
    off = VIASTACK_LOG_OFF,
};

namespace detail {
// Lowest printed level per layer.  Zero (trace) until the first message: that
// message takes the slow path, which reads $VIASTACK_LOG and sets the real
// thresholds, so the fast path needs no "initialised?" test.
extern std::atomic<unsigned char> threshold[VIASTACK_LOG_NLAYERS];
// Slow path: configures on first use, re-checks the level, prints one line.
void emit(Layer layer, Level level, std::string_view msg);
// The same, formatting inside libvipl (so libam/libsplitc need no libfmt).
void emit_format(Layer layer, Level level, fmt::string_view f, fmt::format_args args);
} // namespace detail

inline bool enabled(Layer layer, Level level) {
    return static_cast<unsigned char>(level) >=
        detail::threshold[static_cast<unsigned>(layer)].load(std::memory_order_relaxed);
}

template <typename... A>
inline void log(Layer layer, Level level, fmt::format_string<A...> f, A &&...a) {
    if (enabled(layer, level)) [[unlikely]]
        detail::emit_format(layer, level, f, fmt::make_format_args(a...));
}
template <typename... A>
inline void error(Layer layer, fmt::format_string<A...> f, A &&...a) {
    log(layer, Level::error, f, std::forward<A>(a)...);
}
template <typename... A>
inline void warn(Layer layer, fmt::format_string<A...> f, A &&...a) {
    log(layer, Level::warn, f, std::forward<A>(a)...);
}
template <typename... A>
inline void info(Layer layer, fmt::format_string<A...> f, A &&...a) {
    log(layer, Level::info, f, std::forward<A>(a)...);
}
template <typename... A>
inline void debug(Layer layer, fmt::format_string<A...> f, A &&...a) {
    log(layer, Level::debug, f, std::forward<A>(a)...);
}

// printf-style, for code that already builds its text that way (am's report()).
void vlogf(Layer layer, Level level, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

// A failing call's reason, "FN returns CODE: reason" at level error, printed
// only when the environment variable `verbose_env` is set (VIASTACK_FM_VERBOSE,
// VIASTACK_BIP_VERBOSE: layers whose calls return codes and say why on request).
void vlog_failure(Layer layer, const char *verbose_env, const char *fn, const char *code_name, const char *fmt,
                  va_list ap) __attribute__((format(printf, 5, 0)));

// The job rank for the "[rank R] " prefix; -1 removes it.
void set_rank(int rank);

} // namespace viastack::log
