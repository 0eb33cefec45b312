// profile_mp_test.cpp - nicfw timing profiles (VIPL_NICFW_PROFILE) measured end
// to end between two processes under vipl-run, through vipl.h only.
//
// Each measurement opens the NIC with the profile under test (the provider reads
// its settings when the NIC is first opened in the process) and closes it after,
// so the same processes compare "no profile" with a profile.  Lower bounds are
// strict: the delays are spins and cannot be shorter.  Upper bounds are generous:
// the machine is shared and two processes spin on two cores.
// One more test here sees the wire's back-pressure end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <time.h>
#include <vector>

#include "nicfw_vipl_util.hpp"
#include "vipl_boot.h"

using namespace nt;

namespace {

int g_rank = 0;
int g_conn_counter = 0;

bool inline_mode() {
    const char *m = std::getenv("VIPL_NICFW_MODE");
    return !m || !*m || std::string(m) == "inline";
}

double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}
double minimum(const std::vector<double> &v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }

void barrier() { ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK); }

// A reliable-delivery VI connected to the other rank, with registered buffers;
// opened under the given profile ("" = none).
class Link {
public:
    static constexpr size_t kBufs = 256;

    void open(const std::string &profile) {
        if (profile.empty()) unsetenv("VIPL_NICFW_PROFILE");
        else setenv("VIPL_NICFW_PROFILE", profile.c_str(), 1);
        NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
        NT_ASSERT_OK(VipCreatePtag(nic, &tag));
        buf = std::make_unique<Buffers>(nic, tag, kBufs, 64);
        NT_ASSERT_OK(buf->rc());
        VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_DELIVERY);
        NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &vi));
        const int peer = 1 - g_rank, k = g_conn_counter++;
        auto local = net_addr(nic, g_rank, "prof-" + std::to_string(g_rank) + "-" + std::to_string(k));
        auto remote = net_addr(nic, peer, "prof-" + std::to_string(peer) + "-" + std::to_string(k));
        NT_ASSERT_OK(VipConnectPeerRequest(vi, as_addr(local), as_addr(remote), kWaitMs));
        VIP_VI_ATTRIBUTES ra;
        NT_ASSERT_OK(VipConnectPeerWait(vi, &ra));
    }

    // Rank 0 disconnects; rank 1 waits to see the loss, then disconnects too, so no
    // disconnect message is left on the wire for the next NIC of this process.
    void close() {
        barrier();
        if (!vi) return;
        if (g_rank == 0) {
            NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(vi));
        } else {
            const double end = now_us() + 5e6;
            while (vi_state(vi) == VIP_STATE_CONNECTED && now_us() < end) VipxProgress(nic);
            EXPECT_EQ(vi_state(vi), VIP_STATE_ERROR);
            NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(vi));
        }
        VIP_DESCRIPTOR *d;
        while (VipRecvDone(vi, &d) == VIP_SUCCESS) {}
        while (VipSendDone(vi, &d) == VIP_SUCCESS) {}
        NT_EXPECT_RC(VIP_SUCCESS, VipDestroyVi(vi));
        vi = nullptr;
        buf.reset();
        NT_EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(nic, tag));
        NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(nic));
        barrier();
    }

    // Receives use descriptors [0, kBufs/2), sends the other half.
    VIP_DESCRIPTOR *recv_desc(size_t i) { return buf->recv(i % (kBufs / 2)); }
    VIP_DESCRIPTOR *send_desc(size_t i, uint32_t len) { return buf->send(kBufs / 2 + i % (kBufs / 2), len); }
    void post_recv(size_t i) { NT_ASSERT_OK(VipPostRecv(vi, recv_desc(i), buf->mh())); }
    void send_wait(size_t i, uint32_t len) {
        NT_ASSERT_OK(VipPostSend(vi, send_desc(i, len), buf->mh()));
        VIP_DESCRIPTOR *d;
        NT_ASSERT_OK(VipSendWait(vi, kWaitMs, &d));
    }
    void recv_wait() {
        VIP_DESCRIPTOR *d;
        NT_ASSERT_OK(VipRecvWait(vi, kWaitMs, &d));
        ASSERT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
    }

    VIP_NIC_HANDLE nic = nullptr;
    VIP_PROTECTION_HANDLE tag = nullptr;
    std::unique_ptr<Buffers> buf;
    VIP_VI_HANDLE vi = nullptr;
};

// Rank 0 times each VipPostSend of n 16-byte sends; rank 1 receives them.
std::vector<double> post_send_times(const std::string &profile, int n) {
    Link l;
    std::vector<double> t;
    l.open(profile);
    if (g_rank == 1)
        for (int i = 0; i < n; ++i) l.post_recv(i);
    barrier();
    for (int i = 0; i < n && !::testing::Test::HasFatalFailure(); ++i) {
        if (g_rank == 0) {
            const double t0 = now_us();
            const VIP_RETURN rc = VipPostSend(l.vi, l.send_desc(i, 16), l.buf->mh());
            t.push_back(now_us() - t0);
            EXPECT_EQ(rc, VIP_SUCCESS);
            VIP_DESCRIPTOR *d;
            EXPECT_EQ(VipSendWait(l.vi, kWaitMs, &d), VIP_SUCCESS);
        } else {
            l.recv_wait();
        }
    }
    l.close();
    return t;
}

// Rank 1 times each successful VipRecvDone of n messages that have all arrived.
std::vector<double> recv_done_times(const std::string &profile, int n) {
    Link l;
    std::vector<double> t;
    l.open(profile);
    if (g_rank == 1)
        for (int i = 0; i < n; ++i) l.post_recv(i);
    barrier();
    if (g_rank == 0)
        for (int i = 0; i < n; ++i) l.send_wait(i, 16);
    barrier(); // every message sent (reliable delivery: on the wire)
    if (g_rank == 1) {
        for (int got = 0; got < n;) {
            VIP_DESCRIPTOR *d;
            const double t0 = now_us();
            const VIP_RETURN rc = VipRecvDone(l.vi, &d);
            const double dt = now_us() - t0;
            if (rc == VIP_SUCCESS) {
                t.push_back(dt);
                ++got;
            }
        }
    }
    l.close();
    return t;
}

// Rank 0 measures RTT/2 of a 16-byte ping-pong (after a few warm-up rounds).
std::vector<double> half_rtts(const std::string &profile, int n) {
    Link l;
    std::vector<double> t;
    l.open(profile);
    l.post_recv(0);
    barrier();
    for (int i = 0; i < n + 5 && !::testing::Test::HasFatalFailure(); ++i) {
        if (g_rank == 0) {
            const double t0 = now_us();
            l.send_wait(i, 16);
            l.recv_wait();
            l.post_recv(i + 1);
            if (i >= 5) t.push_back((now_us() - t0) / 2);
        } else {
            l.recv_wait();
            l.post_recv(i + 1);
            l.send_wait(i, 16);
        }
    }
    l.close();
    return t;
}

// Rank 0 times bursts of `burst` back-to-back sends: first post to last completion.
std::vector<double> burst_times(const std::string &profile, int burst, int reps) {
    Link l;
    std::vector<double> t;
    l.open(profile);
    for (int r = 0; r < reps && !::testing::Test::HasFatalFailure(); ++r) {
        if (g_rank == 1)
            for (int i = 0; i < burst; ++i) l.post_recv(i);
        barrier();
        if (g_rank == 0) {
            const double t0 = now_us();
            for (int i = 0; i < burst; ++i)
                NT_EXPECT_RC(VIP_SUCCESS, VipPostSend(l.vi, l.send_desc(i, 16), l.buf->mh()));
            for (int i = 0; i < burst; ++i) {
                VIP_DESCRIPTOR *d;
                NT_EXPECT_RC(VIP_SUCCESS, VipSendWait(l.vi, kWaitMs, &d));
            }
            t.push_back(now_us() - t0);
        } else {
            for (int i = 0; i < burst; ++i) l.recv_wait();
        }
        barrier();
    }
    l.close();
    return t;
}

} // namespace

TEST(NicfwProfile, SendOverheadIsSpunInPostSend) {
    const auto base = post_send_times("", 120);
    const auto prof = post_send_times("synthetic:os=20000,or=0,L=0,g=0", 120);
    if (g_rank != 0) return;
    ASSERT_EQ(prof.size(), 120u);
    const double mb = median(base), mp = median(prof);
    std::printf("[ o_s ] VipPostSend median: no profile %.2f us, os=20000 %.2f us (min %.2f us)\n", mb, mp,
                minimum(prof));
    EXPECT_GE(minimum(prof), 20.0) << "a post must spin at least o_s = 20 us";
    if (inline_mode()) {
        // Inline, a post does the same work with and without the profile (plus the
        // spin), so compare against the fastest unprofiled post: sampling noise
        // between two medians cannot make this flaky.
        EXPECT_GE(mp - minimum(base), 20.0) << "median post time did not grow by o_s";
    }
    // With a firmware thread an unprofiled post sometimes pays a futex wake of the
    // sleeping firmware that a profiled one (20 us later) does not: allow 1 us.
    EXPECT_GE(mp - mb, 19.0) << "median post time grew by less than o_s";
    EXPECT_LT(mp - mb, 20.0 + 2000.0) << "o_s costs far more than 20 us";
}

TEST(NicfwProfile, ReceiveOverheadIsSpunInASuccessfulRecvDone) {
    const auto base = recv_done_times("", 100);
    const auto prof = recv_done_times("synthetic:or=20000", 100);
    if (g_rank != 1) return;
    ASSERT_EQ(prof.size(), 100u);
    std::printf("[ o_r ] VipRecvDone median: no profile %.2f us, or=20000 %.2f us\n", median(base), median(prof));
    EXPECT_GE(minimum(prof), 20.0);
    EXPECT_GE(median(prof) - minimum(base), 20.0);
    EXPECT_LT(median(prof) - median(base), 20.0 + 2000.0);
}

TEST(NicfwProfile, WireLatencyDelaysDelivery) {
    const auto base = half_rtts("", 100);
    const auto prof = half_rtts("synthetic:os=0,or=0,L=50000,g=0", 100);
    if (g_rank != 0) return;
    ASSERT_EQ(prof.size(), 100u);
    std::printf("[ L ] RTT/2 of 16 bytes, median: no profile %.2f us, L=50000 %.2f us (min %.2f us)\n", median(base),
                median(prof), minimum(prof));
    EXPECT_GE(minimum(prof), 50.0) << "a packet was delivered before send time + L";
    // Generous: with firmware threads on a loaded 2-core machine, a round trip is
    // dominated by the scheduler.  A unit mistake (50 ms) would still show.
    // Bounded below the 50 ms a unit mistake (ms for us) would give.
    EXPECT_LT(median(prof), 40000.0) << "L = 50 us costs far more than 50 us";
}

TEST(NicfwProfile, GapSpacesInjections) {
    const auto base = burst_times("", 20, 3);
    const auto prof = burst_times("synthetic:g=30000", 20, 3);
    if (g_rank != 0) return;
    ASSERT_EQ(prof.size(), 3u);
    std::printf("[ g ] burst of 20 sends: no profile %.2f us, g=30000 min %.2f us\n", minimum(base), minimum(prof));
    for (double t : prof) EXPECT_GE(t, 19 * 30.0) << "20 injections need at least 19 gaps of 30 us";
    EXPECT_LT(minimum(prof), 19 * 30.0 + minimum(base) + 20000.0);
}

// Not a profile, but the wire's back-pressure seen through VIPL: rank 0 streams
// far more than the receive FIFO holds while rank 1 is away; when rank 1 comes
// back every message arrives, in order and intact (reliable delivery).
// The two-rank wire tests' end: rank 0 disconnects, rank 1 waits to see the
// loss (so no disconnect message is left on the wire for the next NIC of this
// process) and disconnects too; then the receives left are drained and the VI
// destroyed.
static void disconnect_and_destroy(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi) {
    if (g_rank == 0) {
        NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(vi));
    } else {
        const double end = now_us() + 5e6;
        while (vi_state(vi) == VIP_STATE_CONNECTED && now_us() < end) VipxProgress(nic);
        NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(vi));
    }
    VIP_DESCRIPTOR *d;
    while (VipRecvDone(vi, &d) == VIP_SUCCESS) {}
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyVi(vi));
}

TEST(NicfwWire, BackPressureLosesNothing) {
    constexpr int kMsgs = 1500;
    constexpr uint32_t kLen = 4096; // 1500 x 4 KiB = 6 MiB through a 1 MiB FIFO
    unsetenv("VIPL_NICFW_PROFILE");
    VIP_NIC_HANDLE nic = nullptr;
    NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
    VIP_PROTECTION_HANDLE tag = nullptr;
    NT_ASSERT_OK(VipCreatePtag(nic, &tag));
    {
        Buffers buf(nic, tag, kMsgs, kLen);
        NT_ASSERT_OK(buf.rc());
        VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_DELIVERY);
        VIP_VI_HANDLE vi = nullptr;
        NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &vi));
        const int peer = 1 - g_rank;
        auto local = net_addr(nic, g_rank, "bp-" + std::to_string(g_rank));
        auto remote = net_addr(nic, peer, "bp-" + std::to_string(peer));
        NT_ASSERT_OK(VipConnectPeerRequest(vi, as_addr(local), as_addr(remote), kWaitMs));
        VIP_VI_ATTRIBUTES ra;
        NT_ASSERT_OK(VipConnectPeerWait(vi, &ra));
        if (g_rank == 1) {
            for (int i = 0; i < kMsgs; ++i) NT_ASSERT_OK(VipPostRecv(vi, buf.recv(i), buf.mh()));
        }
        barrier();
        int bad = 0, done = 0;
        if (g_rank == 0) {
            for (int i = 0; i < kMsgs; ++i) {
                fill(buf.data(i), kLen, 77u + static_cast<uint32_t>(i));
                NT_ASSERT_OK(VipPostSend(vi, buf.send(i, kLen), buf.mh()));
            }
            for (int i = 0; i < kMsgs; ++i) {
                VIP_DESCRIPTOR *d;
                NT_ASSERT_OK(VipSendWait(vi, 30000, &d)) << "send " << i;
                if (d->CS.Status & VIP_STATUS_ERROR_MASK) ++bad;
                ++done;
            }
        } else {
            struct timespec ts {
                0, 50 * 1000 * 1000
            };
            nanosleep(&ts, nullptr); // away: the sender fills our FIFO and must wait
            for (int i = 0; i < kMsgs; ++i) {
                VIP_DESCRIPTOR *d;
                NT_ASSERT_OK(VipRecvWait(vi, 30000, &d)) << "receive " << i;
                ASSERT_EQ(d, buf.desc(i)) << "receives complete in order";
                if ((d->CS.Status & VIP_STATUS_ERROR_MASK) || d->CS.Length != kLen ||
                    !check(buf.data(i), kLen, 77u + static_cast<uint32_t>(i)))
                    ++bad;
                ++done;
            }
        }
        EXPECT_EQ(done, kMsgs);
        EXPECT_EQ(bad, 0) << "messages lost or corrupted under back-pressure";
        barrier();
        disconnect_and_destroy(nic, vi);
    }
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(nic, tag));
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(nic));
    barrier();
}

// A short send posted behind a send that waits for room in the peer's FIFO:
// the short one (which on an idle VI would take the fast transmit) must not
// pass it.  Rank 1 posts its receives and stays away (in the job barrier, no
// VIPL call: in inline mode its firmware does not run) while rank 0 posts
// more 4 KiB sends than its FIFO holds, then the 16-byte one; rank 0 checks
// that the last large send was still waiting for room then and that neither
// it nor the short one completed early, and rank 1, back, that every message
// arrived in order and intact, the short one last.
TEST(NicfwWire, ShortSendBehindASendWaitingForRoom) {
    constexpr int kBig = 400; // 400 x 4 KiB = 1.6 MiB: more than the 1 MiB FIFO
    constexpr uint32_t kLen = 4096;
    constexpr uint32_t kShort = 16;
    unsetenv("VIPL_NICFW_PROFILE");
    const char *mode = std::getenv("VIPL_NICFW_MODE");
    const bool inline_mode = !mode || std::string(mode) == "inline";
    VIP_NIC_HANDLE nic = nullptr;
    NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
    VIP_PROTECTION_HANDLE tag = nullptr;
    NT_ASSERT_OK(VipCreatePtag(nic, &tag));
    {
        Buffers buf(nic, tag, kBig + 1, kLen);
        NT_ASSERT_OK(buf.rc());
        VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_DELIVERY);
        VIP_VI_HANDLE vi = nullptr;
        NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &vi));
        const int peer = 1 - g_rank;
        auto local = net_addr(nic, g_rank, "sb-" + std::to_string(g_rank));
        auto remote = net_addr(nic, peer, "sb-" + std::to_string(peer));
        NT_ASSERT_OK(VipConnectPeerRequest(vi, as_addr(local), as_addr(remote), kWaitMs));
        VIP_VI_ATTRIBUTES ra;
        NT_ASSERT_OK(VipConnectPeerWait(vi, &ra));
        if (g_rank == 1) {
            for (int i = 0; i <= kBig; ++i) NT_ASSERT_OK(VipPostRecv(vi, buf.recv(i), buf.mh()));
        }
        barrier();
        const auto seed = [](int i) { return 900u + static_cast<uint32_t>(i); };
        if (g_rank == 0) {
            for (int i = 0; i < kBig; ++i) {
                fill(buf.data(i), kLen, seed(i));
                NT_ASSERT_OK(VipPostSend(vi, buf.send(i, kLen), buf.mh()));
            }
            VIP_DESCRIPTOR *last = buf.desc(kBig - 1);
            VIP_DESCRIPTOR *shrt = buf.send(kBig, kShort);
            fill(buf.data(kBig), kShort, seed(kBig));
            NT_ASSERT_OK(VipPostSend(vi, shrt, buf.mh()));
            const bool last_done = (last->CS.Status & VIP_STATUS_DONE) != 0;
            const bool short_done = (shrt->CS.Status & VIP_STATUS_DONE) != 0;
            if (inline_mode) {
                EXPECT_FALSE(last_done) << "the FIFO never filled: the test did not make a send wait for room";
            }
            EXPECT_FALSE(short_done && !last_done) << "the short send completed before the send ahead of it";
        }
        barrier(); // rank 1 comes back
        int bad = 0;
        if (g_rank == 0) {
            for (int i = 0; i <= kBig; ++i) {
                VIP_DESCRIPTOR *d;
                NT_ASSERT_OK(VipSendWait(vi, 30000, &d)) << "send " << i;
                EXPECT_EQ(d, buf.desc(i)) << "sends complete in order";
                if (d->CS.Status & VIP_STATUS_ERROR_MASK) ++bad;
            }
        } else {
            for (int i = 0; i <= kBig; ++i) {
                VIP_DESCRIPTOR *d;
                NT_ASSERT_OK(VipRecvWait(vi, 30000, &d)) << "receive " << i;
                ASSERT_EQ(d, buf.desc(i)) << "receives complete in order";
                const uint32_t len = i < kBig ? kLen : kShort;
                if ((d->CS.Status & VIP_STATUS_ERROR_MASK) || d->CS.Length != len || !check(buf.data(i), len, seed(i)))
                    ++bad;
            }
        }
        EXPECT_EQ(bad, 0) << "messages lost, corrupted or reordered behind a send waiting for room";
        barrier();
        disconnect_and_destroy(nic, vi);
    }
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(nic, tag));
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(nic));
    barrier();
}

int main(int argc, char **argv) {
    if (vipl_boot_init() != VIPL_BOOT_OK) {
        std::fprintf(stderr, "nicfw_profile_tests: job bootstrap failed; run under vipl-run -n 2\n");
        return 2;
    }
    g_rank = vipl_boot_rank();
    if (vipl_boot_size() != 2) {
        std::fprintf(stderr, "nicfw_profile_tests: needs exactly 2 ranks (vipl-run -n 2), got %d\n", vipl_boot_size());
        return 2;
    }
    ::testing::InitGoogleTest(&argc, argv);
    const int rc = RUN_ALL_TESTS();
    vipl_boot_finalize();
    return rc;
}
