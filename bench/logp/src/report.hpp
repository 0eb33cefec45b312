// report.hpp - from measurements to what the user reads: derived numbers
// (Delta, peer ratios, the bulk difference), the terminal report, and the
// report directory (gnuplot plots as SVG and PNG, one Markdown file, the
// JSON).  The terminal report and report.md are two renderings (render.hpp)
// of the same tables (tables.hpp).
#pragma once

#include "results.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace logp {

// Fills what is derived from other sections: Delta over native VI, the VI
// baseline's peak, the peer ratios, the bulk difference (Table 5), and a
// top-level warning for every row with an untrustworthy spread.
void finalize_report(Report &r, double memcpy_1k_us);

void print_report(const Report &r, std::FILE *out);

struct ReportFiles {
    std::string markdown;              // path of report.md
    std::vector<std::string> images;   // every SVG/PNG written
    std::vector<std::string> problems; // e.g. gnuplot missing: plots skipped
};
// Writes dir/report.md, dir/logp.json (same as --json), the gnuplot scripts,
// data files and plots.  Creates dir.  Throws std::runtime_error when dir cannot be written.
ReportFiles write_report_files(const Report &r, const std::string &dir);

// Median time to copy `bytes` between two warm buffers (us): Table 5's memory copy.
double measure_memcpy_us(std::size_t bytes);

// "1.234" or "-" for NaN.
std::string fmt_num(double v, int precision = 2);

} // namespace logp
