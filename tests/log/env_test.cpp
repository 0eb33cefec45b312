// env_test.cpp - viastack_env.hpp, the one reader of configuration variables:
// defaults when unset or empty, every accepted form, and a bad value falling
// back to the default (the warning itself is checked by the log tests' style
// of PASS_REGULAR_EXPRESSION in CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>

#include "viastack_env.hpp"

namespace {
using viastack::log::Layer;
namespace env = viastack::env;

struct Var {
    const char *name;
    Var(const char *n, const char *v) : name(n) { v ? setenv(n, v, 1) : unsetenv(n); }
    ~Var() { unsetenv(name); }
};

TEST(Env, UnsetAndEmptyGiveTheDefault) {
    Var a("VIASTACK_TEST_ENV", nullptr);
    EXPECT_EQ(env::raw("VIASTACK_TEST_ENV"), nullptr);
    EXPECT_EQ(env::integer(Layer::vipl, "VIASTACK_TEST_ENV", 7, 0, 10), 7);
    EXPECT_EQ(env::bytes(Layer::vipl, "VIASTACK_TEST_ENV", 4096), 4096u);
    EXPECT_EQ(env::str("VIASTACK_TEST_ENV", "x"), "x");
    Var b("VIASTACK_TEST_ENV", "");
    EXPECT_EQ(env::raw("VIASTACK_TEST_ENV"), nullptr);
    EXPECT_FALSE(env::flag("VIASTACK_TEST_ENV"));
    EXPECT_TRUE(env::flag("VIASTACK_TEST_ENV", true));
}

TEST(Env, Integers) {
    Var a("VIASTACK_TEST_ENV", "9");
    EXPECT_EQ(env::integer(Layer::vipl, "VIASTACK_TEST_ENV", 7, 0, 10), 9);
    EXPECT_EQ(env::integer(Layer::vipl, "VIASTACK_TEST_ENV", 7, 0, 8), 7); // out of range
    Var b("VIASTACK_TEST_ENV", "9x");
    EXPECT_EQ(env::integer(Layer::vipl, "VIASTACK_TEST_ENV", 7, 0, 10), 7);
    Var c("VIASTACK_TEST_ENV", "-3");
    EXPECT_EQ(env::integer(Layer::vipl, "VIASTACK_TEST_ENV", 7, -5, 10), -3);
}

TEST(Env, ByteCounts) {
    const struct {
        const char *v;
        size_t want;
    } cases[] = {{"4096", 4096}, {"64k", 65536}, {"64K", 65536}, {"3M", 3u << 20}, {"2G", size_t(2) << 30},
                 {"0x100", 256}, {"12q", 1},     {"k", 1},       {"1KB", 1},       {"99999999999999999999G", 1}};
    for (auto &c : cases) {
        Var a("VIASTACK_TEST_ENV", c.v);
        EXPECT_EQ(env::bytes(Layer::vipl, "VIASTACK_TEST_ENV", 1), c.want) << c.v;
    }
}

TEST(Env, FlagsAndChoices) {
    for (const char *off : {"0", "no", "off", "false"}) {
        Var a("VIASTACK_TEST_ENV", off);
        EXPECT_FALSE(env::flag("VIASTACK_TEST_ENV", true)) << off;
    }
    Var a("VIASTACK_TEST_ENV", "1");
    EXPECT_TRUE(env::flag("VIASTACK_TEST_ENV"));
    Var b("VIASTACK_TEST_ENV", "yield");
    EXPECT_EQ(env::choice(Layer::vipl, "VIASTACK_TEST_ENV", {"spin", "yield", "block"}, 0), 1);
    Var c("VIASTACK_TEST_ENV", "sleep");
    EXPECT_EQ(env::choice(Layer::vipl, "VIASTACK_TEST_ENV", {"spin", "yield", "block"}, 2), 2);
}

} // namespace
