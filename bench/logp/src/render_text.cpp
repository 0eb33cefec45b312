// render_text.cpp - the terminal rendering of the report (see render.hpp).
#include "render.hpp"

#include <algorithm>

namespace logp {
namespace {

// Width on a terminal: UTF-8 continuation bytes take no column.
std::size_t display_width(const std::string &s) {
    return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

std::string pad(const std::string &s, std::size_t width, Align a) {
    std::size_t w = display_width(s);
    if (w >= width) return s;
    std::string fill(width - w, ' ');
    return a == Align::left ? s + fill : fill + s;
}

std::string first_cell(const Row &row) {
    std::string text = row.cells.empty() ? "" : row.cells[0].text;
    return std::string(2 * row.level, ' ') + text;
}

void trim_right(std::string &s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
}

} // namespace

std::string render_text(const Table &t) {
    std::string s = t.title + "\n" + std::string(100, '-') + "\n";
    if (!t.status.empty()) s += "  " + t.status + "\n";
    if (!t.caption.empty()) s += "  " + t.caption + "\n";

    // A footnote mark ("12.5*") hangs right of a number column, so the
    // numbers of that column stay aligned on their last digit.
    std::vector<bool> hangs(t.columns.size(), false);
    for (const auto &row : t.rows)
        for (std::size_t i = 1; i < row.cells.size() && i < hangs.size(); ++i)
            if (t.columns[i].align == Align::right && row.kind != RowKind::heading && !row.cells[i].text.empty() &&
                row.cells[i].text.back() == '*')
                hangs[i] = true;
    auto cell_text = [&](const Row &row, std::size_t i) {
        if (i == 0) return first_cell(row);
        const std::string &s = row.cells[i].text;
        return i < hangs.size() && hangs[i] && !s.empty() && s.back() != '*' ? s + " " : s;
    };

    // Each column as wide as its widest cell; a status row's reason and a
    // heading run across the columns and do not widen them.
    std::vector<std::size_t> width;
    for (const auto &c : t.columns) width.push_back(std::max<std::size_t>(c.width, display_width(c.header)));
    for (const auto &row : t.rows) {
        if (row.kind == RowKind::heading) continue;
        for (std::size_t i = 0; i < row.cells.size() && i < width.size(); ++i)
            width[i] = std::max(width[i], display_width(cell_text(row, i)));
    }
    // Text after a number gets three spaces, so it does not read as part of it.
    auto gap = [&](std::size_t i) {
        if (i == 0 || i >= t.columns.size()) return std::string(i == 0 ? 0 : 1, ' ');
        return std::string(t.columns[i].align == Align::left && t.columns[i - 1].align == Align::right ? 3 : 1, ' ');
    };
    auto line = [&](const std::vector<std::string> &cells) {
        std::string l = "  ";
        for (std::size_t i = 0; i < t.columns.size(); ++i)
            l += gap(i) + pad(i < cells.size() ? cells[i] : "", width[i], t.columns[i].align);
        trim_right(l);
        return l + "\n";
    };
    if (!t.columns.empty() && !t.rows.empty()) {
        std::vector<std::string> head;
        for (const auto &c : t.columns) head.push_back(c.header);
        s += line(head);
    }
    for (const auto &row : t.rows) {
        if (row.kind == RowKind::heading) {
            s += "  " + row.span + "\n";
        } else if (row.kind == RowKind::status) {
            std::string l = "  " + (width.empty() ? first_cell(row) : pad(first_cell(row), width[0], Align::left)) +
                gap(1) + row.span;
            s += l + "\n";
        } else {
            std::vector<std::string> cells;
            for (std::size_t i = 0; i < row.cells.size(); ++i) cells.push_back(cell_text(row, i));
            s += line(cells);
        }
    }
    for (const auto &n : t.notes) s += "  " + n + "\n";
    return s + "\n";
}

std::string render_text(const ReportDocument &doc) {
    std::string s = "\nviastack logp report\n";
    std::size_t key_width = 0;
    for (const auto &f : doc.head) key_width = std::max(key_width, f.key.size());
    for (const auto &f : doc.head) s += pad(f.key + ":", key_width + 2, Align::left) + f.value + "\n";
    s += "\n";
    for (const auto &t : doc.tables) s += render_text(t);
    if (!doc.warnings.empty()) {
        s += "Warnings\n" + std::string(100, '-') + "\n";
        for (const auto &w : doc.warnings) s += "  ! " + w + "\n";
        s += "\n";
    }
    return s;
}

} // namespace logp
