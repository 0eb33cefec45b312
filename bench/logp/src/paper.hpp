// paper.hpp - the published figures printed next to ours.  The data file is
// bench/logp/paper_figures.json (every number copied from the text of
// Begel, Buonadonna, Culler, Gay 2001, and Pakin, Lauria, Chien 1995 for FM's metrics and
// FM's own row, Prylli, Tourancheau 1997 for BIP's row); it
// is compiled into the program so a report never lacks it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace logp {

const nlohmann::json &paper_figures();
std::string paper_citation(); // one line naming the paper
std::string fm_citation();
std::string bip_citation();

// A layer's own paper figures (fm_metrics rows naming it: [FM1] for fm, [BIP]
// for bip), printed under our row of that layer; empty for other layers.
std::vector<const nlohmann::json *> paper_layer_rows(const std::string &layer);
// "paper [FM1]" for a row with a reference key, else "paper (FM)".
std::string paper_row_label(const nlohmann::json &row);

// The paper's Table 2 row for a layer on the LANai 7 (nullptr if none).
const nlohmann::json *paper_logp_row(const std::string &layer);
// Number at key in obj, NaN when missing or null.
double paper_number(const nlohmann::json &obj, const char *key);

// The board a nicfw cost-model profile models ("LANai 7" for lanai7, "LANai 4"
// for lanai4, else ""): the paper's figures of that board get an error row.
std::string profile_board(const std::string &profile);
// (ours - paper) / paper in percent; NaN unless both are finite and paper != 0.
double relative_error_pct(double ours, double paper);

// Names compared case- and punctuation-insensitively, "receive" == "recv".
std::string normalize_operation(const std::string &name);

} // namespace logp
