// boot_unit_test - single-process tests of vipl_boot: a job of one (no
// launcher), calls before init / after finalize, malformed environments, and a
// stale segment of the wrong size.  The library's state is per process, so
// each scenario runs in a forked child (gtest death-test machinery).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tcp_wire.hpp"
#include "vipl_boot.h"

namespace {

void clear_job_env() {
    for (const char *v : {"VIASTACK_JOB", "VIASTACK_RANK", "VIASTACK_SIZE", "VIASTACK_BOOT_TIMEOUT", "VIASTACK_BOOT",
                          "PMIX_RANK", "PMIX_NAMESPACE"})
        unsetenv(v);
}

// Runs `body` in a child with a clean environment plus `env`; the child exits
// 0 iff every check in body passed.
void in_child(const std::vector<const char *> &env, const std::function<void()> &body) {
    EXPECT_EXIT(
        {
            clear_job_env();
            for (const char *kv : env) putenv(strdup(kv));
            body();
            std::exit(::testing::Test::HasFailure() ? 1 : 0);
        },
        ::testing::ExitedWithCode(0), "");
}

TEST(BootUnit, JobOfOneWithoutLauncher) {
    in_child({}, [] {
        EXPECT_EQ(vipl_boot_init(), VIPL_BOOT_OK);
        EXPECT_EQ(vipl_boot_init(), VIPL_BOOT_OK); // idempotent
        EXPECT_EQ(vipl_boot_rank(), 0);
        EXPECT_EQ(vipl_boot_size(), 1);
        EXPECT_STREQ(vipl_boot_job(), "");
        EXPECT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
        int mine = 1234, out = 0;
        EXPECT_EQ(vipl_boot_allgather(&mine, sizeof mine, &out), VIPL_BOOT_OK);
        EXPECT_EQ(out, 1234);
        char big[VIPL_BOOT_MAX_ITEM + 1] = {};
        EXPECT_EQ(vipl_boot_allgather(big, sizeof big, big), VIPL_BOOT_ERR_ARG);
        int v = 77;
        EXPECT_EQ(vipl_boot_bcast(&v, sizeof v, 0), VIPL_BOOT_OK);
        EXPECT_EQ(v, 77);
        EXPECT_EQ(vipl_boot_bcast(&v, sizeof v, 1), VIPL_BOOT_ERR_ARG);
        EXPECT_EQ(vipl_boot_finalize(), VIPL_BOOT_OK);
        EXPECT_EQ(vipl_boot_finalize(), VIPL_BOOT_OK); // idempotent
        EXPECT_EQ(vipl_boot_barrier(), VIPL_BOOT_ERR_NOT_INIT);
    });
}

// Reference counting: a library that finalizes its use (splitc_finalize,
// FM_finalize, ...) leaves the job only if nobody else still uses it.
TEST(BootUnit, FinalizeLeavesTheJobOnlyWithTheLastUser) {
    in_child({}, [] {
        EXPECT_EQ(vipl_boot_lookup(), VIPL_BOOT_OK);   // a provider: no reference
        EXPECT_EQ(vipl_boot_init(), VIPL_BOOT_OK);     // the program
        EXPECT_EQ(vipl_boot_init(), VIPL_BOOT_OK);     // a library (Split-C, AM, FM, BIP)
        EXPECT_EQ(vipl_boot_finalize(), VIPL_BOOT_OK); // the library is done
        EXPECT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK) << "the program's collectives must still work";
        int v = 5;
        EXPECT_EQ(vipl_boot_bcast(&v, sizeof v, 0), VIPL_BOOT_OK);
        EXPECT_EQ(vipl_boot_lookup(), VIPL_BOOT_OK);
        EXPECT_EQ(vipl_boot_finalize(), VIPL_BOOT_OK); // the program: the last user leaves
        EXPECT_EQ(vipl_boot_barrier(), VIPL_BOOT_ERR_NOT_INIT);
        EXPECT_EQ(vipl_boot_finalize(), VIPL_BOOT_OK);          // afterwards: the same result
        EXPECT_EQ(vipl_boot_init(), VIPL_BOOT_OK);              // (the first call's result) ...
        EXPECT_EQ(vipl_boot_barrier(), VIPL_BOOT_ERR_NOT_INIT); // ... but the job is left
    });
}

TEST(BootUnit, LookupAloneIsLeftByOneFinalize) {
    in_child({}, [] {
        EXPECT_EQ(vipl_boot_lookup(), VIPL_BOOT_OK);
        EXPECT_EQ(vipl_boot_rank(), 0);
        EXPECT_EQ(vipl_boot_finalize(), VIPL_BOOT_OK);
        EXPECT_EQ(vipl_boot_barrier(), VIPL_BOOT_ERR_NOT_INIT);
    });
}

TEST(BootUnit, CallsBeforeInitFail) {
    in_child({}, [] {
        EXPECT_EQ(vipl_boot_rank(), VIPL_BOOT_ERR_NOT_INIT);
        EXPECT_EQ(vipl_boot_size(), VIPL_BOOT_ERR_NOT_INIT);
        EXPECT_EQ(vipl_boot_barrier(), VIPL_BOOT_ERR_NOT_INIT);
        int x = 0;
        EXPECT_EQ(vipl_boot_allgather(&x, sizeof x, &x), VIPL_BOOT_ERR_NOT_INIT);
        EXPECT_EQ(vipl_boot_bcast(&x, sizeof x, 0), VIPL_BOOT_ERR_NOT_INIT);
        EXPECT_EQ(vipl_boot_finalize(), VIPL_BOOT_ERR_NOT_INIT);
    });
}

TEST(BootUnit, MalformedEnvironmentIsReported) {
    const std::vector<std::vector<const char *>> bad = {
        {"VIASTACK_JOB=j1", "VIASTACK_RANK=0"},                        // no size
        {"VIASTACK_JOB=j1", "VIASTACK_SIZE=2"},                        // no rank
        {"VIASTACK_JOB=j1", "VIASTACK_SIZE=2", "VIASTACK_RANK=2"},     // rank >= size
        {"VIASTACK_JOB=j1", "VIASTACK_SIZE=2", "VIASTACK_RANK=x"},     // not a number
        {"VIASTACK_JOB=j1", "VIASTACK_SIZE=0", "VIASTACK_RANK=0"},     // empty job
        {"VIASTACK_JOB=../etc", "VIASTACK_SIZE=1", "VIASTACK_RANK=0"}, // path in job id
        {"VIASTACK_BOOT_TIMEOUT=soon"},                                // bad timeout
        {"VIASTACK_BOOT_TIMEOUT=-3"}};
    for (const auto &env : bad) {
        EXPECT_EXIT(
            {
                clear_job_env();
                for (const char *kv : env) putenv(strdup(kv));
                int rc = vipl_boot_init();
                // Later calls return the first result, and nothing works.
                bool ok = rc == VIPL_BOOT_ERR_ENV && vipl_boot_init() == VIPL_BOOT_ERR_ENV &&
                    vipl_boot_barrier() == VIPL_BOOT_ERR_NOT_INIT;
                std::exit(ok ? 0 : 1);
            },
            ::testing::ExitedWithCode(0), "VIASTACK_")
            << env.back();
    }
}

TEST(BootUnit, SharedMemoryJobOfOneCreatesItsSegment) {
    const std::string job = "unit-" + std::to_string(getpid());
    const std::string path = "/dev/shm/viastack-" + job + "-boot";
    std::string env_job = "VIASTACK_JOB=" + job;
    in_child({env_job.c_str(), "VIASTACK_RANK=0", "VIASTACK_SIZE=1"}, [&] {
        EXPECT_EQ(vipl_boot_init(), VIPL_BOOT_OK);
        EXPECT_STREQ(vipl_boot_job(), job.c_str());
        EXPECT_EQ(access(path.c_str(), F_OK), 0);
        for (int i = 0; i < 100; ++i) {
            int mine = i, out = -1;
            EXPECT_EQ(vipl_boot_allgather(&mine, sizeof mine, &out), VIPL_BOOT_OK);
            EXPECT_EQ(out, i);
        }
        EXPECT_EQ(vipl_boot_finalize(), VIPL_BOOT_OK);
    });
    unlink(path.c_str());
}

TEST(BootUnit, StaleSegmentOfAnotherSizeIsRefused) {
    const std::string job = "stale-" + std::to_string(getpid());
    const std::string path = "/dev/shm/viastack-" + job + "-boot";
    int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 64 << 20), 0); // far larger than a job of 1 needs
    close(fd);
    std::string env_job = "VIASTACK_JOB=" + job;
    EXPECT_EXIT(
        {
            clear_job_env();
            putenv(strdup(env_job.c_str()));
            putenv(strdup("VIASTACK_RANK=0"));
            putenv(strdup("VIASTACK_SIZE=1"));
            std::exit(vipl_boot_init() == VIPL_BOOT_ERR_SHM ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "ranks disagree on VIASTACK_SIZE");
    unlink(path.c_str());
}

TEST(BootUnit, AbortExitsWithTheCodeAndReason) {
    EXPECT_EXIT(
        {
            clear_job_env();
            vipl_boot_init();
            vipl_boot_abort(7, "unit abort");
        },
        ::testing::ExitedWithCode(7), "aborting the job with code 7: unit abort");
    // Code 0 would look like success to the launcher.
    EXPECT_EXIT(
        {
            clear_job_env();
            vipl_boot_abort(0, "zero");
        },
        ::testing::ExitedWithCode(1), "code 1");
}

} // namespace

// ---- the TCP bootstrap's frame reader: what a peer can make it buffer ----------
namespace {
std::vector<unsigned char> frame_header(uint32_t type, uint64_t payload) {
    std::vector<unsigned char> h(viastack::boot::kFrameHeaderBytes, 0);
    auto put32 = [&](size_t at, uint32_t v) {
        for (int i = 0; i < 4; ++i) h[at + size_t(i)] = static_cast<unsigned char>(v >> (24 - 8 * i));
    };
    put32(0, 0x56424f54); // "VBOT"
    put32(4, type);
    put32(32, static_cast<uint32_t>(payload >> 32));
    put32(36, static_cast<uint32_t>(payload));
    return h;
}
} // namespace

TEST(BootTcpFrames, ClaimOverTheLimitIsGarbageAndNothingMoreIsBuffered) {
    namespace vb = viastack::boot;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    int big = 4 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    vb::FrameReader r(vb::kMaxPayloadBeforeHello);
    const auto h = frame_header(vb::kHello, uint64_t{1} << 30); // claims 1 GiB
    ASSERT_EQ(write(sv[0], h.data(), h.size()), ssize_t(h.size()));
    std::vector<unsigned char> junk(64 * 1024, 0x41);
    size_t sent = 0;
    for (int i = 0; i < 64; ++i) { // as much as the socket takes, up to 4 MiB
        const ssize_t n = write(sv[0], junk.data(), junk.size());
        if (n <= 0) break;
        sent += size_t(n);
    }
    ASSERT_GT(sent, size_t(256 * 1024)) << "the test needs more than the limit in flight";
    EXPECT_EQ(r.read_some(sv[1]), vb::FrameReader::kOk);
    EXPECT_LE(r.buffered(), vb::kFrameHeaderBytes + vb::kMaxPayloadBeforeHello + 65536)
        << "the reader buffered past one allowed frame";
    vb::FrameHeader fh;
    std::vector<unsigned char> payload;
    EXPECT_FALSE(r.next(&fh, &payload));
    EXPECT_TRUE(r.garbage());
    close(sv[0]);
    close(sv[1]);
}

TEST(BootTcpFrames, FramesUpToTheLimitPassAndTheLimitCanBeRaised) {
    namespace vb = viastack::boot;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    vb::FrameReader r(vb::kMaxPayloadBeforeHello);
    auto h = frame_header(vb::kHello, vb::kMaxPayloadBeforeHello);
    std::vector<unsigned char> p(vb::kMaxPayloadBeforeHello, 7);
    ASSERT_EQ(write(sv[0], h.data(), h.size()), ssize_t(h.size()));
    ASSERT_EQ(write(sv[0], p.data(), p.size()), ssize_t(p.size()));
    EXPECT_EQ(r.read_some(sv[1]), vb::FrameReader::kOk);
    vb::FrameHeader fh;
    std::vector<unsigned char> got;
    ASSERT_TRUE(r.next(&fh, &got));
    EXPECT_EQ(got, p);
    // Joined: a collective's frame of 100 000 bytes arrives whole, in several reads.
    r.set_max_payload(vb::kMaxPayload);
    h = frame_header(vb::kContrib, 100000);
    p.assign(100000, 9);
    ASSERT_EQ(write(sv[0], h.data(), h.size()), ssize_t(h.size()));
    size_t off = 0;
    bool popped = false;
    for (int i = 0; i < 1000 && !popped; ++i) {
        if (off < p.size()) {
            const ssize_t n = write(sv[0], p.data() + off, p.size() - off);
            if (n > 0) off += size_t(n);
        }
        EXPECT_EQ(r.read_some(sv[1]), vb::FrameReader::kOk);
        popped = r.next(&fh, &got);
    }
    ASSERT_TRUE(popped);
    EXPECT_EQ(got, p);
    EXPECT_FALSE(r.garbage());
    close(sv[0]);
    close(sv[1]);
}
