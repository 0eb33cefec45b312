// boot_collectives_test - runs under vipl-run with N ranks (N = 1, 2, 3, 8):
// barrier ordering, allgather and bcast correctness, argument mismatches.
// Every rank runs the same tests in the same order, so the collectives line up;
// checks use EXPECT (not ASSERT) so a failing rank still makes every call.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "vipl_boot.h"

namespace {

int rank() { return vipl_boot_rank(); }
int size() { return vipl_boot_size(); }

// A test-only counter page shared by the job's ranks, named by the job's shm
// convention so vipl-run removes it at the end.
std::string counter_name() { return std::string("/viastack-") + vipl_boot_job() + "-bootcounter"; }

std::atomic<uint32_t> *shared_counter() {
    static std::atomic<uint32_t> *counter = [] {
        int fd = shm_open(counter_name().c_str(), O_RDWR | O_CREAT, 0600);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(ftruncate(fd, 4096), 0); // zero-filled: counter starts at 0
        void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        return p == MAP_FAILED ? nullptr : static_cast<std::atomic<uint32_t> *>(p);
    }();
    return counter;
}

TEST(BootCollectives, JobInfoIsConsistent) {
    ASSERT_GE(size(), 1);
    EXPECT_GE(rank(), 0);
    EXPECT_LT(rank(), size());
    // Under vipl-run the launcher's environment says who we are; under a PMIx
    // launcher (mpirun) PMIX_RANK does.
    if (const char *env = std::getenv("VIASTACK_SIZE")) {
        EXPECT_EQ(size(), std::atoi(env));
        EXPECT_EQ(rank(), std::atoi(std::getenv("VIASTACK_RANK")));
    } else {
        const char *pmix_rank = std::getenv("PMIX_RANK");
        ASSERT_NE(pmix_rank, nullptr) << "run this test under vipl-run or a PMIx launcher";
        EXPECT_EQ(rank(), std::atoi(pmix_rank));
    }
    EXPECT_STRNE(vipl_boot_job(), "");
    // Every rank must see the same job id and a distinct rank.
    struct Info {
        int rank;
        char job[64];
    } mine{}, all[64]{};
    ASSERT_LE(size(), 64);
    mine.rank = rank();
    std::snprintf(mine.job, sizeof mine.job, "%s", vipl_boot_job());
    ASSERT_EQ(vipl_boot_allgather(&mine, sizeof mine, all), VIPL_BOOT_OK);
    for (int r = 0; r < size(); ++r) {
        EXPECT_EQ(all[r].rank, r);
        EXPECT_STREQ(all[r].job, vipl_boot_job());
    }
}

// Before each barrier every rank bumps a shared counter after a random delay;
// nobody may leave barrier i before all N increments of round i happened.
TEST(BootCollectives, BarrierLetsNobodyPassEarly) {
    std::atomic<uint32_t> *counter = shared_counter();
    ASSERT_NE(counter, nullptr);
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK); // everyone has the counter mapped
    const uint32_t base = counter->load();
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK); // nobody increments before all read base
    std::mt19937 rng(static_cast<unsigned>(rank() * 7919 + 1));
    const uint32_t n = static_cast<uint32_t>(size());
    int early = 0;
    for (uint32_t round = 1; round <= 60; ++round) {
        // The random delay is the scenario: ranks reach the barrier out of step.
        if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
        counter->fetch_add(1);
        ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
        uint32_t seen = counter->load() - base;
        if (seen < round * n) ++early;
        // Nobody can be more than one round ahead either.
        EXPECT_LE(seen, (round + 1) * n);
    }
    EXPECT_EQ(early, 0) << "ranks left a barrier before all ranks arrived";
}

TEST(BootCollectives, AllgatherRepeatedWithVaryingData) {
    const int n = size(), me = rank();
    std::vector<unsigned char> mine(VIPL_BOOT_MAX_ITEM), out(size_t(n) * VIPL_BOOT_MAX_ITEM);
    int bad = 0;
    // Each PMIx round trips through the launcher's server: fewer rounds there.
    const int iters = std::getenv("VIASTACK_JOB") ? 300 : 60;
    for (int it = 0; it < iters; ++it) {
        // Lengths cover 0, 1, odd sizes and the maximum.
        size_t len = it == 0 ? 0 : it == 1 ? VIPL_BOOT_MAX_ITEM : size_t(it * 97 + 1) % VIPL_BOOT_MAX_ITEM;
        for (size_t i = 0; i < len; ++i) mine[i] = static_cast<unsigned char>((me + 1) * 31 + it * 17 + i * 3);
        std::memset(out.data(), 0xEE, out.size());
        ASSERT_EQ(vipl_boot_allgather(mine.data(), len, out.data()), VIPL_BOOT_OK);
        for (int r = 0; r < n; ++r)
            for (size_t i = 0; i < len; ++i)
                bad += out[size_t(r) * len + i] != static_cast<unsigned char>((r + 1) * 31 + it * 17 + i * 3);
        // Bytes past size*len are not touched.
        if (size_t(n) * len < out.size()) bad += out[size_t(n) * len] != 0xEE;
    }
    EXPECT_EQ(bad, 0);
}

TEST(BootCollectives, AllgatherInPlace) {
    std::vector<int> all(size_t(size()), -1);
    all[size_t(rank())] = rank() * 1000 + 7;
    ASSERT_EQ(vipl_boot_allgather(&all[size_t(rank())], sizeof(int), all.data()), VIPL_BOOT_OK);
    for (int r = 0; r < size(); ++r) EXPECT_EQ(all[size_t(r)], r * 1000 + 7);
}

TEST(BootCollectives, BcastFromEveryRoot) {
    // Sizes below, at and above one chunk (size * VIPL_BOOT_MAX_ITEM bytes).
    const size_t chunk = size_t(size()) * VIPL_BOOT_MAX_ITEM;
    const size_t lens[] = {0, 1, 100, chunk - 1, chunk, 2 * chunk + 123};
    for (int root = 0; root < size(); ++root) {
        for (size_t len : lens) {
            std::vector<unsigned char> buf(len + 1, 0x5A);
            if (rank() == root)
                for (size_t i = 0; i < len; ++i) buf[i] = static_cast<unsigned char>(root * 13 + i * 7 + len);
            ASSERT_EQ(vipl_boot_bcast(buf.data(), len, root), VIPL_BOOT_OK);
            int bad = 0;
            for (size_t i = 0; i < len; ++i) bad += buf[i] != static_cast<unsigned char>(root * 13 + i * 7 + len);
            EXPECT_EQ(bad, 0) << "root " << root << " len " << len;
            EXPECT_EQ(buf[len], 0x5A) << "bcast wrote past len";
        }
    }
}

TEST(BootCollectives, MismatchedLengthsFailOnEveryRank) {
    if (size() == 1) GTEST_SKIP() << "needs two ranks to disagree";
    char item[16] = {};
    std::vector<char> out(size_t(size()) * 16);
    // Rank 0 passes 8 bytes, the others 16: every rank must see VIPL_BOOT_ERR_ARG.
    EXPECT_EQ(vipl_boot_allgather(item, rank() == 0 ? 8 : 16, out.data()), VIPL_BOOT_ERR_ARG);
    // Too long on one rank only: still an error everywhere, never a hang.
    std::vector<char> big(VIPL_BOOT_MAX_ITEM + 1);
    size_t len = rank() == size() - 1 ? big.size() : 16;
    EXPECT_EQ(vipl_boot_allgather(big.data(), len, std::vector<char>(size_t(size()) * big.size()).data()),
              VIPL_BOOT_ERR_ARG);
    // Roots that disagree.
    int x = 0;
    EXPECT_EQ(vipl_boot_bcast(&x, sizeof x, rank() == 0 ? 0 : 1), VIPL_BOOT_ERR_ARG);
    // The collectives stay usable afterwards.
    int v = rank() == 0 ? 4242 : 0;
    EXPECT_EQ(vipl_boot_bcast(&v, sizeof v, 0), VIPL_BOOT_OK);
    EXPECT_EQ(v, 4242);
}

TEST(BootCollectives, BadRootIsAnError) {
    int x = 0;
    EXPECT_EQ(vipl_boot_bcast(&x, sizeof x, size()), VIPL_BOOT_ERR_ARG);
    EXPECT_EQ(vipl_boot_bcast(&x, sizeof x, -1), VIPL_BOOT_ERR_ARG);
    EXPECT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (vipl_boot_init() != VIPL_BOOT_OK) return 70;
    int rc = RUN_ALL_TESTS();
    // Finalize is collective: a failing rank still takes part, then reports.
    int frc = vipl_boot_finalize();
    if (frc != VIPL_BOOT_OK) return 71;
    EXPECT_EQ(vipl_boot_finalize(), frc) << "finalize must be idempotent";
    // vipl-run removes the job's files; a PMIx launcher does not know about them.
    if (!std::getenv("VIASTACK_JOB") && vipl_boot_rank() == 0) shm_unlink(counter_name().c_str());
    return rc;
}
