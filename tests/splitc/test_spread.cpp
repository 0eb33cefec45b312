// test_spread.cpp - all_spread_malloc layout, spread-pointer traversal across
// processors (with wrap-around), and spread arrays of several shapes.
#include <gtest/gtest.h>

#include <vector>

#include "splitc/splitc.hpp"

using namespace splitc;

namespace {

TEST(SpreadMalloc, BlockBLivesOnProcessorBModProcsAtOneAddress) {
    const int P = procs();
    const size_t nblocks = size_t(3 * P + 2), bs = 40;
    splitc_sptr_t s = splitc_all_spread_malloc(nblocks, bs);
    ASSERT_FALSE(splitc_gptr_is_null(splitc_sptr_to_gptr(s)));
    EXPECT_EQ(splitc_sptr_proc(s), 0);
    // The same base on every processor.
    long base = long(uintptr_t(splitc_sptr_addr(s)));
    EXPECT_EQ(all_reduce_to_all_max(base), base);
    EXPECT_EQ(all_reduce_to_all_min(base), base);
    for (size_t b = 0; b < nblocks; ++b) {
        splitc_sptr_t t = splitc_sptr_add(s, int64_t(b), bs);
        EXPECT_EQ(splitc_sptr_proc(t), int(b % size_t(P)));
        EXPECT_EQ(static_cast<char *>(splitc_sptr_addr(t)),
                  static_cast<char *>(splitc_sptr_addr(s)) + (b / size_t(P)) * bs);
    }
    splitc_all_spread_free(s);
}

TEST(SpreadPtr, TraversalWritesEveryElementOnItsOwner) {
    const int P = procs();
    const int n = 4 * P + 3;
    spread_ptr<int> a = all_spread_malloc<int>(size_t(n));
    // Processor 0 walks the whole spread object with p++ (crossing every
    // processor and wrapping to processor 0 at each next row).
    if (on_one()) {
        spread_ptr<int> p = a;
        for (int i = 0; i < n; ++i, ++p) *p = 1000 + i;
    }
    barrier();
    // Each owner finds its elements i = k*P + MYPROC at row k.
    int *local = a.local();
    for (int i = myproc(), k = 0; i < n; i += P, ++k) EXPECT_EQ(local[k], 1000 + i) << "element " << i;
    // Everyone reads everything back through a[i] and from the end with p - k.
    for (int i = 0; i < n; ++i) EXPECT_EQ(int(a[i]), 1000 + i);
    spread_ptr<int> last = a + (n - 1);
    for (int k = 0; k < n; ++k) EXPECT_EQ(int(*(last - k)), 1000 + n - 1 - k);
    EXPECT_EQ(last - a, n - 1);
    barrier();
    all_spread_free(a);
}

// Every element gets its full index written by a processor that is usually
// not the owner, then everyone checks owner, address and value.
void check_shape(std::initializer_list<size_t> sd, std::initializer_list<size_t> bd) {
    spread_array<long> arr(sd, bd);
    std::vector<size_t> s(sd), b(bd);
    const size_t nb = arr.blocks(), be = arr.block_elems();
    ASSERT_EQ(arr.size(), nb * be);
    auto element = [&](size_t lin, std::vector<size_t> &ix) {
        ix.assign(s.size() + b.size(), 0);
        size_t blk = lin / be, off = lin % be;
        for (size_t i = b.size(); i-- > 0;) ix[s.size() + i] = off % b[i], off /= b[i];
        for (size_t i = s.size(); i-- > 0;) ix[i] = blk % s[i], blk /= s[i];
    };
    auto at = [&](const std::vector<size_t> &ix) {
        switch (ix.size()) {
        case 1: return arr.ptr(ix[0]);
        case 2: return arr.ptr(ix[0], ix[1]);
        case 3: return arr.ptr(ix[0], ix[1], ix[2]);
        default: return arr.ptr(ix[0], ix[1], ix[2], ix[3]);
        }
    };
    std::vector<size_t> ix;
    for (size_t lin = size_t(myproc()); lin < arr.size(); lin += size_t(procs())) {
        element(lin, ix);
        put(at(ix), long(lin) * 10 + 7);
    }
    splitc::sync();
    barrier();
    for (size_t lin = 0; lin < arr.size(); ++lin) {
        element(lin, ix);
        global_ptr<long> p = at(ix);
        size_t blk = lin / be;
        EXPECT_EQ(p.where(), int(blk % size_t(procs()))) << "element " << lin;
        EXPECT_EQ(p.local(), arr.blocks_begin().local() + (blk / size_t(procs())) * be + lin % be);
        EXPECT_EQ(read(p), long(lin) * 10 + 7) << "element " << lin;
    }
    // Owners see their blocks locally.
    for (size_t k = 0; k < arr.local_blocks(); ++k) {
        size_t blk = arr.global_block_index(k);
        for (size_t o = 0; o < be; ++o) EXPECT_EQ(arr.local_block(k)[o], long(blk * be + o) * 10 + 7);
    }
    barrier();
}

TEST(SpreadArray, OneSpreadDimension) { check_shape({7}, {}); }
TEST(SpreadArray, TwoSpreadDimensions) { check_shape({3, 5}, {}); }
TEST(SpreadArray, SpreadRowsOfBlocks) { check_shape({4}, {3}); }
TEST(SpreadArray, TwoByTwoBlocksOnATwoByThreeSpread) { check_shape({2, 3}, {2, 2}); }
TEST(SpreadArray, FewerBlocksThanProcessors) { check_shape({1}, {5}); }

} // namespace
