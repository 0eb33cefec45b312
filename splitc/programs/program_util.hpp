// program_util.hpp - small helpers shared by the Split-C example programs:
// a counter-based random generator (so any processor can regenerate any other
// processor's data for the sequential checks) and "--name value" options.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace splitc_programs {

// splitmix64 of a key: the same numbers on every processor and every run.
inline uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
inline uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    return mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d);
}
// Uniform double in [0, 1).
inline double unit(uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }

// Options of the form "--name value" (or "--flag"); unknown ones are an error.
class Options {
public:
    Options(int argc, char **argv) : argc_(argc), argv_(argv) {}
    long num(const char *name, long dflt) {
        const char *v = find(name, true);
        if (!v) return dflt;
        char *end = nullptr;
        long x = std::strtol(v, &end, 0);
        if (!end || *end) die(name, v);
        return x;
    }
    double real(const char *name, double dflt) {
        const char *v = find(name, true);
        if (!v) return dflt;
        char *end = nullptr;
        double x = std::strtod(v, &end);
        if (!end || *end) die(name, v);
        return x;
    }
    std::string str(const char *name, const char *dflt) {
        const char *v = find(name, true);
        return v ? v : dflt;
    }
    bool flag(const char *name) { return find(name, false) != nullptr; }
    // After all lookups: any argument not consumed is reported.
    bool all_used(const char *usage) const {
        for (int i = 1; i < argc_; ++i)
            if (!(used_ >> i & 1)) {
                std::fprintf(stderr, "unknown argument '%s'\nusage: %s\n", argv_[i], usage);
                return false;
            }
        return true;
    }

private:
    const char *find(const char *name, bool has_value) {
        for (int i = 1; i < argc_ && i < 63; ++i)
            if (argv_[i][0] == '-' && argv_[i][1] == '-' && std::strcmp(argv_[i] + 2, name) == 0) {
                used_ |= 1ull << i;
                if (!has_value) return argv_[i];
                if (i + 1 >= argc_) die(name, "(missing)");
                used_ |= 1ull << (i + 1);
                return argv_[i + 1];
            }
        return nullptr;
    }
    [[noreturn]] static void die(const char *name, const char *v) {
        std::fprintf(stderr, "bad value for --%s: %s\n", name, v);
        std::exit(2);
    }
    int argc_;
    char **argv_;
    uint64_t used_ = 0;
};

} // namespace splitc_programs
