// render_json.cpp - the "tables" array of the JSON report (see render.hpp):
// the same tables as the terminal and report.md, with every cell's number.
#include "render.hpp"

#include <cmath>

namespace logp {

const char *row_kind_name(RowKind k) {
    switch (k) {
    case RowKind::ours: return "ours";
    case RowKind::detail: return "detail";
    case RowKind::paper: return "paper";
    case RowKind::peer: return "peer";
    case RowKind::status: return "status";
    case RowKind::heading: return "heading";
    }
    return "ours";
}

nlohmann::json render_json(const Table &t) {
    using json = nlohmann::json;
    json columns = json::array();
    for (const auto &c : t.columns)
        columns.push_back({{"header", c.header}, {"align", c.align == Align::left ? "left" : "right"}});
    json rows = json::array();
    for (const auto &row : t.rows) {
        json cells = json::array();
        for (const auto &c : row.cells)
            cells.push_back({{"text", c.text}, {"value", std::isfinite(c.value) ? json(c.value) : json(nullptr)}});
        rows.push_back({{"kind", row_kind_name(row.kind)}, {"level", row.level}, {"cells", cells}, {"span", row.span}});
    }
    return {{"id", t.id},         {"title", t.title}, {"caption", t.caption}, {"status", t.status},
            {"columns", columns}, {"rows", rows},     {"notes", t.notes},     {"plot", t.plot}};
}

nlohmann::json render_json(const std::vector<Table> &tables) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto &t : tables) a.push_back(render_json(t));
    return a;
}

} // namespace logp
