// test_errors.cpp - bad input gives a clear error, never silent corruption:
// null global pointers, processors out of range, misaligned and out-of-segment
// addresses, null local buffers, and bad collective arguments.  A returning
// handler records each error; the operation must then do nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "splitc/splitc.hpp"

using namespace splitc;

namespace {

struct Recorder {
    std::vector<splitc_error_t> codes;
    std::string last;
};

void record(splitc_error_t code, const char *msg, void *ctx) {
    auto *r = static_cast<Recorder *>(ctx);
    r->codes.push_back(code);
    r->last = msg;
}

class Errors : public ::testing::Test {
protected:
    void SetUp() override { old_ = splitc_set_error_handler(record, &rec_); }
    void TearDown() override { splitc_set_error_handler(old_, nullptr); }
    splitc_error_t take() {
        if (rec_.codes.empty()) return SPLITC_OK;
        splitc_error_t c = rec_.codes.back();
        rec_.codes.clear();
        return c;
    }
    Recorder rec_;
    splitc_error_handler_t old_ = nullptr;
};

int right() { return (myproc() + 1) % procs(); }

TEST_F(Errors, NullGlobalPointer) {
    global_ptr<int> null;
    EXPECT_EQ(read(null), 0);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    EXPECT_NE(rec_.last.find("null global pointer"), std::string::npos) << rec_.last;
    write(null, 5);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    int x = 9;
    get(x, null);
    splitc::sync();
    EXPECT_EQ(x, 9);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    store(global_ptr<long>(right(), nullptr), 1L);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    char buf[8];
    splitc_bulk_read(buf, splitc_toglobal(right(), nullptr), 8);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
}

TEST_F(Errors, ProcessorOutOfRange) {
    spread_ptr<int> cells = all_spread_malloc<int>(size_t(procs()));
    int *addr = cells.local();
    EXPECT_EQ(read(global_ptr<int>(procs(), addr)), 0);
    EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
    EXPECT_NE(rec_.last.find("PROCS is"), std::string::npos) << rec_.last;
    put(global_ptr<int>(procs() + 7, addr), 3);
    splitc::sync();
    EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
    bulk_store(global_ptr<int>(65535, addr), addr, 1);
    EXPECT_EQ(take(), SPLITC_ERR_BAD_PROC);
    barrier();
    EXPECT_EQ(*addr, 0) << "nothing was written";
    all_spread_free(cells);
}

TEST_F(Errors, MisalignedScalar) {
    spread_ptr<int64_t> cells = all_spread_malloc<int64_t>(size_t(procs()), 2);
    auto *base = reinterpret_cast<char *>((cells + right()).local());
    splitc_gptr_t odd = splitc_toglobal(right(), base + 1);
    EXPECT_EQ(splitc_read_4(odd), 0u);
    EXPECT_EQ(take(), SPLITC_ERR_MISALIGNED);
    splitc_write_8(splitc_toglobal(right(), base + 4), ~0ull);
    EXPECT_EQ(take(), SPLITC_ERR_MISALIGNED);
    splitc_store_2(odd, 0xffff);
    EXPECT_EQ(take(), SPLITC_ERR_MISALIGNED);
    // Bytes have no alignment; bulk has none either.
    splitc_write_1(odd, 0);
    EXPECT_EQ(take(), SPLITC_OK);
    barrier();
    const int64_t *mine = (cells + myproc()).local();
    EXPECT_EQ(mine[0], 0) << "misaligned writes must not land";
    EXPECT_EQ(mine[1], 0);
    barrier();
    all_spread_free(cells);
}

TEST_F(Errors, RemoteAddressOutsideTheSegment) {
    if (procs() == 1) GTEST_SKIP() << "every address is local in a job of one";
    int on_stack = 1;
    std::vector<long> heap(4, 1);
    EXPECT_EQ(read(global_ptr<int>(right(), &on_stack)), 0);
    EXPECT_EQ(take(), SPLITC_ERR_OUT_OF_SEGMENT);
    EXPECT_NE(rec_.last.find("symmetric heap"), std::string::npos) << rec_.last;
    write(global_ptr<long>(right(), heap.data()), 2L);
    EXPECT_EQ(take(), SPLITC_ERR_OUT_OF_SEGMENT);
    // A range that starts inside the heap and runs past its end.
    spread_ptr<char> cells = all_spread_malloc<char>(size_t(procs()), 64);
    std::vector<char> big(1 << 20);
    splitc_bulk_get(big.data(), splitc_toglobal(right(), cells.local()), size_t(1) << 40);
    splitc::sync();
    EXPECT_EQ(take(), SPLITC_ERR_OUT_OF_SEGMENT);
    EXPECT_EQ(on_stack, 1);
    EXPECT_EQ(heap[0], 1);
    all_spread_free(cells);
}

TEST_F(Errors, NullLocalBuffer) {
    spread_ptr<int> cells = all_spread_malloc<int>(size_t(procs()));
    splitc_get_4(nullptr, (cells + right()).to_global().raw());
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    splitc_bulk_put((cells + right()).to_global().raw(), nullptr, 4);
    EXPECT_EQ(take(), SPLITC_ERR_NULL_POINTER);
    barrier();
    all_spread_free(cells);
}

TEST_F(Errors, BadSpreadAllocations) {
    splitc_sptr_t s = splitc_all_spread_malloc(0, 8);
    EXPECT_TRUE(splitc_gptr_is_null(splitc_sptr_to_gptr(s)));
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    s = splitc_all_spread_malloc(size_t(procs()), size_t(1) << 42);
    EXPECT_TRUE(splitc_gptr_is_null(splitc_sptr_to_gptr(s)));
    EXPECT_EQ(take(), SPLITC_ERR_NO_MEMORY);
    EXPECT_NE(rec_.last.find("SPLITC_HEAP_SIZE"), std::string::npos) << rec_.last;
    if (procs() > 1) {
        s = splitc_all_spread_malloc(size_t(procs() + myproc()), 8);
        EXPECT_TRUE(splitc_gptr_is_null(splitc_sptr_to_gptr(s)));
        EXPECT_EQ(take(), SPLITC_ERR_COLLECTIVE_MISMATCH);
    }
    // Freeing something all_spread_malloc did not return.
    alignas(64) static char not_spread[64];
    splitc_all_spread_free(splitc_sptr_from_gptr(splitc_toglobal(0, not_spread)));
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    // The heap still works afterwards.
    spread_ptr<int> ok = all_spread_malloc<int>(size_t(procs()));
    EXPECT_FALSE(ok.is_null());
    EXPECT_EQ(take(), SPLITC_OK);
    all_spread_free(ok);
}

TEST_F(Errors, DifferentCollectivesAtOnePointAreReported) {
    if (procs() == 1) GTEST_SKIP() << "needs two processors";
    if (myproc() == 0) all_reduce_to_all_add(1L);
    else all_reduce_to_all_max(1L);
    EXPECT_EQ(take(), SPLITC_ERR_COLLECTIVE_MISMATCH);
    EXPECT_NE(rec_.last.find("same collectives"), std::string::npos) << rec_.last;
    // Back in step afterwards.
    EXPECT_EQ(all_reduce_to_all_add(1L), long(procs()));
    EXPECT_EQ(take(), SPLITC_OK);
}

TEST_F(Errors, SpreadArrayIndexOutOfBounds) {
    spread_array<int> a({3}, {2});
    EXPECT_TRUE(a.ptr(3, 0).is_null());
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    EXPECT_TRUE(a.ptr(0, 2).is_null());
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    EXPECT_TRUE(a.ptr(0).is_null());
    EXPECT_EQ(take(), SPLITC_ERR_BAD_ARGUMENT);
    EXPECT_FALSE(a.ptr(2, 1).is_null());
    EXPECT_EQ(take(), SPLITC_OK);
}

} // namespace
