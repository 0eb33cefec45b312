// tables.hpp - the report's tables built from a finalized Report (see
// table.hpp for the model, render.hpp for what is made of it).  One function
// per table; build_document puts them in the report's order.
#pragma once

#include "table.hpp"

namespace logp {

// "measured", or "failed: why".
std::string status_text(const Status &st);
// Cell text of a ratio: three significant digits, "-" for NaN.
Cell ratio_cell(double ratio);

std::vector<HeadField> report_head(const Report &r);
Table vi_baseline_table(const Report &r);                        // Table 1
Table logp_table(const Report &r);                               // Table 2
Table splitc_ops_table(const Report &r);                         // Figure 2
Table bandwidth_table(const Report &r);                          // Figure 5, the curves
Table fm_metrics_table(const Report &r);                         // Figure 5, FM's t0 / r_inf / n_1/2 of each curve
Table breakdown_table(const Report &r, const std::string &name); // "am-request-reply" (Table 3), "splitc-get" (Table 4)
Table mpi_breakdown_table(const Report &r);                      // the mpi layer's o_s / o_r by part (tables_mpi.cpp)
Table bulk_difference_table(const Report &r);                    // Table 5
Table peers_table(const Report &r);
Table interleaved_table(const Report &r); // ours/peer round by round (tables_peers.cpp)
Table rate_table(const Report &r);        // message rate by window, ours and the peers' (tables_rate.cpp)

// Every table above, in the order the report prints them, and the warnings.
ReportDocument build_document(const Report &r);

} // namespace logp
