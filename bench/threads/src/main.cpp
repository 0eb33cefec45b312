// main.cpp - vi_thread_rate: the message rate of VIPL used by several threads
// of a process (issue #31, docs/vipl.md "Scaling and contention").
//
//   vipl-run -n 2 vi_thread_rate [options]   rank 0 sends, rank 1 receives
//   vi_thread_rate --single [options]         both ends in this process
//
// Variants (interleaved in rounds): 1t (one thread, one VI, the main thread
// alone on NIC handles of its own: a single-threaded program), 1t_1vi (the
// main thread on the VI 2t_1vi shares), 2t_1vi (two threads posting to ONE VI:
// the contended post), 2t_2vi (a VI per thread, one NIC handle), 2t_2nic (a
// VI per thread, each on its own NIC handle), 2t_cq (a VI per thread; the
// receiver's two receive queues on one CQ that two receiving threads take
// from).
#include "job.hpp"
#include "line_probe.hpp"
#include "report.hpp"
#include "stream.hpp"
#include "vi_setup.hpp"
#include "vipl_boot.h"
#include "vipl_wait.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace thbench;

namespace {

const std::vector<Variant> &all_variants() {
    static const std::vector<Variant> v = {
        {"1t", "alone", 1, "1 thread (the main one), alone on its VI's NIC handle", true},
        {"1t_1vi", "one_vi", 1, "1 thread (the main one) on the VI 2t_1vi shares (its locks in their shared mode)",
         true},
        {"2t_1vi", "one_vi", 2, "2 threads posting to ONE VI (contended post)"},
        {"2t_2vi", "two_vis", 2, "2 threads, a VI each, one NIC handle"},
        {"2t_2nic", "two_nics", 2, "2 threads, a VI each on its own NIC handle"},
        {"2t_cq", "two_vis_cq", 2, "2 threads, a VI each; the receiver's receive queues on one CQ, 2 threads take"},
    };
    return v;
}

SetupShape shape_of(const std::string &setup) {
    if (setup == "alone") return {setup, 1, false, false, true};
    if (setup == "one_vi") return {setup, 1, false, false, false};
    if (setup == "two_vis") return {setup, 2, false, false, false};
    if (setup == "two_nics") return {setup, 2, true, false, false};
    return {setup, 2, false, true, false};
}

struct Options {
    bool single = false, quick = false, json = false;
    int rounds = 7, window = 16, blocks = 64;
    int probe_blocks = 15, probe_round_trips = 200; // the line probe's (LineProbe::measure's defaults)
    std::vector<std::string> variants;
    std::string device;
};

// The variants asked for, in the table's order; the baseline 1t always
// runs (every ratio is against it), 1t_1vi and 2t_1vi together (2t_1vi's
// threads turn the VI's locks shared, which is what 1t_1vi measures: from
// the first round on, after the warm-up round's 2t_1vi), 2t_2vi when 2t_cq
// does.
std::vector<Variant> chosen(const Options &o) {
    std::vector<std::string> names = o.variants;
    if (names.empty())
        for (const Variant &v : all_variants()) names.push_back(v.name);
    std::vector<Variant> out;
    for (const Variant &v : all_variants()) {
        bool want = v.name == "1t";
        for (const std::string &n : names)
            want |= n == v.name || (n == "2t_cq" && v.name == "2t_2vi") || (n == "2t_1vi" && v.name == "1t_1vi") ||
                (n == "1t_1vi" && v.name == "2t_1vi");
        if (want) out.push_back(v);
    }
    for (const std::string &n : names) {
        bool known = false;
        for (const Variant &v : all_variants()) known |= v.name == n;
        if (!known)
            throw CLI::ValidationError("--variants",
                                       fmt::format("unknown variant '{}' (known: 1t, 2t_1vi, 2t_2vi, "
                                                   "2t_2nic, 2t_cq)",
                                                   n));
    }
    return out;
}

std::string env_or(const char *name, const char *dflt) {
    const char *v = std::getenv(name);
    return v && *v ? v : dflt;
}

int run(const Options &o) {
    const std::vector<Variant> variants = chosen(o);
    vipl_wait::Mode wait_mode;
    if (!vipl_wait::mode_from_env(&wait_mode)) {
        std::fprintf(stderr, "vi_thread_rate: VIASTACK_WAIT must be %s\n", vipl_wait::kAllowed);
        return 2;
    }
    std::optional<logp::Job> job;
    if (o.single) {
        job.emplace(logp::Job::single());
    } else {
        job.emplace(logp::Job::join());
        if (job->size() != 2) {
            std::fprintf(stderr,
                         "vi_thread_rate: needs exactly 2 ranks (vipl-run -n 2 vi_thread_rate), or --single "
                         "for both ends in one process\n");
            return 2;
        }
    }
    std::vector<SetupShape> shapes;
    for (const Variant &v : variants) {
        bool have = false;
        for (const SetupShape &s : shapes) have |= s.name == v.setup;
        if (!have) shapes.push_back(shape_of(v.setup));
    }
    Fabric fabric(*job, o.single, o.device, shapes);
    std::unique_ptr<logp::LineProbe> probe;
    if (!o.single) probe = std::make_unique<logp::LineProbe>(*job);

    std::vector<Sample> samples;
    std::uint64_t sent = 0, received = 0;
    std::uint32_t stream = 0;
    const int nv = int(variants.size());
    for (int r = 0; r <= o.rounds; ++r) { // round 0 warms up
        for (int k = 0; k < nv; ++k) {
            const Variant &v = variants[std::size_t((k + r) % nv)];
            Setup &s = fabric.setup(v.setup);
            const double line = o.single ? logp::LineProbe::measure_threads(o.probe_blocks, o.probe_round_trips)
                                         : probe->measure(o.probe_blocks, o.probe_round_trips);
            const StreamParams p{o.window, o.blocks, ++stream};
            const int receivers = s.shape.shared_cq ? v.threads : s.shape.links;
            SendTimes t;
            RecvCount c;
            if (o.single) {
                t = run_both(s, v, p, &c);
            } else {
                job->barrier();
                if (fabric.sends()) t = run_senders(s, v, p, v.threads + receivers);
                else c = run_receivers(s, v, p, v.threads + receivers);
                job->bcast(&c, sizeof c, 1);
            }
            const std::uint64_t expected = std::uint64_t(v.threads) * std::uint64_t(o.blocks * o.window);
            sent += expected;
            received += c.messages;
            if (c.messages != expected)
                throw std::runtime_error(fmt::format("variant {} stream {}: {} messages received, {} sent", v.name,
                                                     stream, c.messages, expected));
            if (r > 0 && fabric.sends()) samples.push_back({v.name, r, line, t, c});
        }
    }
    job->barrier();
    if (!fabric.sends()) return 0;
    RunInfo info;
    info.mode = o.single ? "single-process" : "two-process";
    info.nic = fabric.nic(0).attrs.Name;
    info.firmware_mode = env_or("VIPL_NICFW_MODE", "default");
    info.wait_mode = vipl_wait::mode_name(wait_mode);
    info.window = o.window;
    info.blocks = o.blocks;
    info.rounds = o.rounds;
    info.cpus = int(std::thread::hardware_concurrency());
    info.sent = sent;
    info.received = received;
    const nlohmann::json report = report_json(info, variants, samples);
    if (o.json) std::printf("%s\n", report.dump(1).c_str());
    else std::printf("%s", report_text(report).c_str());
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"vi_thread_rate: 16-byte message rate of 1 and 2 threads over VIPL, and the contended post "
                 "(docs/vipl.md, \"Scaling and contention\").  Run it under `vipl-run -n 2`, or with --single."};
    Options o;
    app.add_flag("--single", o.single, "both ends in this process, over the loopback of its NIC");
    app.add_option("--rounds", o.rounds, "rounds of every variant after a warm-up round")->check(CLI::Range(1, 1000));
    app.add_option("--window", o.window, "messages in flight per sending thread")->check(CLI::Range(1, kMaxWindow));
    app.add_option("--blocks", o.blocks, "windows per timed stream")->check(CLI::Range(1, 4096));
    app.add_option("--variants", o.variants, "variants to run (1t always runs): 1t,1t_1vi,2t_1vi,2t_2vi,2t_2nic,2t_cq")
        ->delimiter(',');
    app.add_option("--device", o.device, "the NIC to open (default: the provider's default)");
    app.add_flag("--quick", o.quick,
                 "2 rounds of 8 windows and a short line probe: checks that it works, measures nothing");
    app.add_flag("--json", o.json, "the report as JSON on stdout");
    try {
        app.parse(argc, argv);
        if (o.quick) { // a spinning ping-pong on a loaded machine can take a time slice per round trip
            o.rounds = 2;
            o.blocks = 8;
            o.probe_blocks = 3;
            o.probe_round_trips = 20;
        }
        return run(o);
    } catch (const CLI::ParseError &e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "vi_thread_rate: %s\n", e.what());
        if (!o.single && vipl_boot_size() > 1) vipl_boot_abort(1, e.what());
        return 1;
    }
}
