// paper.cpp - see paper.hpp.
#include "paper.hpp"

#include <cmath>

#include "results.hpp"

#include <cctype>

namespace logp {

extern const char *const kPaperFiguresJson;

const nlohmann::json &paper_figures() {
    static const nlohmann::json j = nlohmann::json::parse(kPaperFiguresJson);
    return j;
}

std::string paper_citation() {
    const auto &s = paper_figures()["source"];
    return s.value("authors", "") + ", \"" + s.value("title", "") + "\", " + s.value("date", "");
}

std::string fm_citation() {
    const auto &s = paper_figures()["fm_source"];
    return s.value("authors", "") + ", \"" + s.value("title", "") + "\", " + s.value("date", "");
}

std::string bip_citation() {
    const auto &s = paper_figures()["bip_source"];
    return s.value("authors", "") + ", \"" + s.value("title", "") + "\", " + s.value("date", "");
}

std::vector<const nlohmann::json *> paper_layer_rows(const std::string &layer) {
    std::vector<const nlohmann::json *> rows;
    for (const auto &row : paper_figures()["fm_metrics"])
        if (row.value("layer", "") == layer) rows.push_back(&row);
    return rows;
}

std::string paper_row_label(const nlohmann::json &row) {
    const std::string key = row.value("key", "");
    return key.empty() ? "paper (FM)" : "paper " + key;
}

const nlohmann::json *paper_logp_row(const std::string &layer) {
    const nlohmann::json *best = nullptr;
    for (const auto &row : paper_figures()["table2_logp"])
        if (row.value("layer", "") == layer) best = &row; // the last row of a layer is its LANai 7 figure
    return best;
}

double paper_number(const nlohmann::json &obj, const char *key) {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_number()) return kNaN;
    return it->get<double>();
}

std::string normalize_operation(const std::string &name_in) {
    // A layer prefix ("am.VipPostSend", "splitc.Send bookkeeping") is not part of the operation.
    std::string name = name_in;
    if (auto dot = name.find('.'); dot != std::string::npos && dot <= 10) {
        bool word = dot > 0;
        for (std::size_t i = 0; i < dot; ++i) word = word && std::isalnum(static_cast<unsigned char>(name[i]));
        if (word) name = name.substr(dot + 1);
    }
    std::string s;
    for (char c : name)
        if (std::isalnum(static_cast<unsigned char>(c))) s += char(std::tolower(static_cast<unsigned char>(c)));
    for (std::size_t p; (p = s.find("receive")) != std::string::npos;) s.replace(p, 7, "recv");
    return s;
}

std::string profile_board(const std::string &profile) {
    if (profile == "lanai7") return "LANai 7";
    if (profile == "lanai4") return "LANai 4";
    return "";
}

double relative_error_pct(double ours, double paper) {
    if (!std::isfinite(ours) || !std::isfinite(paper) || paper == 0) return std::nan("");
    return 100.0 * (ours - paper) / paper;
}

} // namespace logp
