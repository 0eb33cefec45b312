// breakdown.cpp - see breakdown.hpp.
#include "breakdown.hpp"

#include "paper.hpp"
#include "stats.hpp"
#include "timer.hpp"
#include "vipl_instr.h"

#include <algorithm>
#include <map>

namespace logp {

std::vector<CounterTotal> local_counters() {
    std::size_t n = vipl_instr_snapshot(nullptr, 0);
    std::vector<vipl_instr_sample> s(n + 16); // room for counters registered meanwhile
    n = std::min(vipl_instr_snapshot(s.data(), s.size()), s.size());
    std::vector<CounterTotal> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back({s[i].name, s[i].category, s[i].count, s[i].cycles});
    return out;
}

double send_path_ns() {
    static const char *const kSendPath[] = {"VipPostSend", "Build send descriptors",  "Send bookkeeping",
                                            "VipSendDone", "Recycle send descriptor", "VipCQDone (Send)"};
    std::uint64_t cycles = 0;
    for (const CounterTotal &c : local_counters()) {
        if (c.name.rfind("vipl.", 0) == 0 || c.category == VIPL_INSTR_FIRMWARE) continue;
        const std::size_t dot = c.name.find('.');
        const std::string step = dot == std::string::npos ? c.name : c.name.substr(dot + 1);
        for (const char *s : kSendPath)
            if (step == s) cycles += c.cycles;
    }
    return double(cycles) / vipl_instr_cycles_per_ns();
}

std::vector<CounterTotal> job_counters(const Job &job) {
    std::vector<CounterTotal> mine = local_counters();
    std::map<std::string, CounterTotal> sum;
    for (const auto &c : mine) sum[c.name] = c;
    for (int r = 1; r < job.size(); ++r) {
        nlohmann::json j = nlohmann::json::array();
        if (job.rank() == r)
            for (const auto &c : mine) j.push_back({c.name, c.category, c.count, c.cycles});
        std::string text = job.bcast_string(j.dump(), r);
        if (job.rank() != 0) continue;
        for (const auto &x : nlohmann::json::parse(text)) {
            CounterTotal c{x[0].get<std::string>(), x[1].get<int>(), x[2].get<std::uint64_t>(),
                           x[3].get<std::uint64_t>()};
            auto [it, fresh] = sum.try_emplace(c.name, c);
            if (!fresh) {
                it->second.count += c.count;
                it->second.cycles += c.cycles;
            }
        }
    }
    std::vector<CounterTotal> out;
    for (auto &kv : sum) out.push_back(kv.second);
    return out;
}

Breakdown make_breakdown(const std::string &name, const std::string &layer, const std::vector<CounterTotal> &counters,
                         std::uint64_t operations, double cycles_per_ns, const nlohmann::json *paper_table,
                         const std::string &prefix) {
    Breakdown b;
    b.name = name;
    b.layer = layer;
    b.operations = operations;
    if (operations == 0 || cycles_per_ns <= 0) {
        b.status = {"failed", "no operations measured"};
        return b;
    }
    double ops = double(operations);
    bool prefixed = false;
    for (const CounterTotal &c : counters)
        prefixed = prefixed || (!prefix.empty() && c.count > 0 && c.name.rfind(prefix, 0) == 0);
    std::map<int, BreakdownCategory> cats;
    for (const CounterTotal &c : counters) {
        if (c.count == 0) continue;
        double cyc = double(c.cycles) / ops;
        BreakdownItem it;
        it.operation = c.name;
        it.category = vipl_instr_category_name(c.category);
        it.count_per_op = double(c.count) / ops;
        it.cycles = cyc;
        it.ns = cyc / cycles_per_ns;
        if (c.category == VIPL_INSTR_FIRMWARE) b.firmware_ns += it.ns;
        if (c.category == VIPL_INSTR_WAIT) { // latency, not overhead: excluded from every interval
            b.wait_ns += it.ns;
            continue;
        }
        if (c.category == VIPL_INSTR_FIRMWARE || (prefixed && c.name.rfind(prefix, 0) != 0)) {
            b.inner.push_back(it);
            continue;
        }
        b.items.push_back(it);
        BreakdownCategory &cat = cats[c.category];
        cat.category = it.category;
        cat.cycles += cyc;
        cat.ns += it.ns;
        b.host_cycles += cyc;
        b.host_ns += it.ns;
    }
    if (b.items.empty()) {
        b.status = {"failed",
                    "no instrumented primitive ran: is the layer built with VIASTACK_INSTR=ON and "
                    "does it time its primitives?"};
        return b;
    }
    // Paper percentages, matched by category name and by normalized operation name.
    std::map<std::string, double> paper_items;
    if (paper_table && paper_table->is_object()) {
        for (const auto &pi : paper_table->value("items", nlohmann::json::array()))
            paper_items[normalize_operation(pi.value("operation", ""))] = paper_number(pi, "percent");
    }
    for (auto &[id, cat] : cats) {
        cat.percent = 100.0 * cat.cycles / b.host_cycles;
        if (paper_table && paper_table->contains("categories"))
            cat.paper_percent = paper_number((*paper_table)["categories"], cat.category.c_str());
        b.categories.push_back(cat);
    }
    for (auto &it : b.items) {
        it.percent = 100.0 * it.cycles / b.host_cycles;
        auto p = paper_items.find(normalize_operation(it.operation));
        if (p != paper_items.end()) it.paper_percent = p->second;
    }
    // Category order as in the tables, then the largest primitive first.
    auto cat_rank = [](const std::string &c) -> int {
        for (int i = 0; i < VIPL_INSTR_NCATEGORIES; ++i)
            if (c == vipl_instr_category_name(i)) return i;
        return VIPL_INSTR_NCATEGORIES;
    };
    std::stable_sort(b.items.begin(), b.items.end(), [&](const BreakdownItem &x, const BreakdownItem &y) {
        int cx = cat_rank(x.category), cy = cat_rank(y.category);
        return cx != cy ? cx < cy : x.ns > y.ns;
    });
    b.status = {"measured", ""};
    return b;
}

double measure_instr_scope_ns() {
    static vipl_instr_counter probe = {"logp.instr_probe", VIPL_INSTR_OTHER, 0, 0, 0, 0};
    int was = vipl_instr_on;
    vipl_instr_enable(1);
    std::vector<double> per;
    for (int rep = 0; rep < 7; ++rep) {
        constexpr int kN = 20000;
        std::uint64_t t0 = ticks();
        for (int i = 0; i < kN; ++i) {
            ::vipl::instr::Scope s(probe);
            __asm__ volatile("" ::: "memory");
        }
        per.push_back(ticks_to_ns(ticks() - t0) / kN);
    }
    vipl_instr_enable(was);
    return median_of(per);
}

} // namespace logp
