// table.hpp - the report as data.  Every table of the report (Tables 1-5,
// Figures 2 and 5, the peers) is built once from a Report (tables.hpp) into
// this model, and the three renderers (render.hpp) turn the same model into
// the terminal report, report.md and the "tables" array of the JSON, so the
// three cannot disagree about what a table holds.
#pragma once

#include "results.hpp"

#include <string>
#include <utility>
#include <vector>

namespace logp {

enum class Align { left, right };

struct Column {
    std::string header; // "RTT/2", "ns/op"; units are part of the header or of the table title
    Align align = Align::right;
    int width = 9; // minimum terminal width; a longer cell widens the column
};

// One cell: the text every renderer prints, and the number it came from (NaN
// when the cell is a label or holds no measurement) for machine readers.
struct Cell {
    std::string text;
    double value = kNaN;

    static Cell label(std::string s) { return {std::move(s), kNaN}; }
    static Cell number(double v, int precision); // "-" when v is NaN
    static Cell blank() { return {}; }
};

// What a row is, so a renderer can mark it (and a JSON reader can select it).
enum class RowKind {
    ours,    // a measurement of this run
    detail,  // belongs to the row above it (known answer, spread, a primitive of a category)
    paper,   // a published figure to compare with
    peer,    // a peer tool's figure, or ours divided by it
    status,  // something not measured: cells[0] (if any) names it, `span` says why
    heading, // a sub-heading inside the table: `span` is its text, no cells
};

struct Row {
    RowKind kind = RowKind::ours;
    int level = 0;           // 1 = indented under the previous level-0 row
    std::vector<Cell> cells; // one per column (missing trailing cells are blank)
    std::string span;        // for status and heading rows: text across the whole row
};

struct Table {
    std::string id; // stable key: "table1", "table2", "figure2", "figure5", "fm", "table3", "table4", "table5", "peers"
    std::string title;   // "Table 2. LogP parameters (us), ..."
    std::string caption; // prose printed before the grid (may be empty)
    std::string status;  // "not built: ..." for a section that was not measured (printed before the grid)
    std::vector<Column> columns;
    std::vector<Row> rows;
    std::vector<std::string> notes; // footnotes printed under the grid
    std::string plot;               // stem of the plot that illustrates it ("logp" -> logp.svg), empty if none
};

// One labelled fact of the report's head ("provider", "run", ...).
struct HeadField {
    std::string key, value;
};

struct ReportDocument {
    std::vector<HeadField> head;
    std::vector<Table> tables;
    std::vector<std::string> warnings;
};

} // namespace logp
