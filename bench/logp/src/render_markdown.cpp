// render_markdown.cpp - report.md from the report's tables (see render.hpp).
#include "render.hpp"

#include <algorithm>

namespace logp {
namespace {

// A cell's text inside a Markdown table: '|' would end the cell.
std::string md_cell(const std::string &s) {
    std::string o;
    for (char c : s) {
        if (c == '|') o += '\\';
        o += c;
    }
    return o.empty() ? " " : o;
}

std::string md_row(const std::vector<std::string> &cells) {
    std::string l = "|";
    for (const auto &c : cells) l += " " + md_cell(c) + " |";
    return l + "\n";
}

} // namespace

std::string render_markdown(const Table &t, const std::vector<std::string> &drawn_plots) {
    std::string m = "## " + t.title + "\n\n";
    if (!t.status.empty()) m += "*" + t.status + "*\n\n";
    if (!t.caption.empty()) m += t.caption + ".\n\n";
    if (!t.columns.empty() && !t.rows.empty()) {
        std::vector<std::string> head;
        std::string rule = "|";
        for (const auto &c : t.columns) {
            head.push_back(c.header);
            rule += c.align == Align::right ? "---:|" : "---|";
        }
        m += md_row(head) + rule + "\n";
        for (std::size_t r = 0; r < t.rows.size(); ++r) {
            const Row &row = t.rows[r];
            bool heads_details = r + 1 < t.rows.size() && t.rows[r + 1].level > 0;
            std::vector<std::string> cells(t.columns.size());
            if (row.kind == RowKind::heading) {
                cells[0] = "*" + row.span + "*";
            } else {
                for (std::size_t i = 0; i < row.cells.size() && i < cells.size(); ++i) cells[i] = row.cells[i].text;
                if (row.kind == RowKind::status && cells.size() > 1) cells[1] = row.span;
                // A row of ours that heads indented detail rows is set in bold.
                if (row.level == 0 && heads_details && row.kind == RowKind::ours && !cells[0].empty())
                    cells[0] = "**" + cells[0] + "**";
                if (row.level > 0 && !cells[0].empty()) cells[0] = "&nbsp;&nbsp;" + cells[0];
            }
            m += md_row(cells);
        }
        m += "\n";
    }
    for (const auto &n : t.notes) m += n + "\n\n";
    if (!t.plot.empty() && std::find(drawn_plots.begin(), drawn_plots.end(), t.plot) != drawn_plots.end())
        m += "![" + t.title + "](" + t.plot + ".svg)\n\n";
    return m;
}

std::string render_markdown(const ReportDocument &doc, const std::vector<std::string> &drawn_plots) {
    std::string m = "# viastack LogP report\n\n";
    for (const auto &f : doc.head) m += "- " + f.key + ": " + f.value + "\n";
    m += "\n";
    for (const auto &t : doc.tables) m += render_markdown(t, drawn_plots);
    if (!doc.warnings.empty()) {
        m += "## Warnings\n\n";
        for (const auto &w : doc.warnings) m += "- " + w + "\n";
    }
    return m;
}

} // namespace logp
