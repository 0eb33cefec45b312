// log.cpp - viastack's logging facility on spdlog (viastack_log.hpp,
// docs/logging.md): $VIASTACK_LOG, one logger per layer, the rank prefix,
// one write(2) per line on stderr.
#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <fmt/ranges.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "viastack_log.hpp"

namespace viastack::log {
namespace detail {
std::atomic<unsigned char> threshold[VIASTACK_LOG_NLAYERS] = {};
} // namespace detail

namespace {

constexpr int kLayers = VIASTACK_LOG_NLAYERS;
// Logger names ($VIASTACK_LOG's LAYER=LEVEL) and each layer's established
// tag, the start of its lines ("viastack AM: ...").  The boot layer's lines
// carry their own "vipl_boot[rank R]" tag; the launcher is no rank.
constexpr std::array<const char *, kLayers> kNames = {"vipl", "nicfw",  "verbs", "boot", "launcher",
                                                      "am",   "splitc", "logp",  "fm",   "bip"};
constexpr std::array<const char *, kLayers> kTags = {"viastack",    "viastack nicfw", "vipl verbs", "",
                                                     "vipl-run",    "viastack AM",    "splitc",     "logp",
                                                     "viastack FM", "viastack BIP"};
constexpr std::array<bool, kLayers> kRankPrefix = {true, true, true, false, false, true, true, true, true, true};
constexpr std::array<const char *, 6> kLevels = {"trace", "debug", "info", "warn", "error", "off"};
constexpr Level kDefault = Level::warn;

// stderr, one write(2) per formatted line (retrying EINTR and short writes):
// no stdio buffer to flush, and lines from several processes stay whole.
class StderrLineSink final : public spdlog::sinks::base_sink<std::mutex> {
protected:
    void sink_it_(const spdlog::details::log_msg &msg) override {
        spdlog::memory_buf_t buf;
        formatter_->format(msg, buf);
        const char *p = buf.data();
        size_t n = buf.size();
        while (n > 0) {
            ssize_t w = ::write(STDERR_FILENO, p, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return;
            p += w;
            n -= size_t(w);
        }
    }
    void flush_() override {}
};

spdlog::level::level_enum to_spdlog(Level l) {
    switch (l) {
    case Level::trace: return spdlog::level::trace;
    case Level::debug: return spdlog::level::debug;
    case Level::info: return spdlog::level::info;
    case Level::warn: return spdlog::level::warn;
    case Level::error: return spdlog::level::err;
    case Level::off: break;
    }
    return spdlog::level::off;
}

bool parse_level(std::string s, Level *out) {
    for (auto &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (s == "warning") s = "warn";
    for (size_t i = 0; i < kLevels.size(); ++i)
        if (s == kLevels[i]) {
            *out = Level(i);
            return true;
        }
    return false;
}

bool parse_rank(const char *s, int *out) {
    if (!s || !*s) return false;
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(s, &end, 10);
    if (errno || *end || v < 0 || v > 1 << 24) return false;
    *out = int(v);
    return true;
}

struct State {
    std::mutex mu;
    int rank = -1;
    std::array<Level, kLayers> level{};
    std::array<std::shared_ptr<spdlog::logger>, kLayers> loggers;

    State() {
        level.fill(kDefault);
        std::string problem;
        if (const char *env = std::getenv("VIASTACK_LOG"); env && *env) problem = parse(env);
        parse_rank(std::getenv("VIASTACK_RANK"), &rank);
        for (int i = 0; i < kLayers; ++i) {
            // Not registered with spdlog's registry: a program's own loggers
            // named "am" or "vipl" stay its own.
            loggers[i] = std::make_shared<spdlog::logger>(kNames[i], std::make_shared<StderrLineSink>());
            loggers[i]->set_level(to_spdlog(level[i]));
            loggers[i]->flush_on(spdlog::level::trace);
        }
        set_patterns();
        if (!problem.empty()) loggers[VIASTACK_LOG_VIPL]->log(spdlog::level::err, problem);
        for (int i = 0; i < kLayers; ++i)
            detail::threshold[i].store(static_cast<unsigned char>(level[i]), std::memory_order_relaxed);
    }

    // "warn", "debug,am=trace", "off,boot=error"; returns the complaint, or "".
    std::string parse(const std::string &spec) {
        std::array<Level, kLayers> want;
        want.fill(kDefault);
        size_t pos = 0;
        while (pos <= spec.size()) {
            size_t comma = spec.find(',', pos);
            if (comma == std::string::npos) comma = spec.size();
            std::string item = spec.substr(pos, comma - pos);
            pos = comma + 1;
            if (item.empty()) continue;
            size_t eq = item.find('=');
            Level l;
            if (eq == std::string::npos) {
                if (!parse_level(item, &l)) return complaint(spec, fmt::format("'{}' is not a log level", item));
                want.fill(l);
                continue;
            }
            std::string name = item.substr(0, eq);
            int layer = -1;
            for (int i = 0; i < kLayers; ++i)
                if (name == kNames[i]) layer = i;
            if (layer < 0) return complaint(spec, fmt::format("'{}' is not a layer", name));
            if (!parse_level(item.substr(eq + 1), &l))
                return complaint(spec, fmt::format("'{}' is not a log level", item.substr(eq + 1)));
            want[layer] = l;
        }
        level = want;
        return "";
    }

    static std::string complaint(const std::string &spec, const std::string &why) {
        return fmt::format("VIASTACK_LOG={}: {}; allowed values: off, error, warn, info, debug, trace (default "
                           "warn), optionally per layer as LAYER=LEVEL with LAYER one of {} (e.g. "
                           "VIASTACK_LOG=warn,am=debug); using warn",
                           spec, why, fmt::join(kNames, ", "));
    }

    // Called with mu held (or from the constructor).
    void set_patterns() {
        for (int i = 0; i < kLayers; ++i) {
            std::string pat;
            if (kRankPrefix[i] && rank >= 0) pat += fmt::format("[rank {}] ", rank);
            if (*kTags[i]) pat += fmt::format("{}: ", kTags[i]);
            pat += "%v";
            loggers[i]->set_formatter(
                std::make_unique<spdlog::pattern_formatter>(pat, spdlog::pattern_time_type::local, "\n"));
        }
    }
};

State &state() {
    // Never destroyed: atexit handlers and static destructors may still report.
    static State *s = new State;
    return *s;
}

} // namespace

namespace detail {
void emit(Layer layer, Level level, std::string_view msg) {
    State &s = state();
    const int i = static_cast<int>(layer);
    if (i < 0 || i >= kLayers || level == Level::off || level < s.level[i]) return;
    s.loggers[i]->log(to_spdlog(level), spdlog::string_view_t(msg.data(), msg.size()));
}

void emit_format(Layer layer, Level level, fmt::string_view f, fmt::format_args args) {
    const std::string msg = fmt::vformat(f, args);
    emit(layer, level, msg);
}
} // namespace detail

void vlogf(Layer layer, Level level, const char *fmt, va_list ap) {
    if (!enabled(layer, level)) return;
    char line[2048];
    int n = std::vsnprintf(line, sizeof line, fmt, ap);
    if (n < 0) return;
    size_t len = size_t(n) < sizeof line ? size_t(n) : sizeof line - 1;
    while (len > 0 && line[len - 1] == '\n') --len; // the facility ends the line
    detail::emit(layer, level, std::string_view(line, len));
}

void vlog_failure(Layer layer, const char *verbose_env, const char *fn, const char *code_name, const char *fmt,
                  va_list ap) {
    const char *v = std::getenv(verbose_env);
    if (!v || !std::strcmp(v, "0") || !std::strcmp(v, "no") || !std::strcmp(v, "off") || !std::strcmp(v, "false"))
        return;
    if (!enabled(layer, Level::error)) return;
    char why[1536];
    if (std::vsnprintf(why, sizeof why, fmt, ap) < 0) why[0] = 0;
    detail::emit(layer, Level::error, fmt::format("{} returns {}: {}", fn, code_name, why));
}

void set_rank(int rank) {
    State &s = state();
    std::lock_guard<std::mutex> g(s.mu);
    if (s.rank == rank) return;
    s.rank = rank < 0 ? -1 : rank;
    s.set_patterns();
}

} // namespace viastack::log

extern "C" {
int viastack_log_enabled(int layer, int level) {
    if (layer < 0 || layer >= VIASTACK_LOG_NLAYERS || level < 0 || level >= VIASTACK_LOG_OFF) return 0;
    using namespace viastack::log;
    if (!enabled(Layer(layer), Level(level))) return 0;
    // The first call configures the facility; ask again with the real levels.
    (void)state();
    return enabled(Layer(layer), Level(level));
}

void viastack_log(int layer, int level, const char *fmt, ...) {
    if (!viastack_log_enabled(layer, level)) return;
    va_list ap;
    va_start(ap, fmt);
    viastack::log::vlogf(viastack::log::Layer(layer), viastack::log::Level(level), fmt, ap);
    va_end(ap);
}

void viastack_log_set_rank(int rank) { viastack::log::set_rank(rank); }
}
