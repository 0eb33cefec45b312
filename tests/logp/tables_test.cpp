// The report's tables: built once from a Report, the terminal, Markdown and
// JSON renderings of every table hold the same rows and cells, for a full
// report and for reports with layers, sections and peers missing.
#include "render.hpp"
#include "report.hpp"
#include "report_fixture.hpp"
#include "results_json.hpp"
#include "tables.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

using namespace logp;

namespace {

std::vector<std::string> lines_of(const std::string &s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// The Markdown table's rows (header and rule excluded), each split into cells
// with the renderer's emphasis and indentation taken off.
std::vector<std::vector<std::string>> markdown_rows(const std::string &md) {
    std::vector<std::vector<std::string>> rows;
    int seen = 0;
    for (const auto &l : lines_of(md)) {
        if (l.rfind("|", 0) != 0) continue;
        if (seen++ < 2) continue; // header, rule
        std::vector<std::string> cells;
        for (std::size_t at = 1; at < l.size();) {
            std::size_t end = at;
            while (end < l.size() && !(l[end] == '|' && l[end - 1] != '\\')) ++end;
            std::string c = l.substr(at, end - at);
            c = c.substr(1, c.size() - 2); // the spaces around a cell
            for (const char *mark : {"**", "&nbsp;&nbsp;"})
                for (std::size_t p; (p = c.find(mark)) != std::string::npos;) c.erase(p, std::string(mark).size());
            if (c.size() >= 2 && c.front() == '*' && c.back() == '*') c = c.substr(1, c.size() - 2);
            cells.push_back(c == " " ? "" : c);
            at = end + 1;
        }
        rows.push_back(cells);
    }
    return rows;
}

// Every row of t, in order, in all three renderings, with the same cells.
void expect_renderings_agree(const Table &t) {
    SCOPED_TRACE(t.id);
    std::string text = render_text(t);
    std::string md = render_markdown(t, {});
    nlohmann::json js = render_json(t);

    // JSON: the model, cell for cell.
    EXPECT_EQ(js["id"], t.id);
    EXPECT_EQ(js["title"], t.title);
    ASSERT_EQ(js["columns"].size(), t.columns.size());
    ASSERT_EQ(js["rows"].size(), t.rows.size());
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        const Row &row = t.rows[i];
        const nlohmann::json &jr = js["rows"][i];
        EXPECT_EQ(jr["kind"], row_kind_name(row.kind));
        EXPECT_EQ(jr["span"], row.span);
        ASSERT_EQ(jr["cells"].size(), row.cells.size());
        for (std::size_t c = 0; c < row.cells.size(); ++c) {
            EXPECT_EQ(jr["cells"][c]["text"], row.cells[c].text);
            if (std::isfinite(row.cells[c].value))
                EXPECT_DOUBLE_EQ(jr["cells"][c]["value"].get<double>(), row.cells[c].value);
            else EXPECT_TRUE(jr["cells"][c]["value"].is_null());
        }
    }

    // Terminal: title, rule, then one line per row holding its cells in order.
    std::vector<std::string> tl = lines_of(text);
    ASSERT_GE(tl.size(), 2u);
    EXPECT_EQ(tl[0], t.title);
    std::size_t at = 2 + !t.status.empty() + !t.caption.empty() + (!t.rows.empty() && !t.columns.empty());
    ASSERT_GE(tl.size(), at + t.rows.size() + t.notes.size());
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        const std::string &line = tl[at + i];
        std::size_t pos = 0;
        for (const auto &c : t.rows[i].cells) {
            if (c.text.empty()) continue;
            std::size_t p = line.find(c.text, pos);
            EXPECT_NE(p, std::string::npos) << "cell '" << c.text << "' not in order in: " << line;
            if (p != std::string::npos) pos = p + c.text.size();
        }
        if (!t.rows[i].span.empty()) { EXPECT_NE(line.find(t.rows[i].span, pos), std::string::npos) << line; }
    }
    for (std::size_t n = 0; n < t.notes.size(); ++n) EXPECT_EQ(tl[at + t.rows.size() + n], "  " + t.notes[n]);

    // Markdown: a heading with the title, one table row per row, same cells.
    EXPECT_EQ(md.rfind("## " + t.title + "\n", 0), 0u);
    auto mrows = markdown_rows(md);
    ASSERT_EQ(mrows.size(), t.rows.size());
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        const Row &row = t.rows[i];
        ASSERT_EQ(mrows[i].size(), t.columns.size());
        if (row.kind == RowKind::heading) {
            EXPECT_EQ(mrows[i][0], row.span);
            continue;
        }
        for (std::size_t c = 0; c < row.cells.size(); ++c) EXPECT_EQ(mrows[i][c], row.cells[c].text) << "row " << i;
        if (row.kind == RowKind::status) { EXPECT_EQ(mrows[i][1], row.span); }
    }
    for (const auto &n : t.notes) EXPECT_NE(md.find("\n" + n + "\n"), std::string::npos) << n;
}

const Table &table(const ReportDocument &d, const std::string &id) {
    for (const auto &t : d.tables)
        if (t.id == id) return t;
    throw std::runtime_error("no table " + id);
}

const Row *row_named(const Table &t, const std::string &first_cell) {
    for (const auto &r : t.rows)
        if (!r.cells.empty() && r.cells[0].text == first_cell) return &r;
    return nullptr;
}

Report finalized(Report r) {
    finalize_report(r, 0.05);
    return r;
}

} // namespace

TEST(Tables, EveryTableInTheReportOrder) {
    ReportDocument d = build_document(finalized(full_report()));
    std::vector<std::string> ids;
    for (const auto &t : d.tables) ids.push_back(t.id);
    EXPECT_EQ(ids,
              (std::vector<std::string>{"table1", "table2", "figure2", "figure5", "fm", "rate", "layering", "table3",
                                        "table4", "mpi_breakdown", "table5", "peers", "interleaved"}));
    EXPECT_EQ(d.warnings, full_report().warnings);
}

TEST(Tables, ThreeRenderingsAgreeOnAFullReport) {
    for (const auto &t : build_document(finalized(full_report())).tables) expect_renderings_agree(t);
}

TEST(Tables, ThreeRenderingsAgreeWhenDataIsMissing) {
    for (const auto &t : build_document(finalized(report_with_missing_data())).tables) expect_renderings_agree(t);
    Report empty;
    for (const auto &t : build_document(finalized(empty)).tables) expect_renderings_agree(t);
}

TEST(Tables, FullReportCellsComeFromTheReportAndThePaper) {
    ReportDocument d = build_document(finalized(full_report()));
    const Row *vi = row_named(table(d, "table2"), "vi (ours)");
    ASSERT_NE(vi, nullptr);
    EXPECT_EQ(vi->cells[1].text, "1.60");
    EXPECT_DOUBLE_EQ(vi->cells[3].value, 1.0); // L
    const Row *paper = row_named(table(d, "table2"), "paper AMVIAv3 (LANai 7)");
    ASSERT_NE(paper, nullptr);
    EXPECT_EQ(paper->kind, RowKind::paper);
    EXPECT_EQ(paper->cells[1].text, "35.6");
    const Row *splitc = row_named(table(d, "table2"), "splitc");
    ASSERT_NE(splitc, nullptr);
    EXPECT_EQ(splitc->kind, RowKind::status);
    EXPECT_EQ(splitc->span, "not built: no compiler-rt");
    // Table 1: the paper's 16-byte figure sits under the LANai 7 column.
    const Table &t1 = table(d, "table1");
    const Row *r16 = row_named(t1, "RTT/2 (us), 16 B");
    ASSERT_NE(r16, nullptr);
    for (std::size_t c = 2; c < t1.columns.size(); ++c)
        EXPECT_EQ(r16->cells[c].text, t1.columns[c].header == "LANai 7 VI" ? "32.0" : "") << t1.columns[c].header;
    // Table 3 measured, Table 4 not built but showing the paper's categories.
    EXPECT_EQ(row_named(table(d, "table3"), "am.VipPostSend")->cells[5].text, "2.00");
    EXPECT_EQ(table(d, "table4").status, "not built");
    EXPECT_EQ(row_named(table(d, "table4"), "Event Notification")->cells[4].text, "46.9");
    EXPECT_EQ(row_named(table(d, "table5"), "measured difference")->cells[1].text, "2.00");
    // The peer's RTT/2 set against each measured layer, in Table 2 and among the peers.
    EXPECT_EQ(row_named(table(d, "table2"), "ours/peer")->cells[1].text, "5.33");
    EXPECT_EQ(table(d, "peers").rows.size(), 3u); // heading, vs vi, vs am-v3 (the raw figure is in both)
    Report uncompared = full_report();            // finalize_report not run: the raw figure alone is listed
    EXPECT_EQ(table(build_document(uncompared), "peers").rows.size(), 2u);
}

TEST(Tables, MissingDataIsSaidNotLeftBlank) {
    ReportDocument d = build_document(finalized(report_with_missing_data()));
    const Row *am = row_named(table(d, "table2"), "am-v3");
    ASSERT_NE(am, nullptr);
    EXPECT_EQ(am->kind, RowKind::status);
    EXPECT_EQ(am->span, "failed: timeout");
    EXPECT_NE(row_named(table(d, "table2"), "paper AMVIAv3 (LANai 7)"), nullptr); // the paper's figure stays
    EXPECT_EQ(table(d, "figure2").status, "Split-C: not built");
    EXPECT_EQ(row_named(table(d, "fm"), "am-v3")->span, "skipped: --layers");
    EXPECT_EQ(row_named(table(d, "figure5"), "1024")->cells[2].text, "-");
    EXPECT_EQ(table(d, "table3").status, "failed: no counters");
    // Without the AM curve Table 5 is not built, and says so with no stale numbers.
    const Table &t5 = table(d, "table5");
    EXPECT_NE(t5.status.find("not built"), std::string::npos);
    EXPECT_EQ(row_named(t5, "measured difference")->cells[1].text, "-");
    EXPECT_TRUE(std::isnan(row_named(t5, "TOTAL (components)")->cells[1].value));
    const Table &peers = table(d, "peers");
    ASSERT_EQ(peers.rows.size(), 1u);
    EXPECT_EQ(peers.rows[0].span, "ucx_perftest (UCX_TLS=sm,self): not installed: apt-get install ucx-utils");

    ReportDocument none = build_document(finalized(Report{}));
    EXPECT_EQ(table(none, "peers").status, "none (--no-peers)");
    EXPECT_TRUE(table(none, "table2").rows.empty());
    EXPECT_EQ(table(none, "table2").status, "no layer measured");
    EXPECT_EQ(table(none, "figure5").status, "no curve measured");
    EXPECT_EQ(render_text(table(none, "table2")).find("RTT/2    Delta"), std::string::npos); // no header without rows
}

// The message-rate table: a column per window, a row per sweep (ours, then the
// peer's), its rate in million messages/s and a detail row in us/message.
TEST(Tables, RateTableHasAWindowColumnAndARowPerSweep) {
    ReportDocument d = build_document(finalized(full_report()));
    const Table &t = table(d, "rate");
    ASSERT_EQ(t.columns.size(), 8u); // layer, W=1 ... W=64
    EXPECT_EQ(t.columns[1].header, "W=1");
    EXPECT_EQ(t.columns[7].header, "W=64");
    const Row *vi = row_named(t, "vi (ours)");
    ASSERT_NE(vi, nullptr);
    EXPECT_EQ(vi->kind, RowKind::ours);
    EXPECT_NEAR(vi->cells[1].value, 1 / 1.2, 1e-12); // W=1: 0.2 + 1/1 us per message
    EXPECT_NEAR(vi->cells[7].value, 1 / (0.2 + 1.0 / 64), 1e-12);
    EXPECT_EQ(vi->cells[3].text.back(), '*'); // W=4 has a 30% spread
    const Row &us = t.rows[1];
    EXPECT_EQ(us.kind, RowKind::detail);
    EXPECT_EQ(us.cells[0].text, "us/message");
    EXPECT_EQ(us.cells[1].text, "1.200");
    const Row *ucx = row_named(t, "ucx_perftest ucp_am_bw");
    ASSERT_NE(ucx, nullptr);
    EXPECT_EQ(ucx->kind, RowKind::peer);
    EXPECT_EQ(ucx->cells[4].text, "8.00");
    EXPECT_EQ(t.plot, "rate");
    bool method = false;
    for (const auto &n : t.notes) method |= n.find("ucp_am_bw 16 B, -O W") != std::string::npos;
    EXPECT_TRUE(method);

    ReportDocument missing = build_document(finalized(report_with_missing_data()));
    const Table &m = table(missing, "rate");
    EXPECT_EQ(row_named(m, "am-v3 (ours)")->kind, RowKind::status);
    EXPECT_EQ(row_named(m, "am-v3 (ours)")->span, "failed: no confirmation from the peer");
    EXPECT_NE(row_named(m, "ucx_perftest ucp_am_bw")->span.find("not installed"), std::string::npos);
    EXPECT_EQ(table(build_document(finalized(Report{})), "rate").status, "not measured");

    // The peer's sweep is run between our layers (before Split-C); the table lists ours first.
    Report peer_first = full_report();
    std::rotate(peer_first.rate_sweep.begin(), peer_first.rate_sweep.end() - 1, peer_first.rate_sweep.end());
    const ReportDocument pd = build_document(finalized(peer_first));
    const Table &pf = table(pd, "rate");
    EXPECT_EQ(pf.rows[0].cells[0].text, "vi (ours)");
    EXPECT_EQ(pf.rows[4].cells[0].text, "ucx_perftest ucp_am_bw");
}

// L below the resolution prints 0* with the raw figure in a note; inconsistent
// figures print n/a and say so.  Never a negative L.
TEST(Tables, LatencyBelowResolutionAndInconsistentAreSaid) {
    Report r = full_report();
    r.logp[0].L_state = "below resolution", r.logp[0].L_us = 0, r.logp[0].L_raw_us = -0.069,
    r.logp[0].L_resolution_us = 0.1;
    r.logp[1].L_state = "inconsistent", r.logp[1].L_us = kNaN, r.logp[1].L_raw_us = -9.5,
    r.logp[1].L_resolution_us = 1.2;
    ReportDocument d = build_document(finalized(r));
    const Table &t = table(d, "table2");
    EXPECT_EQ(row_named(t, "vi (ours)")->cells[3].text, "0*");
    EXPECT_DOUBLE_EQ(row_named(t, "vi (ours)")->cells[3].value, 0);
    EXPECT_EQ(row_named(t, "am-v3 (ours)")->cells[3].text, "n/a");
    bool below = false, inconsistent = false;
    for (const auto &n : t.notes) {
        below |=
            n.find("vi: L 0* = below the resolution") != std::string::npos && n.find("-0.069") != std::string::npos;
        inconsistent |= n.find("am-v3: L n/a = inconsistent") != std::string::npos;
    }
    EXPECT_TRUE(below);
    EXPECT_TRUE(inconsistent);
    expect_renderings_agree(t);
}

TEST(Tables, DocumentsCarryHeadTablesAndWarnings) {
    Report r = finalized(full_report());
    ReportDocument d = build_document(r);
    std::string text = render_text(d), md = render_markdown(d, {"logp"});
    for (const auto &f : d.head) {
        EXPECT_NE(text.find(f.value), std::string::npos) << f.key;
        EXPECT_NE(md.find("- " + f.key + ": " + f.value + "\n"), std::string::npos) << f.key;
    }
    for (const auto &t : d.tables) {
        EXPECT_NE(text.find(render_text(t)), std::string::npos) << t.id;
        EXPECT_NE(md.find(render_markdown(t, {"logp"})), std::string::npos) << t.id;
    }
    EXPECT_NE(text.find("  ! am-v3: RTT: spread 30% exceeds 25%"), std::string::npos);
    EXPECT_NE(md.find("## Warnings\n\n- am-v3: RTT: spread 30% exceeds 25%"), std::string::npos);
    // Only plots that were drawn are embedded.
    EXPECT_NE(md.find("](logp.svg)"), std::string::npos);
    EXPECT_EQ(md.find("](bandwidth.svg)"), std::string::npos);
}

TEST(Tables, JsonFileAddsTheTablesToTheSchema) {
    Report r = finalized(full_report());
    nlohmann::json j = report_json(r);
    nlohmann::json data = to_json(r);
    EXPECT_FALSE(data.contains("tables"));
    for (auto it = data.begin(); it != data.end(); ++it) EXPECT_EQ(j[it.key()], it.value()) << it.key();
    EXPECT_EQ(j["tables"], render_json(build_document(r).tables));
    ASSERT_EQ(j["tables"].size(), 13u);
    for (const char *k : {"id", "title", "caption", "status", "columns", "rows", "notes", "plot"})
        EXPECT_TRUE(j["tables"][1].contains(k)) << k;
    // A file re-read gives the same tables again.
    EXPECT_EQ(report_json(report_from_json(j))["tables"], j["tables"]);
}

// The fm and bip layers (#18): their rows in Table 2 and the FM metrics table,
// each with its own paper's figures right under ours, in all three renderings
// and in the JSON file.
TEST(Tables, FmAndBipRowsSitOverTheirPapersFigures) {
    Report r = full_report();
    LogPRow fm = r.logp[0];
    fm.layer = "fm";
    fm.rtt_half_us = 2.25;
    LogPRow bip = fm;
    bip.layer = "bip";
    bip.rtt_half_us = 2.5;
    r.logp.insert(r.logp.end() - 1, {fm, bip}); // before splitc, as the registry orders them
    BandwidthCurve cf = r.bandwidth[0], cb = r.bandwidth[0];
    cf.layer = "fm", cf.t0_us = 3.0, cf.r_inf_mb_s = 500;
    cb.layer = "bip", cb.t0_us = 2.0, cb.r_inf_mb_s = 800;
    r.bandwidth.push_back(cf);
    r.bandwidth.push_back(cb);
    r.layers.insert(r.layers.end() - 1, {{"fm", {"measured", ""}}, {"bip", {"measured", ""}}});
    ReportDocument d = build_document(finalized(r));

    const Table &t2 = table(d, "table2");
    auto next_after = [](const Table &t, const std::string &first, const std::string &wanted) -> const Row * {
        for (std::size_t i = 0; i < t.rows.size(); ++i)
            if (!t.rows[i].cells.empty() && t.rows[i].cells[0].text == first)
                for (std::size_t j = i + 1; j < t.rows.size() && t.rows[j].kind != RowKind::ours; ++j)
                    if (!t.rows[j].cells.empty() && t.rows[j].cells[0].text == wanted) return &t.rows[j];
        return nullptr;
    };
    EXPECT_EQ(row_named(t2, "fm (ours)")->cells[1].text, "2.25");
    EXPECT_EQ(row_named(t2, "bip (ours)")->cells[1].text, "2.50");
    const Row *fm1 = next_after(t2, "fm (ours)", "paper [FM1]");
    const Row *bip1 = next_after(t2, "bip (ours)", "paper [BIP]");
    ASSERT_NE(fm1, nullptr);
    ASSERT_NE(bip1, nullptr);
    EXPECT_EQ(fm1->kind, RowKind::paper);
    EXPECT_EQ(fm1->cells[1].text, "25.0");        // [FM1]: one-way latency of short packets
    EXPECT_EQ(bip1->cells[1].text, "4.3");        // [BIP] Table 1
    EXPECT_EQ(row_named(t2, "paper [FM1]"), fm1); // once, under fm only
    bool noted = false;
    for (const auto &n : t2.notes) noted |= n.find("paper [BIP]") != std::string::npos;
    EXPECT_TRUE(noted);

    const Table &fmt = table(d, "fm");
    const Row *f = next_after(fmt, "fm", "paper [FM1]");
    const Row *b = next_after(fmt, "bip", "paper [BIP]");
    ASSERT_NE(f, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(f->level, 1);
    EXPECT_EQ(f->cells[2].text, "4.1");
    EXPECT_EQ(f->cells[3].text, "21.4");
    EXPECT_EQ(f->cells[4].text, "54");
    EXPECT_EQ(b->cells[2].text, "-"); // BIP gives no t0
    EXPECT_EQ(b->cells[3].text, "126.0");
    EXPECT_EQ(b->cells[4].text, "4096");
    EXPECT_EQ(std::count_if(fmt.rows.begin(), fmt.rows.end(),
                            [](const Row &x) { return !x.cells.empty() && x.cells[0].text == "paper [FM1]"; }),
              1);
    EXPECT_NE(row_named(fmt, "paper (FM)"), nullptr); // the FM paper's Myricom API row stays, at the end
    for (const auto &t : d.tables) expect_renderings_agree(t);

    // The JSON file carries the rows, and reads back to the same tables.
    nlohmann::json j = report_json(finalized(r));
    bool fm_row = false, bip_curve = false;
    for (const auto &x : j["logp"]) fm_row |= x["layer"] == "fm";
    for (const auto &c : j["bandwidth"]) bip_curve |= c["layer"] == "bip";
    EXPECT_TRUE(fm_row);
    EXPECT_TRUE(bip_curve);
    EXPECT_EQ(report_json(report_from_json(j))["tables"], j["tables"]);

    // Without an fm or bip curve, their papers' rows still close the FM metrics table.
    ReportDocument plain = build_document(finalized(full_report()));
    const Row *alone = row_named(table(plain, "fm"), "paper [BIP]");
    ASSERT_NE(alone, nullptr);
    EXPECT_EQ(alone->level, 0);
    EXPECT_EQ(row_named(table(plain, "table2"), "paper [BIP]"), nullptr);
}

// Under a cost-model profile (nicfw lanai7) Table 2 gets the relative error of
// each figure against the modelled board's paper row, Table 1 a note with the
// errors of RTT/2 and the peak; under another profile neither.
TEST(Tables, CostModelProfileGetsErrorsAgainstItsBoard) {
    Report r = full_report();
    r.provider.profile = "lanai7";
    r.logp[1].rtt_half_us = 35.6 * 1.1; // am-v3: 10% over the paper's 35.6
    r.logp[1].g_us = 30.0 * 0.5;        // 50% under its 30.0
    r.vi_baseline.rtt_half_min_us = 30.2;
    ReportDocument d = build_document(finalized(r));
    const Table &t2 = table(d, "table2");
    const Row *err = row_named(t2, "error vs paper");
    ASSERT_NE(err, nullptr);
    EXPECT_EQ(err->cells[1].text, "+10%");
    EXPECT_EQ(err->cells[7].text, "-50%");
    bool noted = false;
    for (const auto &n : table(d, "table1").notes) noted = noted || n.find("RTT/2 min +0%") != std::string::npos;
    EXPECT_TRUE(noted) << "Table 1 names the error against the LANai 7 column";
    r.provider.profile = "none";
    EXPECT_EQ(row_named(table(build_document(finalized(r)), "table2"), "error vs paper"), nullptr);
}
