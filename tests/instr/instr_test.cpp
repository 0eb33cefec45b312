// Unit tests of the instrumentation registry (vipl_instr.h).
// The registry is process-wide, so every test uses counter names of its own.
#include "vipl_instr.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_enabled_at_start = -1; // vipl_instr_enabled() as main() found it

struct InstrOn { // turns the switch on for one test and restores it
    int was = vipl_instr_on;
    InstrOn() { vipl_instr_enable(1); }
    ~InstrOn() { vipl_instr_enable(was); }
};

uint64_t spin_cycles(uint64_t n) {
    uint64_t t0 = vipl_instr_now();
    while (vipl_instr_now() - t0 < n) {}
    return vipl_instr_now() - t0;
}

std::string temp_path(const char *stem) {
    return std::string(::testing::TempDir()) + stem + std::to_string(getpid()) + ".json";
}

TEST(Instr, StartUpSwitchFollowsEnvironment) {
    const char *env = std::getenv("VIASTACK_INSTR");
    int want = (env && *env && std::string(env) != "0") ? 1 : 0;
    EXPECT_EQ(g_enabled_at_start, want) << "VIASTACK_INSTR=" << (env ? env : "(unset)");
}

TEST(Instr, RegistersOnFirstAddOnly) {
    InstrOn on;
    VIPL_INSTR_DEFINE(c, "test.register", VIPL_INSTR_OTHER);
    vipl_instr_sample s;
    EXPECT_EQ(vipl_instr_find("test.register", &s), -1) << "a counter never added to is not listed";
    EXPECT_EQ(c.registered, 0);
    VIPL_INSTR_BEGIN(t);
    VIPL_INSTR_END(c, t);
    EXPECT_EQ(c.registered, 1);
    ASSERT_EQ(vipl_instr_find("test.register", &s), 0);
    EXPECT_STREQ(s.name, "test.register");
    EXPECT_EQ(s.count, 1u);
}

TEST(Instr, CountsIntervalsAndCycles) {
    InstrOn on;
    VIPL_INSTR_DEFINE(c, "test.count", VIPL_INSTR_SEMANTICS);
    uint64_t spent = 0;
    for (int i = 0; i < 10; ++i) {
        VIPL_INSTR_BEGIN(t);
        spent += spin_cycles(2000);
        VIPL_INSTR_END(c, t);
    }
    vipl_instr_sample s;
    ASSERT_EQ(vipl_instr_find("test.count", &s), 0);
    EXPECT_EQ(s.count, 10u);
    EXPECT_GE(s.cycles, 10u * 2000u);
    EXPECT_LE(s.cycles, spent + 10u * 100000u) << "cycles far above the time actually spent";
    EXPECT_NEAR(s.ns, double(s.cycles) / vipl_instr_cycles_per_ns(), 1e-6 * s.ns + 1e-9);
}

TEST(Instr, ScopeMacroTimesTheEnclosingBlock) {
    InstrOn on;
    for (int i = 0; i < 3; ++i) {
        VIPL_INSTR_SCOPE("test.scope", VIPL_INSTR_EVENT);
        spin_cycles(1000);
    }
    vipl_instr_sample s;
    ASSERT_EQ(vipl_instr_find("test.scope", &s), 0);
    EXPECT_EQ(s.count, 3u);
    EXPECT_EQ(s.category, VIPL_INSTR_EVENT);
    EXPECT_GE(s.cycles, 3000u);
}

TEST(Instr, ConcurrentAddsAreNotLost) {
    InstrOn on;
    VIPL_INSTR_DEFINE(c, "test.threads", VIPL_INSTR_OTHER); // static: the lambdas see it uncaptured
    std::vector<std::thread> ts;
    for (int k = 0; k < 4; ++k)
        ts.emplace_back([] {
            for (int i = 0; i < 20000; ++i) vipl_instr_add(&c, 3);
        });
    for (auto &t : ts) t.join();
    vipl_instr_sample s;
    ASSERT_EQ(vipl_instr_find("test.threads", &s), 0);
    EXPECT_EQ(s.count, 80000u);
    EXPECT_EQ(s.cycles, 240000u);
}

TEST(Instr, CategoriesNamedAndSnapshotSorted) {
    EXPECT_STREQ(vipl_instr_category_name(VIPL_INSTR_BASE_VI), "Base VI");
    EXPECT_STREQ(vipl_instr_category_name(VIPL_INSTR_EVENT), "Event Notification");
    EXPECT_STREQ(vipl_instr_category_name(VIPL_INSTR_FLOW_CONTROL), "Flow Control");
    EXPECT_STREQ(vipl_instr_category_name(VIPL_INSTR_SEMANTICS), "Semantics");
    EXPECT_STREQ(vipl_instr_category_name(VIPL_INSTR_FIRMWARE), "Firmware");
    EXPECT_STREQ(vipl_instr_category_name(VIPL_INSTR_OTHER), "Other");
    EXPECT_STREQ(vipl_instr_category_name(99), "Unknown");
    EXPECT_STREQ(vipl_instr_category_name(-1), "Unknown");

    InstrOn on;
    VIPL_INSTR_DEFINE(z, "test.cat.z", VIPL_INSTR_BASE_VI);
    VIPL_INSTR_DEFINE(a, "test.cat.a", VIPL_INSTR_FLOW_CONTROL);
    VIPL_INSTR_DEFINE(b, "test.cat.b", VIPL_INSTR_BASE_VI);
    vipl_instr_add(&z, 1);
    vipl_instr_add(&a, 1);
    vipl_instr_add(&b, 1);
    size_t n = vipl_instr_snapshot(nullptr, 0);
    std::vector<vipl_instr_sample> all(n);
    ASSERT_EQ(vipl_instr_snapshot(all.data(), all.size()), n);
    for (size_t i = 1; i < n; ++i) {
        bool ordered = all[i - 1].category < all[i].category ||
            (all[i - 1].category == all[i].category && std::string(all[i - 1].name) < all[i].name);
        EXPECT_TRUE(ordered) << all[i - 1].name << " before " << all[i].name;
    }
    // A short buffer gets the first entries and the full count back.
    vipl_instr_sample one;
    EXPECT_EQ(vipl_instr_snapshot(&one, 1), n);
    EXPECT_EQ(std::string(one.name), std::string(all[0].name));
}

TEST(Instr, SameNameCountersAreOnePrimitive) {
    InstrOn on;
    VIPL_INSTR_DEFINE(c1, "test.same", VIPL_INSTR_BASE_VI);
    VIPL_INSTR_DEFINE(c2, "test.same", VIPL_INSTR_BASE_VI);
    vipl_instr_add(&c1, 10);
    vipl_instr_add(&c2, 5);
    vipl_instr_add(&c2, 5);
    vipl_instr_sample s;
    ASSERT_EQ(vipl_instr_find("test.same", &s), 0);
    EXPECT_EQ(s.count, 3u);
    EXPECT_EQ(s.cycles, 20u);
    size_t n = vipl_instr_snapshot(nullptr, 0);
    std::vector<vipl_instr_sample> all(n);
    vipl_instr_snapshot(all.data(), n);
    int seen = 0;
    for (auto &x : all) seen += std::string(x.name) == "test.same";
    EXPECT_EQ(seen, 1);
}

TEST(Instr, ResetZeroesEveryCounterButKeepsThemListed) {
    InstrOn on;
    VIPL_INSTR_DEFINE(c, "test.reset", VIPL_INSTR_FLOW_CONTROL);
    vipl_instr_add(&c, 42);
    vipl_instr_reset();
    vipl_instr_sample s;
    ASSERT_EQ(vipl_instr_find("test.reset", &s), 0);
    EXPECT_EQ(s.count, 0u);
    EXPECT_EQ(s.cycles, 0u);
    vipl_instr_add(&c, 7);
    ASSERT_EQ(vipl_instr_find("test.reset", &s), 0);
    EXPECT_EQ(s.count, 1u);
    EXPECT_EQ(s.cycles, 7u);
}

TEST(Instr, DisabledCountsNothing) {
    int was = vipl_instr_on;
    vipl_instr_enable(0);
    EXPECT_FALSE(vipl_instr_enabled());
    VIPL_INSTR_DEFINE(c, "test.disabled", VIPL_INSTR_OTHER);
    for (int i = 0; i < 5; ++i) {
        VIPL_INSTR_BEGIN(t);
        VIPL_INSTR_END(c, t);
        VIPL_INSTR_SCOPE("test.disabled.scope", VIPL_INSTR_OTHER);
    }
    EXPECT_EQ(c.count, 0u);
    EXPECT_EQ(vipl_instr_find("test.disabled", nullptr), -1);
    EXPECT_EQ(vipl_instr_find("test.disabled.scope", nullptr), -1);
    vipl_instr_enable(was);
}

TEST(Instr, FindRejectsUnknownAndNull) {
    vipl_instr_sample s;
    EXPECT_EQ(vipl_instr_find("no.such.counter", &s), -1);
    EXPECT_EQ(vipl_instr_find(nullptr, &s), -1);
}

TEST(Instr, CalibratedRateIsPlausibleAndStable) {
    double r = vipl_instr_cycles_per_ns();
    EXPECT_GT(r, 0.05); // 50 MHz: below any x86 TSC or arm counter we run on
    EXPECT_LT(r, 10.0);
    EXPECT_EQ(r, vipl_instr_cycles_per_ns()) << "calibrated once, then constant";
    // Cross-check against the monotonic clock over 20 ms: within 5%.
    timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t c0 = vipl_instr_now();
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < 20e6);
    uint64_t c1 = vipl_instr_now();
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    EXPECT_NEAR(double(c1 - c0) / ns, r, 0.05 * r);
}

TEST(Instr, JsonRoundTrip) {
    InstrOn on;
    VIPL_INSTR_DEFINE(c, "test.json", VIPL_INSTR_SEMANTICS);
    vipl_instr_add(&c, 1000);
    vipl_instr_add(&c, 3000);
    std::string path = temp_path("instr_rt");
    ASSERT_EQ(vipl_instr_dump_json(path.c_str()), 0);
    std::ifstream in(path);
    nlohmann::json doc = nlohmann::json::parse(in);
    std::remove(path.c_str());
    ASSERT_TRUE(doc.contains("tsc_ghz"));
    ASSERT_TRUE(doc.contains("rank"));
    ASSERT_TRUE(doc["counters"].is_array());
    EXPECT_DOUBLE_EQ(doc["tsc_ghz"].get<double>(), vipl_instr_cycles_per_ns());
    size_t n = vipl_instr_snapshot(nullptr, 0);
    std::vector<vipl_instr_sample> all(n);
    vipl_instr_snapshot(all.data(), n);
    ASSERT_EQ(doc["counters"].size(), n) << "the dump lists exactly the snapshot";
    bool found = false;
    for (size_t i = 0; i < n; ++i) {
        const auto &j = doc["counters"][i];
        for (const char *key : {"name", "category", "count", "cycles", "ns_total", "ns_mean"})
            ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_EQ(j["name"].get<std::string>(), all[i].name);
        EXPECT_EQ(j["category"].get<std::string>(), vipl_instr_category_name(all[i].category));
        EXPECT_EQ(j["count"].get<uint64_t>(), all[i].count);
        EXPECT_EQ(j["cycles"].get<uint64_t>(), all[i].cycles);
        if (all[i].name == std::string("test.json")) {
            found = true;
            EXPECT_EQ(j["count"].get<uint64_t>(), 2u);
            EXPECT_EQ(j["cycles"].get<uint64_t>(), 4000u);
            EXPECT_NEAR(j["ns_total"].get<double>(), 4000.0 / vipl_instr_cycles_per_ns(), 1e-6);
            EXPECT_NEAR(j["ns_mean"].get<double>(), 2000.0 / vipl_instr_cycles_per_ns(), 1e-6);
        }
    }
    EXPECT_TRUE(found);
}

TEST(Instr, DumpToUnwritablePathFails) {
    EXPECT_NE(vipl_instr_dump_json("/proc/no-such-dir/x.json"), 0);
    EXPECT_NE(vipl_instr_dump_json(""), 0);
    EXPECT_NE(vipl_instr_dump_json(nullptr), 0);
}

TEST(Instr, PrintTableGroupsByCategory) {
    InstrOn on;
    VIPL_INSTR_DEFINE(a, "test.table.base", VIPL_INSTR_BASE_VI);
    VIPL_INSTR_DEFINE(b, "test.table.event", VIPL_INSTR_EVENT);
    vipl_instr_add(&a, 100);
    vipl_instr_add(&b, 300);
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vipl_instr_print_table(f);
    fclose(f);
    std::string text(buf, len);
    free(buf);
    size_t base = text.find("Base VI");
    size_t event = text.find("Event Notification");
    ASSERT_NE(base, std::string::npos) << text;
    ASSERT_NE(event, std::string::npos) << text;
    EXPECT_LT(base, event);
    size_t pa = text.find("test.table.base"), pb = text.find("test.table.event");
    EXPECT_TRUE(base < pa && pa < event && event < pb) << text;
    vipl_instr_print_table(nullptr); // must not crash
}

// The exit-time dump needs a fresh process: the switch and the atexit hook are
// set by a static initializer from the environment it starts with.
TEST(Instr, DumpAtExitExpandsRank) {
    std::string pattern = std::string(::testing::TempDir()) + "instr_exit_%r_" + std::to_string(getpid()) + ".json";
    std::string expect = std::string(::testing::TempDir()) + "instr_exit_7_" + std::to_string(getpid()) + ".json";
    std::remove(expect.c_str());
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        setenv("VIASTACK_INSTR", "1", 1);
        setenv("VIASTACK_INSTR_DUMP", pattern.c_str(), 1);
        setenv("VIASTACK_RANK", "7", 1);
        execl("/proc/self/exe", "instr_test", "--child-dump", (char *)nullptr);
        _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    std::ifstream in(expect);
    ASSERT_TRUE(in.good()) << "no dump at " << expect;
    nlohmann::json doc = nlohmann::json::parse(in);
    std::remove(expect.c_str());
    EXPECT_EQ(doc["rank"].get<int>(), 7);
    bool found = false;
    for (auto &j : doc["counters"])
        if (j["name"] == "child.work") {
            found = true;
            EXPECT_EQ(j["count"].get<uint64_t>(), 4u);
        }
    EXPECT_TRUE(found) << doc.dump();
}

} // namespace

int main(int argc, char **argv) {
    g_enabled_at_start = vipl_instr_enabled();
    if (argc > 1 && std::string(argv[1]) == "--child-dump") {
        // Child of DumpAtExitExpandsRank: the switch must already be on.
        if (!vipl_instr_enabled()) return 3;
        for (int i = 0; i < 4; ++i) { VIPL_INSTR_SCOPE("child.work", VIPL_INSTR_SEMANTICS); }
        return 0; // the atexit hook writes the dump
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

// Waiting is not overhead: a Done call that finds nothing is all waiting; one
// whose completion arrived during the call waited until the host's check that
// saw it began; one whose completion had arrived before it began waited not at
// all.  Every timed interval - also one enclosing the call - leaves the waits out.
TEST(InstrWait, SplitsACallAtTheCheckThatSawTheArrival) {
    InstrOn on;
    VIPL_INSTR_DEFINE(outer, "test.wait.outer", VIPL_INSTR_OTHER);
    int key_found = 0, key_early = 0;
    const uint64_t waited0 = vipl_instr_waited;
    vipl_instr_sample w0{};
    const bool had = vipl_instr_find("vipl.wait (not arrived)", &w0) == 0;

    VIPL_INSTR_BEGIN(to);
    // 1. nothing found: the whole call (>= 20000 cycles) is waiting.
    VIPL_INSTR_BEGIN(t1);
    spin_cycles(20000);
    VIPL_INSTR_WAITED(t1, nullptr, 0);
    const uint64_t w1 = vipl_instr_waited - waited0;
    EXPECT_GE(w1, 20000u);
    // 2. found, arrived 10000 cycles into the call, seen by a check 15000 in:
    //    exactly 15000 cycles of waiting.
    VIPL_INSTR_BEGIN(t2);
    const uint64_t start2 = t2 + vipl_instr_waited;
    spin_cycles(30000);
    vipl_instr_arrived(&key_found, start2 + 10000, start2 + 15000);
    VIPL_INSTR_WAITED(t2, &key_found, 1);
    EXPECT_EQ(vipl_instr_waited - waited0 - w1, 15000u);
    // 3. found, arrived before the call began: no waiting.
    VIPL_INSTR_BEGIN(t3);
    const uint64_t start3 = t3 + vipl_instr_waited;
    vipl_instr_arrived(&key_early, start3 - 5000, start3 - 4000);
    spin_cycles(5000);
    VIPL_INSTR_WAITED(t3, &key_early, 1);
    EXPECT_EQ(vipl_instr_waited - waited0 - w1, 15000u);
    // The arrivals were taken: found again, nothing to take.
    uint64_t at, seen;
    EXPECT_EQ(vipl_instr_take_arrival(&key_found, &at, &seen), 0);
    EXPECT_EQ(vipl_instr_take_arrival(&key_early, &at, &seen), 0);
    VIPL_INSTR_END(outer, to);

    const uint64_t waited = vipl_instr_waited - waited0;
    vipl_instr_sample w{}, o{};
    ASSERT_EQ(vipl_instr_find("vipl.wait (not arrived)", &w), 0);
    ASSERT_EQ(vipl_instr_find("test.wait.outer", &o), 0);
    EXPECT_EQ(w.category, VIPL_INSTR_WAIT);
    EXPECT_EQ(w.cycles - (had ? w0.cycles : 0), waited);
    // The enclosing interval spun >= 55000 cycles, of which `waited` were waits
    // (added on this side: a preemption in step 1's spin makes `waited` the
    // larger, and 55000 - waited would wrap).
    EXPECT_GE(o.cycles + waited, 55000u);
    EXPECT_LT(o.cycles + waited, 55000u + 50000000u); // the waits are not in it
    EXPECT_STREQ(vipl_instr_category_name(VIPL_INSTR_WAIT), "Waiting");
}

// NIC work is not host overhead (vipl_instr.h, "NIC work"): an offload
// section is left off the overhead clock, counted on its Firmware counter,
// and counted once when nested.
TEST(InstrOffload, ASectionIsOffTheOverheadClockAndOnItsCounter) {
    InstrOn on;
    VIPL_INSTR_DEFINE(outer, "test.offload.outer", VIPL_INSTR_BASE_VI);
    vipl_instr_sample n0{}, w0{};
    const bool had_n = vipl_instr_find("vipl.nic work (inline firmware)", &n0) == 0;
    const bool had_w = vipl_instr_find("vipl.wait (not arrived)", &w0) == 0;
    const uint64_t off0 = vipl_instr_offloaded, waited0 = vipl_instr_waited;

    const uint64_t a = vipl_instr_now();
    VIPL_INSTR_BEGIN(t);
    spin_cycles(20000);
    vipl_instr_offload_begin();
    spin_cycles(20000);
    vipl_instr_offload_begin(); // nested: counted once, by the outermost
    spin_cycles(20000);
    vipl_instr_offload_end();
    spin_cycles(20000);
    vipl_instr_offload_end();
    spin_cycles(10000);
    VIPL_INSTR_END(outer, t);
    const uint64_t wall = vipl_instr_now() - a;

    const uint64_t off = vipl_instr_offloaded - off0;
    EXPECT_GE(off, 60000u);
    EXPECT_LE(off, wall - 30000);
    EXPECT_EQ(vipl_instr_waited - waited0, off); // the overhead clock left it out
    vipl_instr_sample o{}, n{}, w{};
    ASSERT_EQ(vipl_instr_find("test.offload.outer", &o), 0);
    ASSERT_EQ(vipl_instr_find("vipl.nic work (inline firmware)", &n), 0);
    EXPECT_EQ(n.category, VIPL_INSTR_FIRMWARE);
    EXPECT_EQ(n.cycles - (had_n ? n0.cycles : 0), off);
    EXPECT_EQ(n.count - (had_n ? n0.count : 0), 1u);
    EXPECT_GE(o.cycles, 30000u);
    EXPECT_LE(o.cycles + off, wall);                           // the section is not in the interval
    if (vipl_instr_find("vipl.wait (not arrived)", &w) == 0) { // not a wait
        EXPECT_EQ(w.cycles, had_w ? w0.cycles : 0u);
    }
    // Ending a section never begun changes nothing.
    vipl_instr_offload_end();
    EXPECT_EQ(vipl_instr_offloaded - off0, off);
}

// A Done call that runs NIC work (the inline firmware) before its check: the
// NIC work is neither overhead nor waiting; the wait is what the call spent
// before the NIC work that made the completion visible, and only that.
TEST(InstrOffload, ACallsNicWorkIsNotDeclaredAsItsWait) {
    InstrOn on;
    int key = 0;
    // 1. Nothing found: the call waited for all of it but its NIC work.
    {
        const uint64_t w0 = vipl_instr_waited, off0 = vipl_instr_offloaded;
        const uint64_t a = vipl_instr_now();
        VIPL_INSTR_CALL_BEGIN(t);
        spin_cycles(20000);
        vipl_instr_offload_begin();
        spin_cycles(30000);
        vipl_instr_offload_end();
        VIPL_INSTR_CALL_WAITED(t, nullptr, 0);
        const uint64_t wall = vipl_instr_now() - a;
        const uint64_t off = vipl_instr_offloaded - off0, waited = vipl_instr_waited - w0 - off;
        EXPECT_GE(off, 30000u);
        EXPECT_GE(waited, 20000u);
        EXPECT_LE(waited + off, wall);
    }
    // 2. Found: it arrived inside the NIC work, which saw it (a packet the
    //    inline firmware processed); the check after the work found it.
    {
        const uint64_t w0 = vipl_instr_waited, off0 = vipl_instr_offloaded;
        VIPL_INSTR_CALL_BEGIN(t);
        const uint64_t start = t + vipl_instr_waited;
        spin_cycles(20000);
        const uint64_t b0 = vipl_instr_now();
        vipl_instr_offload_begin();
        const uint64_t b1 = vipl_instr_now();
        spin_cycles(10000);
        const uint64_t seen = vipl_instr_now();
        vipl_instr_arrived(&key, seen - 1000, seen);
        spin_cycles(10000);
        vipl_instr_offload_end();
        spin_cycles(3000); // the check
        VIPL_INSTR_CALL_WAITED(t, &key, 1);
        const uint64_t off = vipl_instr_offloaded - off0, waited = vipl_instr_waited - w0 - off;
        // The wait ends where the NIC work began.
        EXPECT_GE(waited, b0 - start);
        EXPECT_LE(waited, b1 - start);
        EXPECT_GE(off, 20000u);
    }
    // 3. Found, but it had arrived before the call: no wait, only NIC work.
    {
        const uint64_t w0 = vipl_instr_waited, off0 = vipl_instr_offloaded;
        VIPL_INSTR_CALL_BEGIN(t);
        const uint64_t start = t + vipl_instr_waited;
        vipl_instr_arrived(&key, start - 5000, start - 4000);
        vipl_instr_offload_begin();
        spin_cycles(10000);
        vipl_instr_offload_end();
        VIPL_INSTR_CALL_WAITED(t, &key, 1);
        EXPECT_EQ(vipl_instr_waited - w0, vipl_instr_offloaded - off0);
    }
}
