// render.hpp - the three renderings of one ReportDocument (table.hpp): the
// terminal report, report.md and the JSON "tables" array.  They decide only
// how a table looks, never what it holds.
#pragma once

#include "table.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace logp {

// Aligned columns, 100-column rules under the titles, for a terminal.
std::string render_text(const ReportDocument &doc);
std::string render_text(const Table &t);

// GitHub-flavoured Markdown; a table's plot is embedded when its stem is in drawn_plots.
std::string render_markdown(const ReportDocument &doc, const std::vector<std::string> &drawn_plots);
std::string render_markdown(const Table &t, const std::vector<std::string> &drawn_plots);

// [{id, title, caption, status, columns: [{header, align}],
//   rows: [{kind, level, cells: [{text, value}], span}], notes, plot}]
nlohmann::json render_json(const std::vector<Table> &tables);
nlohmann::json render_json(const Table &t);

const char *row_kind_name(RowKind k);

} // namespace logp
