// The mpi layer's reading of logp_mpi's output (bench/logp/src/layer_mpi.*):
// the metrics, the bandwidth curve, Table 2's row and the breakdown into
// VIPL, VIPL's empty polls and "MPI + rxm + provider".
#include "layer_mpi.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace logp;

namespace {

// Lines as logp_mpi prints them (shortened counter lists), with mpirun's noise between.
const char *kOutput =
    "{\"metric\":\"rtt_half_us\",\"bytes\":16,\"median\":1.20000,\"spread\":0.0500}\n"
    "{\"metric\":\"g_us\",\"bytes\":16,\"median\":0.40000}\n"
    "--------------------------------------------------------------------------\n"
    "{\"metric\":\"o_s_us\",\"bytes\":16,\"median\":0.30000}\n"
    "{\"metric\":\"o_r_us\",\"bytes\":16,\"median\":0.70000,\"spread\":0.1000}\n"
    "{\"metric\":\"bw_MBps\",\"bytes\":16,\"median\":16.0}\n"
    "{\"metric\":\"bw_MBps\",\"bytes\":65536,\"median\":6553.6}\n"
    "{\"metric\":\"breakdown\",\"messages\":100,\"send_ns\":1000.00,\"recv_ns\":2000.00,"
    "\"sender\":[{\"name\":\"vipl.VipPostSend\",\"category\":\"Base VI\",\"count\":100,\"ns\":30000.0},"
    "{\"name\":\"firmware.send\",\"category\":\"Firmware\",\"count\":100,\"ns\":10000.0}],"
    "\"receiver\":[{\"name\":\"vipl.VipCQDone\",\"category\":\"Event Notification\",\"count\":100,\"ns\":50000.0},"
    "{\"name\":\"vipl.wait (not arrived)\",\"category\":\"Waiting\",\"count\":400,\"ns\":10000.0}]}\n";

MpiRun measured_run() {
    MpiRun run = parse_logp_mpi_output(kOutput);
    run.status = {"measured", ""};
    return run;
}

} // namespace

TEST(MpiLayer, ReadsTheProgramsLines) {
    MpiRun run = parse_logp_mpi_output(kOutput);
    EXPECT_DOUBLE_EQ(run.metrics.at("rtt_half_us"), 1.2);
    EXPECT_DOUBLE_EQ(run.metrics.at("o_r_us"), 0.7);
    EXPECT_DOUBLE_EQ(run.spreads.at("o_r_us"), 0.1);
    ASSERT_EQ(run.bandwidth.size(), 2u);
    EXPECT_EQ(run.bandwidth[1].bytes, 65536u);
    EXPECT_DOUBLE_EQ(run.bandwidth[1].us_per_msg, 10.0); // 65536 B at 6553.6 B/us
    EXPECT_FALSE(run.breakdown_line.empty());
}

TEST(MpiLayer, RowHasLFromTheThreeMedians) {
    LogPRow row = mpi_logp_row(measured_run(), 0.5);
    EXPECT_NEAR(row.L_us, 0.2, 1e-12); // 1.2 - 0.3 - 0.7
    EXPECT_NEAR(row.delta_us, 0.7, 1e-12);
    EXPECT_EQ(row.L_state, "measured");
    MpiRun slow = measured_run();
    slow.metrics["o_r_us"] = 1.0; // o_s + o_r > RTT/2: L not reported, never negative
    row = mpi_logp_row(slow, 0.5);
    EXPECT_TRUE(std::isnan(row.L_us));
    EXPECT_EQ(row.L_state, "inconsistent");
    EXPECT_FALSE(row.warnings.empty());
}

TEST(MpiLayer, BreakdownSplitsOffVIPLAndItsEmptyPolls) {
    Breakdown bd = mpi_breakdown(measured_run());
    ASSERT_TRUE(bd.status.measured()) << bd.status.note;
    EXPECT_EQ(bd.operations, 100u);
    EXPECT_DOUBLE_EQ(bd.host_ns, 3000);
    ASSERT_EQ(bd.categories.size(), 3u);
    EXPECT_DOUBLE_EQ(bd.categories[1].ns, 300 + 500); // VipPostSend 300 + VipCQDone 500 per message
    EXPECT_DOUBLE_EQ(bd.categories[2].ns, 100);       // the receiver's polls that found nothing
    EXPECT_DOUBLE_EQ(bd.categories[0].ns, 3000 - 800 - 100);
    EXPECT_DOUBLE_EQ(bd.items[0].ns, 1000 - 300); // in MPI_Send, less VIPL
    EXPECT_DOUBLE_EQ(bd.items[1].ns, 2000 - 500 - 100);
    ASSERT_EQ(bd.inner.size(), 1u); // the firmware inside VipPostSend: shown, not added
    EXPECT_DOUBLE_EQ(bd.firmware_ns, 100);
}

TEST(MpiLayer, AFailedRunGivesNoFiguresAndSaysWhy) {
    MpiRun run = parse_logp_mpi_output("mpirun: something went wrong\n");
    run.status = {"failed", "logp_mpi over vader exit 1: something went wrong"};
    EXPECT_TRUE(mpi_figures(run).empty());
    EXPECT_EQ(mpi_breakdown(run).status.state, "failed");
    EXPECT_EQ(mpi_peer_result(MpiTransport::vader, run).status.note, run.status.note);
    EXPECT_EQ(mpi_logp_row(run, 0.5).status.state, "failed");
}

TEST(MpiLayer, PeersListIsReadInOrderAndBadItemsAreNamed) {
    std::vector<MpiTransport> peers;
    std::string error;
    ASSERT_TRUE(parse_mpi_peers(kMpiPeersDefault, &peers, &error)) << error;
    EXPECT_EQ(peers, (std::vector<MpiTransport>{MpiTransport::vader, MpiTransport::shm, MpiTransport::tcp}));
    ASSERT_TRUE(parse_mpi_peers("shm", &peers, &error));
    EXPECT_EQ(peers, std::vector<MpiTransport>{MpiTransport::shm});
    ASSERT_TRUE(parse_mpi_peers("none", &peers, &error));
    EXPECT_TRUE(peers.empty());
    EXPECT_FALSE(parse_mpi_peers("vader,ucx", &peers, &error));
    EXPECT_NE(error.find("unknown MPI peer 'ucx'"), std::string::npos) << error;
    EXPECT_FALSE(parse_mpi_peers("shm,shm", &peers, &error));
    EXPECT_NE(error.find("'shm' given twice"), std::string::npos) << error;
    for (const char *empty : {"", "vader,", ",", "vader,,shm"}) {
        EXPECT_FALSE(parse_mpi_peers(empty, &peers, &error)) << empty;
        EXPECT_FALSE(error.empty());
    }
    EXPECT_EQ(mpi_peer_tool(MpiTransport::shm), "logp_mpi shm");
}
