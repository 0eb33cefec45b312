// progress_test.cpp - logp's progress: one redrawn line on a terminal (run
// under a pseudo-terminal here), plain lines otherwise, and the time-left
// estimate.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "progress.hpp"

using logp::Progress;

namespace {

// A short run: two layers, two sweeps each.
void simulate_run() {
    Progress p(true);
    p.plan(2);
    for (int l = 0; l < 2; ++l) {
        p.layer(l, l == 0 ? "vi" : "am-v3", 2);
        p.note("connecting");
        for (const char *sweep : {"LogP", "bandwidth"}) {
            p.begin(std::string(l == 0 ? "vi: " : "am-v3: ") + sweep, 30);
            for (int i = 0; i < 30; ++i) p.step("step " + std::to_string(i));
            p.end();
        }
    }
}

// Output of simulate_run() in a child whose stderr is a terminal.
std::string run_on_terminal() {
    int master = -1;
    winsize ws{};
    ws.ws_col = 100;
    ws.ws_row = 24;
    pid_t pid = forkpty(&master, nullptr, nullptr, &ws);
    if (pid == 0) {
        simulate_run();
        _exit(0);
    }
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(master, buf, sizeof buf)) > 0) out.append(buf, std::size_t(n)); // EIO at the child's exit
    int status = 0;
    waitpid(pid, &status, 0);
    close(master);
    return out;
}

} // namespace

TEST(Progress, OneLineRedrawnOnATerminal) {
    std::string out = run_on_terminal();
    ASSERT_FALSE(out.empty());
    // No line is ever ended: every update starts with "\r\033[K" (carriage
    // return, erase line), and the run ends with the line erased.
    EXPECT_EQ(out.find('\n'), std::string::npos) << out;
    EXPECT_NE(out.find("\r\033[Klogp [1/2] vi: LogP 30/30"), std::string::npos);
    EXPECT_NE(out.find("\r\033[Klogp [2/2] am-v3: bandwidth 7/30 (step 6)"), std::string::npos);
    EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K");
    // Every redraw fits the terminal's 100 columns.
    std::size_t pos = 0;
    while ((pos = out.find("\r\033[K", pos)) != std::string::npos) {
        std::size_t next = out.find("\r\033[K", pos + 4);
        std::size_t len = (next == std::string::npos ? out.size() : next) - (pos + 4);
        EXPECT_LT(len, 100u);
        pos += 4;
    }
}

TEST(Progress, PlainLinesWhenNotATerminal) {
    // ctest's stderr is a pipe or a file: the child writes plain lines.
    testing::internal::CaptureStderr();
    simulate_run();
    std::string out = testing::internal::GetCapturedStderr();
    if (isatty(STDERR_FILENO)) GTEST_SKIP() << "stderr is a terminal";
    EXPECT_EQ(out.find('\r'), std::string::npos);
    EXPECT_NE(out.find("logp: vi: LogP (30 steps)\n"), std::string::npos);
    EXPECT_NE(out.find("logp:   am-v3: bandwidth [30/30] step 29\n"), std::string::npos);
}

TEST(Progress, FractionFollowsLayersAndSweeps) {
    Progress p(false);
    p.plan(4);
    EXPECT_DOUBLE_EQ(p.fraction(), 0.0);
    p.layer(1, "am-v3", 2);
    p.begin("am-v3: LogP", 10);
    for (int i = 0; i < 5; ++i) p.step("");
    EXPECT_DOUBLE_EQ(p.fraction(), (1 + 0.25) / 4);
    p.end();
    EXPECT_DOUBLE_EQ(p.fraction(), (1 + 0.5) / 4);
}

TEST(Progress, TimeLeft) {
    EXPECT_EQ(Progress::eta_text(1.0, 0.5), "");   // too early to tell
    EXPECT_EQ(Progress::eta_text(10.0, 0.01), ""); // too little done
    EXPECT_EQ(Progress::eta_text(10.0, 0.5), "~10 s left");
    EXPECT_EQ(Progress::eta_text(30.0, 0.25), "~1 min 30 s left");
    EXPECT_EQ(Progress::eta_text(30.0, 1.0), "");
}
