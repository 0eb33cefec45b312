// test_runtime_ext.cpp - PROCSLOG, and the inline local fast paths of the
// scalar operations: they must behave exactly like the out-of-line ones
// (every bad pointer still reported, even when it names this processor), and
// local stores are counted by store_sync and all_store_sync.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "splitc/splitc.hpp"

using namespace splitc;

namespace {

TEST(Procs, ProcslogIsLog2OrMinusOne) {
    int p = procs(), log = 0;
    while ((1 << log) < p) ++log;
    EXPECT_EQ(procslog(), (1 << log) == p ? log : -1) << "PROCS=" << p;
    EXPECT_EQ(splitc_rt_procslog, procslog());
    EXPECT_EQ(splitc_rt_fast_proc, myproc());
}

TEST(LocalFastPath, EverySizeReadsAndWritesLocally) {
    spread_ptr<uint64_t> cells = all_spread_malloc<uint64_t>(size_t(procs()), 4);
    uint64_t *mine = cells.local();
    splitc_gptr_t g = splitc_toglobal(myproc(), mine);
    splitc_write_8(g, 0x1122334455667788ull);
    EXPECT_EQ(splitc_read_8(g), 0x1122334455667788ull);
    EXPECT_EQ(splitc_read_4(g), 0x55667788u);
    EXPECT_EQ(splitc_read_2(splitc_gptr_add(g, 2)), 0x5566u);
    EXPECT_EQ(splitc_read_1(splitc_gptr_add(g, 7)), 0x11u);
    splitc_put_2(splitc_gptr_add(g, 8), 0xbeef);
    splitc_put_f(splitc_gptr_add(g, 12), 1.5f);
    splitc_write_d(splitc_gptr_add(g, 16), -2.25);
    float f = 0;
    splitc_get_4(&f, splitc_gptr_add(g, 12));
    splitc_sync();
    EXPECT_EQ(f, 1.5f);
    EXPECT_EQ(splitc_read_2(splitc_gptr_add(g, 8)), 0xbeef);
    EXPECT_EQ(splitc_read_d(splitc_gptr_add(g, 16)), -2.25);
    barrier();
    all_spread_free(cells);
}

TEST(LocalFastPath, LocalStoresAreCounted) {
    spread_ptr<uint32_t> cells = all_spread_malloc<uint32_t>(size_t(procs()), 8);
    splitc_gptr_t g = splitc_toglobal(myproc(), cells.local());
    reset_store_sync();
    splitc_store_4(g, 7);
    splitc_store_1(splitc_gptr_add(g, 4), 1);
    splitc_store_8(splitc_gptr_add(g, 8), 9);
    EXPECT_EQ(splitc_store_bytes_arrived(), 13);
    store_sync(13);
    EXPECT_EQ(splitc_store_bytes_arrived(), 0);
    // all_store_sync sees local stores as sent and received.
    splitc_store_2(splitc_gptr_add(g, 16), 3);
    all_store_sync();
    EXPECT_EQ(splitc_store_bytes_arrived(), 0);
    EXPECT_EQ(cells.local()[0], 7u);
    // reset drops local stores not yet consumed, like remote ones.
    splitc_store_4(g, 8);
    reset_store_sync();
    EXPECT_EQ(splitc_store_bytes_arrived(), 0);
    barrier();
    all_spread_free(cells);
}

struct Recorder {
    std::vector<splitc_error_t> codes;
};
void record(splitc_error_t code, const char *, void *ctx) { static_cast<Recorder *>(ctx)->codes.push_back(code); }

TEST(LocalFastPath, LocalBadPointersAreStillReported) {
    Recorder rec;
    splitc_error_handler_t old = splitc_set_error_handler(record, &rec);
    spread_ptr<uint64_t> cells = all_spread_malloc<uint64_t>(size_t(procs()), 2);
    char *base = reinterpret_cast<char *>(cells.local());
    splitc_gptr_t odd = splitc_toglobal(myproc(), base + 1);
    EXPECT_EQ(splitc_read_4(odd), 0u);
    splitc_write_8(odd, 1);
    splitc_store_2(odd, 1);
    splitc_put_4(odd, 1);
    ASSERT_EQ(rec.codes.size(), 4u);
    for (splitc_error_t c : rec.codes) EXPECT_EQ(c, SPLITC_ERR_MISALIGNED);
    rec.codes.clear();
    splitc_get_8(nullptr, splitc_toglobal(myproc(), base));
    EXPECT_EQ(splitc_read_8(splitc_toglobal(myproc(), nullptr)), 0u);
    ASSERT_EQ(rec.codes.size(), 2u);
    EXPECT_EQ(rec.codes[0], SPLITC_ERR_NULL_POINTER);
    EXPECT_EQ(rec.codes[1], SPLITC_ERR_NULL_POINTER);
    rec.codes.clear();
    // Same address, processor out of range.
    splitc_write_4(splitc_toglobal(procs(), base), 5);
    ASSERT_EQ(rec.codes.size(), 1u);
    EXPECT_EQ(rec.codes[0], SPLITC_ERR_BAD_PROC);
    EXPECT_EQ(splitc_store_bytes_arrived(), 0) << "a rejected store was counted";
    EXPECT_EQ(cells.local()[0], 0u) << "a rejected operation wrote";
    splitc_set_error_handler(old, nullptr);
    barrier();
    all_spread_free(cells);
}

} // namespace

namespace {

// The /proc/self/maps line of the mapping that holds `p` ("" if none).
std::string mapping_of(const void *p) {
    std::FILE *f = std::fopen("/proc/self/maps", "r");
    if (!f) return "";
    char line[512];
    std::string out;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    while (std::fgets(line, sizeof line, f)) {
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) {
            out = line;
            break;
        }
    }
    std::fclose(f);
    return out;
}

// In a job of several processes on the nicfw emulator the symmetric heap is
// the NIC's own memory (VipxAllocMemAt): a shared-memory segment the peers'
// NICs map, so bulk transfers into and out of it are one memcpy.  Alone, or on
// another provider, it is private memory.
TEST(Heap, IsTheNicsSharedMemoryOnNicfw) {
    spread_ptr<int> mem = all_spread_malloc<int>(size_t(procs()), 1024);
    const int *mine = (mem + myproc()).local();
    const std::string map = mapping_of(mine);
    ASSERT_FALSE(map.empty()) << "the heap block is not mapped";
    const char *prov = std::getenv("VIPL_PROVIDER");
    const bool nicfw = !prov || !*prov || std::string(prov) == "nicfw";
    if (procs() > 1 && nicfw) EXPECT_NE(map.find("memfd:viastack-mem-"), std::string::npos) << map;
    else EXPECT_EQ(map.find("memfd:"), std::string::npos) << map;
    barrier();
    all_spread_free(mem);
}

} // namespace
