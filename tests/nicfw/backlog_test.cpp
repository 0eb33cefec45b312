// backlog_test.cpp - control packets (Disc, ConnErr) that wait for room in a
// peer's FIFO: the firmware's backlog (Firmware::send_ctl_reliably).  Nothing
// wakes the firmware when that peer drains its FIFO, so the backlog is work:
// has_work() (what a firmware thread asks before it sleeps) says so, the
// packet leaves at the first step after the peer made room, and a peer whose
// process is gone (it never drains) does not keep it pending for ever.
//
// Rank 0's NIC (NicHw) in this process on a job of two; the test is rank 1's
// end of the wire, which no NIC drains.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "nic.hpp"
#include "wire.hpp"

using namespace nicfw;

namespace {

struct Job {
    std::string id = "backlog-test-" + std::to_string(getpid());
    ~Job() { unlink(("/dev/shm/viastack-" + id + "-wire").c_str()); }
};

// Rank 1's FIFO filled with one-slot packets from rank 0's NIC (control
// packets may use all of it); returns how many.
size_t fill(NicHw &hw) {
    size_t n = 0;
    while (hw.fw.send_ctl(1, Op::LinkAck, 0, 0, 0, nullptr, 0)) ++n;
    return n;
}

struct Taken {
    size_t packets = 0, discs = 0;
    uint32_t disc_imm = 0;
};
// Takes everything off rank 1's FIFO.
Taken drain(Wire &w) {
    Taken t;
    uint64_t head = w.ctl(1).head.load(std::memory_order_acquire);
    while (const PacketHeader *h = wire_peek(w, 1, head)) {
        if (h->op != Op::Pad) ++t.packets;
        if (h->op == Op::Disc) ++t.discs, t.disc_imm = h->imm;
        head = wire_consume(w, 1, head, h);
    }
    return t;
}

TEST(NicfwBacklog, WaitingNoticeIsWorkAndLeavesOnceThePeerMadeRoom) {
    Job job;
    Config cfg;
    cfg.mode = Mode::Inline;
    NicHw hw(cfg, job.id, 0, 2);
    Wire peer(job.id, 2, cfg.ring_bytes);
    const size_t n = fill(hw);
    ASSERT_GT(n, 0u);
    EXPECT_FALSE(hw.fw.has_work());
    hw.fw.send_ctl_reliably(1, Op::Disc, 5, 6, 77); // no room: backlog
    EXPECT_TRUE(hw.fw.has_work())
        << "a notice waits for room in a peer's FIFO, yet has_work() says a firmware thread may sleep";
    hw.fw.step(); // still no room
    Taken t = drain(peer);
    EXPECT_EQ(t.packets, n);
    EXPECT_EQ(t.discs, 0u);
    hw.fw.step(); // room now
    t = drain(peer);
    EXPECT_EQ(t.packets, 1u);
    EXPECT_EQ(t.discs, 1u);
    EXPECT_EQ(t.disc_imm, 77u);
    EXPECT_FALSE(hw.fw.has_work());
}

TEST(NicfwBacklog, NoticeToAPeerWhoseProcessIsGoneIsDropped) {
    Job job;
    Config cfg;
    cfg.mode = Mode::Inline;
    NicHw hw(cfg, job.id, 0, 2);
    Wire peer(job.id, 2, cfg.ring_bytes);
    // Rank 1's process: a child that has exited (a zombie until reaped, which
    // the peer watch's pidfd reports as gone).
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(0);
    siginfo_t si{};
    ASSERT_EQ(waitid(P_PID, child, &si, WEXITED | WNOWAIT), 0);
    peer.ctl(1).pid.store(static_cast<uint32_t>(child), std::memory_order_release);
    ASSERT_GT(fill(hw), 0u);
    hw.fw.send_ctl_reliably(1, Op::Disc, 5, 6, 77);
    ASSERT_TRUE(hw.fw.has_work());
    // Housekeeping (the peer watch) runs every 1024 steps.
    for (int i = 0; i < 2 * 1024 && hw.fw.has_work(); ++i) hw.fw.step();
    EXPECT_FALSE(hw.fw.has_work()) << "the notice to a dead peer is still pending";
    drain(peer);
    hw.fw.step();
    EXPECT_EQ(drain(peer).discs, 0u);
    waitpid(child, nullptr, 0);
}

} // namespace
