// test_pointers.cpp - global/spread pointer representation and arithmetic,
// checked against a reference model (linear index <-> (processor, row)), for
// several PROCS values; needs no network (a job of one).
#include <gtest/gtest.h>

#include <vector>

#include "splitc/splitc.hpp"

namespace {

// Temporarily pretend PROCS = p (the arithmetic is pure; nothing is sent).
struct FakeProcs {
    explicit FakeProcs(int p) : saved(splitc_rt_procs) { splitc_rt_procs = p; }
    ~FakeProcs() { splitc_rt_procs = saved; }
    int saved;
};

TEST(GlobalPtr, PacksProcessorAndAddress) {
    alignas(8) static char buf[64];
    splitc_gptr_t g = splitc_toglobal(513, buf + 8);
    EXPECT_EQ(splitc_toproc(g), 513);
    EXPECT_EQ(splitc_tolocal(g), buf + 8);
    EXPECT_FALSE(splitc_gptr_is_null(g));
    splitc_gptr_t n = SPLITC_GPTR_NULL_INIT;
    EXPECT_TRUE(splitc_gptr_is_null(n));
    EXPECT_TRUE(splitc_gptr_is_null(splitc_toglobal(7, nullptr)));
}

TEST(GlobalPtr, ArithmeticKeepsProcessor) {
    alignas(8) static char buf[256];
    splitc_gptr_t g = splitc_toglobal(3, buf + 100);
    splitc_gptr_t h = splitc_gptr_add(g, 40);
    EXPECT_EQ(splitc_toproc(h), 3);
    EXPECT_EQ(splitc_tolocal(h), buf + 140);
    EXPECT_EQ(splitc_gptr_diff(h, g), 40);
    h = splitc_gptr_add(g, -100);
    EXPECT_EQ(splitc_toproc(h), 3);
    EXPECT_EQ(splitc_tolocal(h), buf);

    splitc::global_ptr<double> p(2, reinterpret_cast<double *>(buf));
    EXPECT_EQ((p + 5).where(), 2);
    EXPECT_EQ((p + 5).local(), reinterpret_cast<double *>(buf) + 5);
    EXPECT_EQ((p + 5) - p, 5);
    EXPECT_EQ(--(p + 5), p + 4);
}

TEST(GlobalPtr, FieldOffsets) {
    struct S {
        char a;
        double b;
        int c[3];
    };
    static S s;
    splitc::global_ptr<S> p(0, &s);
    EXPECT_EQ(p.field(&S::b).local(), &s.b);
    EXPECT_EQ(p.field(&S::c).local(), &s.c);
}

// Reference model: element i of a spread object with elements of size e
// lives on processor i % P at base + (i / P) * e.
void check_spread_arithmetic(int P, size_t e) {
    FakeProcs fp(P);
    alignas(64) static char base[1];
    splitc_sptr_t s0 = splitc_sptr_from_gptr(splitc_toglobal(0, base));
    for (int64_t i = 0; i < 5 * P + 3; ++i) {
        splitc_sptr_t s = splitc_sptr_add(s0, i, e);
        ASSERT_EQ(splitc_sptr_proc(s), int(i % P)) << "P=" << P << " i=" << i;
        ASSERT_EQ(static_cast<char *>(splitc_sptr_addr(s)), base + (i / P) * int64_t(e)) << "P=" << P << " i=" << i;
        EXPECT_EQ(splitc_sptr_diff(s, s0, e), i);
        // Any step from any element, forwards and backwards, agrees with the model.
        for (int64_t k = -i; k <= 2 * P + 1; ++k) {
            splitc_sptr_t t = splitc_sptr_add(s, k, e);
            int64_t j = i + k;
            ASSERT_EQ(splitc_sptr_proc(t), int(j % P)) << "P=" << P << " i=" << i << " k=" << k;
            ASSERT_EQ(static_cast<char *>(splitc_sptr_addr(t)), base + (j / P) * int64_t(e));
        }
    }
}

TEST(SpreadPtr, ArithmeticMatchesModelForSeveralProcs) {
    for (int P : {1, 2, 3, 5, 8, 13})
        for (size_t e : {size_t(1), size_t(8), size_t(24)}) check_spread_arithmetic(P, e);
}

TEST(SpreadPtr, WrapsToProcessorZeroAtTheNextElement) {
    FakeProcs fp(4);
    alignas(8) static int cells[4];
    splitc::spread_ptr<int> p(splitc_sptr_from_gptr(splitc_toglobal(3, &cells[0])));
    splitc::spread_ptr<int> q = p + 1;
    EXPECT_EQ(q.where(), 0);
    EXPECT_EQ(q.local(), &cells[1]);
    EXPECT_EQ(q - p, 1);
    EXPECT_EQ((q + -1).where(), 3);
    EXPECT_EQ((q + -1).local(), &cells[0]);
    splitc::spread_ptr<int> r = p;
    ++r;
    EXPECT_EQ(r, q);
}

TEST(SpreadPtr, BlockStride) {
    FakeProcs fp(3);
    alignas(64) static double blocks[30];
    // Blocks of 5 doubles: p + 1 moves to the next processor, p + 3 to the next row.
    splitc::spread_ptr<double> p(splitc_sptr_from_gptr(splitc_toglobal(0, blocks)), 5 * sizeof(double));
    EXPECT_EQ((p + 2).where(), 2);
    EXPECT_EQ((p + 2).local(), blocks);
    EXPECT_EQ((p + 3).where(), 0);
    EXPECT_EQ((p + 3).local(), blocks + 5);
    EXPECT_EQ((p + 7).local(), blocks + 10);
}

} // namespace
