// report.cpp - see report.hpp.
#include "report.hpp"

#include "line_probe.hpp"
#include "stats.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>

namespace thbench {
namespace {

using nlohmann::json;

json summary_json(const std::vector<double> &v) {
    if (v.empty()) return json{{"n", 0}};
    const logp::Summary s = logp::summarize(v);
    return json{{"n", s.n}, {"median", s.median}, {"p25", s.p25}, {"p75", s.p75}, {"spread", s.spread()}};
}

std::vector<double> values(const std::vector<Sample> &samples, const std::string &variant,
                           const std::function<bool(const Sample &)> &keep, double (*of)(const Sample &)) {
    std::vector<double> out;
    for (const Sample &s : samples)
        if (s.variant == variant && keep(s)) out.push_back(of(s));
    return out;
}

double rate_of(const Sample &s) { return s.rate(); }
double ns_of(const Sample &s) { return s.ns_per_msg(); }
double post_of(const Sample &s) { return s.times.post_ns; }
double per_msg(const Sample &s, std::uint64_t n) { return double(n) / double(s.times.messages); }
double send_polls_of(const Sample &s) { return per_msg(s, s.times.wait.idle_polls); }
double send_yields_of(const Sample &s) { return per_msg(s, s.times.wait.yields); }
double recv_polls_of(const Sample &s) { return per_msg(s, s.recv.wait.idle_polls); }
double recv_yields_of(const Sample &s) { return per_msg(s, s.recv.wait.yields); }

// rate(variant) / rate(base), paired round by round.
std::vector<double> paired_ratios(const std::vector<Sample> &samples, const std::string &variant,
                                  const std::string &base) {
    std::vector<double> out;
    for (const Sample &a : samples) {
        if (a.variant != variant) continue;
        for (const Sample &b : samples)
            if (b.variant == base && b.round == a.round) out.push_back(a.rate() / b.rate());
    }
    return out;
}

// What each variant is set against: one thread, and for the shared CQ also
// the same threads and VIs without it.
std::vector<std::string> baselines(const std::string &variant) {
    if (variant == "1t") return {};
    if (variant == "2t_cq") return {"1t", "2t_2vi"};
    if (variant == "2t_1vi") return {"1t", "1t_1vi"};
    return {"1t"};
}

} // namespace

json report_json(const RunInfo &info, const std::vector<Variant> &variants, const std::vector<Sample> &samples) {
    std::vector<double> lines;
    for (const Sample &s : samples) lines.push_back(s.line_ns);
    std::string source;
    const double threshold = logp::line_threshold(lines, &source);
    auto placement = [&](const Sample &s) { return !(s.line_ns > 0) ? "" : s.line_ns >= threshold ? "slow" : "fast"; };

    json out;
    out["program"] = "vi_thread_rate";
    out["mode"] = info.mode;
    out["nic"] = info.nic;
    out["firmware_mode"] = info.firmware_mode;
    out["wait"] = info.wait_mode;
    out["message_bytes"] = kMsgBytes;
    out["window"] = info.window;
    out["blocks"] = info.blocks;
    out["rounds"] = info.rounds;
    out["cpus"] = info.cpus;
    out["method"] = fmt::format(
        "each sending thread streams {} windows of {} 16-byte messages on its VI and waits after each window for the "
        "receiver's confirmation (the receiver reposts every receive as it takes it); a stream's rate is all threads' "
        "messages over the time from the first thread's start to the last thread's last confirmation; ns per "
        "VipPostSend times each window's posts as a block (descriptors filled before); variants interleaved in "
        "rounds (rotated each round), median and interquartile range over the rounds; the raw cache line measured "
        "right before every stream",
        info.blocks, info.window);
    out["messages"] = {{"sent", info.sent}, {"received", info.received}};
    out["placement"] = {{"line_threshold_ns", threshold}, {"threshold_source", source}};
    auto all = [](const Sample &) { return true; };
    json vs = json::array();
    for (const Variant &v : variants) {
        json j{{"name", v.name}, {"what", v.what}, {"threads", v.threads}, {"setup", v.setup}, {"on_main", v.on_main}};
        j["rate_msgs_per_s"] = summary_json(values(samples, v.name, all, rate_of));
        j["ns_per_msg"] = summary_json(values(samples, v.name, all, ns_of));
        j["ns_per_post"] = summary_json(values(samples, v.name, all, post_of));
        // How the stream's threads waited, per message (sender, receiver).
        j["idle_polls_per_msg"] = {{"send", summary_json(values(samples, v.name, all, send_polls_of))},
                                   {"recv", summary_json(values(samples, v.name, all, recv_polls_of))}};
        j["yields_per_msg"] = {{"send", summary_json(values(samples, v.name, all, send_yields_of))},
                               {"recv", summary_json(values(samples, v.name, all, recv_yields_of))}};
        json scaling = json::object();
        for (const std::string &base : baselines(v.name)) {
            const std::vector<double> r = paired_ratios(samples, v.name, base);
            if (!r.empty()) scaling[base] = summary_json(r);
        }
        j["rate_ratio_vs"] = scaling;
        for (const char *cls : {"fast", "slow"}) {
            const std::string c = cls;
            j["placement"][c] = summary_json(values(
                samples, v.name, [&](const Sample &s) { return placement(s) == c; }, rate_of));
        }
        j["preempted_streams"] = values(
                                     samples, v.name, [](const Sample &s) { return s.times.preempted; }, rate_of)
                                     .size();
        vs.push_back(j);
    }
    out["variants"] = vs;
    json ss = json::array();
    for (const Sample &s : samples)
        ss.push_back({{"variant", s.variant},
                      {"round", s.round},
                      {"line_ns", s.line_ns},
                      {"placement", placement(s)},
                      {"stream_ns", s.times.stream_ns},
                      {"messages", s.times.messages},
                      {"rate_msgs_per_s", s.rate()},
                      {"ns_per_msg", s.ns_per_msg()},
                      {"ns_per_post", s.times.post_ns},
                      {"idle_polls", {{"send", s.times.wait.idle_polls}, {"recv", s.recv.wait.idle_polls}}},
                      {"yields", {{"send", s.times.wait.yields}, {"recv", s.recv.wait.yields}}},
                      {"receivers_ready_ns_before_start", s.ready_lead_ns()},
                      {"preempted", s.times.preempted}});
    out["samples"] = ss;
    return out;
}

std::string report_text(const json &r) {
    std::string out =
        fmt::format("vi_thread_rate: {} on {} (firmware {}, wait {}), {} CPUs\n", r["mode"].get<std::string>(),
                    r["nic"].get<std::string>(), r["firmware_mode"].get<std::string>(), r["wait"].get<std::string>(),
                    r["cpus"].get<int>());
    out += fmt::format("  {}-byte messages, window {} per thread, {} windows per stream, {} rounds\n",
                       r["message_bytes"].get<int>(), r["window"].get<int>(), r["blocks"].get<int>(),
                       r["rounds"].get<int>());
    if (r["mode"] == "two-process")
        out += "  the sending threads (rank 0) and the receiving threads (rank 1) share this machine's CPUs: with 2 "
               "threads per rank, 4 threads take turns on them\n";
    else
        out += "  both ends in this process, paired over the loopback of its NIC (1t: between two NIC handles of its "
               "own): the sending and receiving threads share this machine's CPUs\n";
    out += fmt::format("  raw cache line (one way) classed at {:.0f} ns ({})\n\n",
                       r["placement"]["line_threshold_ns"].get<double>(),
                       r["placement"]["threshold_source"].get<std::string>());
    out += fmt::format("  {:<8} {:>12} {:>6} {:>9} {:>10} {:>7} {:>15} {:>13} {:>11} {:>9} {:>9}  {}\n", "variant",
                       "msgs/s", "IQR", "ns/msg", "ns/post", "IQR", "rate ratio", "idle polls/m", "yields/m", "fast n",
                       "slow n", "what");
    auto med = [](const json &s, const char *k = "median") { return s.contains(k) ? s[k].get<double>() : NAN; };
    for (const json &v : r["variants"]) {
        std::string ratio = "-";
        for (auto it = v["rate_ratio_vs"].begin(); it != v["rate_ratio_vs"].end(); ++it)
            ratio = (ratio == "-" ? "" : ratio + " ") + fmt::format("{:.2f}x/{}", med(it.value()), it.key());
        const json &polls = v["idle_polls_per_msg"], &yields = v["yields_per_msg"];
        out += fmt::format(
            "  {:<8} {:>12.4g} {:>5.0f}% {:>9.1f} {:>10.1f} {:>6.0f}% {:>15} {:>13} {:>11} {:>9} {:>9}  {}\n",
            v["name"].get<std::string>(), med(v["rate_msgs_per_s"]), 100 * med(v["rate_msgs_per_s"], "spread"),
            med(v["ns_per_msg"]), med(v["ns_per_post"]), 100 * med(v["ns_per_post"], "spread"), ratio,
            fmt::format("{:.1f}/{:.1f}", med(polls["send"]), med(polls["recv"])),
            fmt::format("{:.2f}/{:.2f}", med(yields["send"]), med(yields["recv"])),
            v["placement"]["fast"]["n"].get<int>(), v["placement"]["slow"]["n"].get<int>(),
            v["what"].get<std::string>());
    }
    out += fmt::format("\n  messages: {} sent, {} received and checked\n", r["messages"]["sent"].get<std::uint64_t>(),
                       r["messages"]["received"].get<std::uint64_t>());
    return out;
}

} // namespace thbench
