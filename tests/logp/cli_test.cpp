// The logp command itself: the synthetic known-answer run, re-rendering from
// JSON, and clear errors for bad input.  (The two-process runs over nicfw are
// in smoke_test.cpp.)
#include "results_json.hpp"
#include "subprocess.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

using namespace logp;
namespace fs = std::filesystem;

namespace {
fs::path scratch(const char *stem) {
    return fs::path(::testing::TempDir()) / (std::string(stem) + std::to_string(getpid()));
}
} // namespace

TEST(LogpCli, SyntheticRunReportsKnownAnswers) {
    fs::path dir = scratch("logp_cli_syn");
    fs::path json = dir / "out.json";
    fs::create_directories(dir);
    // A shared machine can swamp one run (busy-waits only ever run long): a few attempts.
    bool found = false;
    std::string last;
    for (int attempt = 0; attempt < 3 && !found; ++attempt) {
        ProcessResult r = run_process({LOGP_BIN, "--synthetic", "o_s=2,o_r=3,g=6,L=8,t0=4,r_inf=200", "--quick",
                                       "--out", (dir / "report").string(), "--json", json.string()},
                                      {}, 120);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("known answer"), std::string::npos) << r.output;
        Report rep = read_json_file(json.string());
        ASSERT_EQ(rep.logp.size(), 1u);
        const LogPRow &row = rep.logp[0];
        EXPECT_EQ(row.layer, "synthetic");
        EXPECT_DOUBLE_EQ(row.expect_o_s_us, 2);
        ASSERT_EQ(rep.bandwidth.size(), 1u);
        const BandwidthCurve &c = rep.bandwidth[0];
        found = std::abs(row.o_s_us - 2) < 0.5 && std::abs(row.o_r_us - 3) < 0.75 && std::abs(row.g_us - 6) < 1.5 &&
            std::abs(row.L_us - 8) < 2 && std::abs(c.t0_us - 4) < 0.8 && std::abs(c.n_half_bytes - 800) < 160;
        last = r.output;
    }
    EXPECT_TRUE(found) << "no run found the known answers; last output:\n" << last;
    EXPECT_TRUE(fs::exists(dir / "report" / "report.md"));
    EXPECT_TRUE(fs::exists(dir / "report" / "logp.json"));

    // --from-json renders the same report again without measuring.
    ProcessResult again =
        run_process({LOGP_BIN, "--from-json", json.string(), "--out", (dir / "again").string()}, {}, 60);
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_NE(again.output.find("Table 2"), std::string::npos);
    EXPECT_TRUE(fs::exists(dir / "again" / "report.md"));
    fs::remove_all(dir);
}

TEST(LogpCli, BadInputGetsAClearError) {
    ProcessResult bad_layer = run_process({LOGP_BIN, "--layers", "vi,bogus", "--no-peers"}, {}, 30);
    EXPECT_EQ(bad_layer.exit_code, 2);
    EXPECT_NE(bad_layer.output.find("unknown layer 'bogus'"), std::string::npos) << bad_layer.output;

    ProcessResult bad_peer = run_process({LOGP_BIN, "--layers", "mpi", "--mpi-peers", "vader,ucx"}, {}, 30);
    EXPECT_EQ(bad_peer.exit_code, 2);
    EXPECT_NE(bad_peer.output.find("unknown MPI peer 'ucx' in --mpi-peers (known: vader, shm, tcp; or none)"),
              std::string::npos)
        << bad_peer.output;

    ProcessResult bad_syn = run_process({LOGP_BIN, "--synthetic", "o_s=fast"}, {}, 30);
    EXPECT_NE(bad_syn.exit_code, 0);
    EXPECT_NE(bad_syn.output.find("o_s=fast"), std::string::npos) << bad_syn.output;

    ProcessResult bad_iter = run_process({LOGP_BIN, "--iterations", "0"}, {}, 30);
    EXPECT_NE(bad_iter.exit_code, 0);
    EXPECT_NE(bad_iter.output.find("iterations"), std::string::npos) << bad_iter.output;

    ProcessResult missing = run_process({LOGP_BIN, "--from-json", "/nonexistent/logp.json"}, {}, 30);
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.output.find("/nonexistent/logp.json"), std::string::npos) << missing.output;

    ProcessResult alone = run_process({LOGP_BIN, "--no-launch", "--no-peers", "--layers", "vi"}, {}, 30);
    EXPECT_EQ(alone.exit_code, 2);
    EXPECT_NE(alone.output.find("exactly 2 processes"), std::string::npos) << alone.output;

    ProcessResult no_runner = run_process({LOGP_BIN, "--no-peers", "--vipl-run", "/nonexistent/vipl-run"}, {}, 30);
    EXPECT_EQ(no_runner.exit_code, 2);
    EXPECT_NE(no_runner.output.find("vipl-run not found"), std::string::npos) << no_runner.output;
}
