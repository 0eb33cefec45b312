// splitc_bad_input_test - bad input to the calls of splitc_rt.h that the
// Split-C suite's own error tests (tests/splitc/test_errors.cpp) do not make:
// calls before splitc_init and after splitc_finalize, static and automatic
// spread objects with bad sizes and alignments, every bulk and scalar family
// with a bad processor, a misaligned or out-of-segment address and a NULL
// local buffer, and the error calls themselves.  A returning error handler
// records each error; the operation must then do nothing.  Runs as a job of
// one and under vipl-run (2 processes).  Rows in docs/bad-input.md.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "splitc_rt.h"

namespace {

struct Recorder {
    std::vector<splitc_error_t> codes;
    std::string last;
};
Recorder g_rec;
void record(splitc_error_t code, const char *msg, void *) {
    g_rec.codes.push_back(code);
    g_rec.last = msg ? msg : "";
}
splitc_error_t take() {
    if (g_rec.codes.empty()) return SPLITC_OK;
    splitc_error_t c = g_rec.codes.back();
    g_rec.codes.clear();
    return c;
}

// What the calls made before splitc_init reported (checked by a test).
std::vector<splitc_error_t> g_before_init;

int right() { return (splitc_myproc() + 1) % splitc_procs(); }

// The heap does not exist before splitc_init: allocations are refused.  A
// barrier is that of a job of one (the runtime's state before start-up, in
// which processor 0 may run alone), so it reports nothing.
TEST(SplitcBeforeInit, CollectiveCallsAreRefused) {
    const std::vector<splitc_error_t> want = {SPLITC_ERR_NOT_INITIALIZED, SPLITC_ERR_NOT_INITIALIZED, SPLITC_OK};
    EXPECT_EQ(g_before_init, want);
}

TEST(SplitcStatic, NullSlotBadAlignmentNullSizeFunction) {
    void *slot = nullptr;
    splitc_register_static(nullptr, 64, 8);
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    splitc_register_static(&slot, 64, 12);
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    EXPECT_EQ(slot, nullptr);
    splitc_register_static_fn(&slot, nullptr, 8);
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    // Too big for the heap (after start-up it is allocated at once).
    splitc_register_static(&slot, size_t(1) << 50, 8);
    EXPECT_EQ(take(), SPLITC_ERR_NO_MEMORY);
    EXPECT_EQ(slot, nullptr);
}

TEST(SplitcScope, BadAlignmentOverflowAndBadMarks) {
    const size_t before = splitc_heap_available();
    {
        splitc_scope_t s = splitc_scope_enter();
        EXPECT_EQ(splitc_scope_alloc(4, 8, 3), nullptr);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
        EXPECT_EQ(splitc_scope_alloc(SIZE_MAX, SIZE_MAX, 8), nullptr);
        EXPECT_EQ(take(), SPLITC_ERR_NO_MEMORY);
        EXPECT_EQ(splitc_scope_alloc(size_t(splitc_procs()), size_t(1) << 50, 8), nullptr);
        EXPECT_EQ(take(), SPLITC_ERR_NO_MEMORY);
        splitc_scope_leave(nullptr);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
        splitc_scope_t forged{1};
        splitc_scope_leave(&forged);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
        // A good allocation still works, and leaving gives it back.
        void *p = splitc_scope_alloc(size_t(splitc_procs()), 64, 0);
        EXPECT_NE(p, nullptr);
        EXPECT_EQ(take(), SPLITC_OK);
        splitc_scope_leave(&s);
        EXPECT_EQ(take(), SPLITC_OK);
        splitc_scope_leave(&s); // twice: nothing left to give back
        EXPECT_EQ(take(), SPLITC_OK);
    }
    EXPECT_EQ(splitc_heap_available(), before);
}

TEST(SplitcSpread, BadFrees) {
    splitc_sptr_t null{0};
    splitc_all_spread_free(null);
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    splitc_sptr_t s = splitc_all_spread_malloc(size_t(splitc_procs()), 0);
    EXPECT_TRUE(splitc_gptr_is_null(splitc_sptr_to_gptr(s)));
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    // So many blocks that rounding them up to whole rows would wrap.
    s = splitc_all_spread_malloc(SIZE_MAX, 8);
    EXPECT_TRUE(splitc_gptr_is_null(splitc_sptr_to_gptr(s)));
    EXPECT_NE(take(), SPLITC_OK);
    s = splitc_all_spread_malloc(size_t(splitc_procs()), 8);
    ASSERT_FALSE(splitc_gptr_is_null(splitc_sptr_to_gptr(s)));
    splitc_all_spread_free(s);
    EXPECT_EQ(take(), SPLITC_OK);
    splitc_all_spread_free(s);
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT) << "freed twice";
}

// Every family, aimed at a processor outside 0..PROCS-1 (and at -1, which
// packs as 65535), must report SPLITC_ERR_BAD_PROC and move nothing.
TEST(SplitcOps, EveryFamilyRefusesABadProcessor) {
    splitc_sptr_t cells = splitc_all_spread_malloc(size_t(splitc_procs()), 64);
    auto *mine = static_cast<uint8_t *>(splitc_sptr_addr(cells));
    std::memset(mine, 0, 64);
    splitc_barrier();
    uint8_t buf[64];
    std::memset(buf, 0x7e, sizeof buf);
    for (int proc : {splitc_procs(), splitc_procs() + 100, -1}) {
        SCOPED_TRACE(proc);
        splitc_gptr_t g = splitc_toglobal(proc, mine);
        EXPECT_EQ(splitc_read_1(g), 0u);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        EXPECT_EQ(splitc_read_8(g), 0u);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        splitc_write_2(g, 7);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        uint32_t v = 5;
        splitc_get_4(&v, g);
        splitc_sync();
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        EXPECT_EQ(v, 5u);
        splitc_put_8(g, 9);
        splitc_sync();
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        splitc_store_4(g, 1);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        splitc_bulk_read(buf, g, 16);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        splitc_bulk_write(g, buf, 16);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        splitc_bulk_get(buf, g, 16);
        splitc_sync();
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        splitc_bulk_put(g, buf, 16);
        splitc_sync();
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
        splitc_bulk_store(g, buf, 16);
        EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
    }
    for (uint8_t b : buf) ASSERT_EQ(b, 0x7e) << "a refused read wrote the local buffer";
    splitc_all_store_sync();
    splitc_barrier();
    for (int i = 0; i < 64; i++) ASSERT_EQ(mine[i], 0) << "a refused write landed at byte " << i;
    splitc_barrier();
    splitc_all_spread_free(cells);
}

// NULL local buffers and misaligned or out-of-segment remote addresses for the
// families the Split-C suite does not try.
TEST(SplitcOps, NullBuffersMisalignedAndOutOfSegment) {
    splitc_sptr_t cells = splitc_all_spread_malloc(size_t(splitc_procs()), 64);
    auto *base = static_cast<uint8_t *>(splitc_sptr_addr(cells));
    splitc_gptr_t g = splitc_toglobal(right(), base);
    splitc_bulk_read(nullptr, g, 8);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    splitc_bulk_get(nullptr, g, 8);
    splitc_sync();
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    splitc_bulk_write(g, nullptr, 8);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    splitc_bulk_store(g, nullptr, 8);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    splitc_get_8(nullptr, g);
    splitc_sync();
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    // Zero bytes: nothing to do, nothing to report.
    splitc_bulk_read(nullptr, g, 0);
    splitc_bulk_write(g, nullptr, 0);
    splitc_sync();
    EXPECT_EQ(take(), SPLITC_OK);
    splitc_gptr_t odd = splitc_toglobal(right(), base + 2);
    uint64_t v = 3;
    splitc_get_8(&v, odd);
    splitc_sync();
    EXPECT_EQ(take(), SPLITC_ERR_MISALIGNED);
    EXPECT_EQ(v, 3u);
    splitc_put_4(odd, 1);
    splitc_sync();
    EXPECT_EQ(take(), SPLITC_ERR_MISALIGNED);
    splitc_store_8(odd, 1);
    EXPECT_EQ(take(), SPLITC_ERR_MISALIGNED);
    if (splitc_procs() > 1) {
        static uint64_t outside[4];    // source bytes
        std::vector<uint8_t> heap(64); // the C++ heap: outside the symmetric heap
        splitc_gptr_t far = splitc_toglobal(right(), heap.data());
        splitc_bulk_write(far, outside, 8);
        EXPECT_EQ(take(), SPLITC_ERR_OUT_OF_SEGMENT);
        splitc_bulk_store(far, outside, 8);
        EXPECT_EQ(take(), SPLITC_ERR_OUT_OF_SEGMENT);
        splitc_store_4(far, 1);
        EXPECT_EQ(take(), SPLITC_ERR_OUT_OF_SEGMENT);
        // A range that wraps the address space.
        splitc_bulk_put(g, outside, SIZE_MAX);
        splitc_sync();
        EXPECT_EQ(take(), SPLITC_ERR_OUT_OF_SEGMENT);
    }
    splitc_all_store_sync();
    splitc_barrier();
    splitc_all_spread_free(cells);
}

TEST(SplitcErrors, ErrorCallsWithBadArguments) {
    EXPECT_NE(splitc_error_string(splitc_error_t(999)), nullptr);
    EXPECT_NE(splitc_error_string(splitc_error_t(-1)), nullptr);
    splitc_report_error(SPLITC_ERR_BAD_ARGUMENT, nullptr);
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    splitc_report_error(splitc_error_t(999), "made up");
    EXPECT_NE(take(), SPLITC_OK);
    EXPECT_NE(splitc_take_last_error(), SPLITC_OK);
    EXPECT_EQ(splitc_take_last_error(), SPLITC_OK) << "take clears it";
}

} // namespace

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);
    splitc_set_error_handler(record, nullptr);
    // Collective calls before the runtime is up.
    splitc_sptr_t s = splitc_all_spread_malloc(4, 8);
    g_before_init.push_back(take());
    (void)s;
    g_before_init.push_back((splitc_scope_alloc(4, 8, 0), take()));
    splitc_barrier();
    g_before_init.push_back(take());
    if (splitc_init(&argc, &argv) != 0) {
        std::fprintf(stderr, "splitc_init failed\n");
        return 1;
    }
    int rc = RUN_ALL_TESTS();
    long failed = splitc_all_reduce_to_all_add(rc != 0 ? 1 : 0);
    int me = splitc_myproc(), procs = splitc_procs();
    splitc_finalize();
    splitc_finalize(); // idempotent
    // After shut-down: remote operations report, never touch the network.
    if (procs > 1) {
        static uint64_t word;
        (void)splitc_read_8(splitc_toglobal((me + 1) % procs, &word));
        if (take() != SPLITC_ERR_NOT_INITIALIZED) {
            std::fprintf(stderr, "a remote read after splitc_finalize was not refused\n");
            failed++;
        }
    }
    if (me == 0 && failed) std::fprintf(stderr, "%ld processor(s) had failures\n", failed);
    return failed ? 1 : 0;
}
