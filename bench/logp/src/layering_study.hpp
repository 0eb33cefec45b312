// layering_study.hpp - the layering study of [FM2] inside a logp run
// (docs/logp.md, "The layering study"): how much of the layer below's
// one-way streaming bandwidth a layer delivers upward, by message size, for
//   mp-fm1 / fm        a tagged layer written as an FM 1.x client
//   mp-fm2 / fm        the same layer using FM 2.x's features
//   bip / vi           BIP over the raw VI primitive carrying its data at that
//                      size (sends up to BIP's switch point, RDMA writes above)
//   am-medium / vi     AM-2 medium requests (sends up to 4 KB, RDMA above)
//   am-long / vi-rdma  AM-2 long requests over RDMA writes
// The measurements are bench/layering's layering_bw jobs (two processes
// each, started by rank 0 under vipl-run while rank 1 waits, as the peers
// are); this module runs them, keeps their raw rows, and turns them into the
// report's table, plot and JSON.
#pragma once

#include "results.hpp"
#include "table.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace logp {

class Job;
class Progress;

struct LayeringPlan {
    std::string vipl_run;    // the launcher
    std::string layering_bw; // the benchmark ("" when not built)
    int rounds = 5;
    double mbytes = 4;             // bytes per measurement, MB (sets the message count)
    std::size_t bip_eager = 16384; // BIP's switch point (VIASTACK_BIP_EAGER)
    double timeout_s = 900;
};

// Rank 0 runs the study while rank 1 waits in a barrier; both return.
void run_layering_phase(const Job &job, const LayeringPlan &plan, Report &r, Progress &progress);

// layering_bw next to logp in the build tree, LOGP_LAYERING_BW, or PATH; "" when absent.
std::string find_layering_bw(const std::string &logp_exe);

// Parses layering_bw output rows ("<layer> <bytes> <round> <messages> <MB/s>")
// into study.rows, numbering them `round` when round >= 0 (a -r 1 job).
// Returns false and sets *why on an ERROR line.
bool parse_layering_rows(const std::string &output, int round, LayeringStudy &study, std::string *why);
// The pairs from the rows: bandwidths are medians over the rounds; each
// fraction is the median over the rounds of the ratio within the round.
void tabulate_layering(LayeringStudy &study);

Table layering_table(const Report &r);
// gnuplot data (one block per pairing: bytes, percent) and the plot body; "" when nothing was measured.
std::string layering_plot_data(const LayeringStudy &s);
std::string layering_plot_body(const LayeringStudy &s);

nlohmann::json layering_to_json(const LayeringStudy &s);
LayeringStudy layering_from_json(const nlohmann::json &j);

} // namespace logp
