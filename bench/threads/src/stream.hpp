// stream.hpp - one timed stream of a variant: its sending threads each send
// `blocks` windows of `window` 16-byte messages and wait, after each window,
// for the receiver's confirmation of it (the LogP suite's message-rate method,
// bench/logp/src/measure_rate.cpp, with one window per thread); the receiving
// threads repost every receive as they take it and confirm each window.
//
// The threads of a stream are started for it, on both sides (but for a
// variant on_main).  The clock starts once every receiving thread runs: each one, when it starts, sends a
// ready message to the sending threads of its link, and a sending thread
// waits for its ready message (untimed) before the start.  Without that, a
// stream's time would include how long the other process took to create and
// schedule its receiving thread (milliseconds on a busy machine), which a
// variant on the main threads (already running) never pays.
#pragma once

#include "vi_setup.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace thbench {

// What runs: `threads` sending threads on a setup (thread t on link
// min(t, links-1); so 2 threads on a one-link setup post to ONE VI), and as
// many receiving threads as the setup needs (one per link, or `threads` taking
// from the shared CQ).
struct Variant {
    std::string name;  // "1t", "2t_1vi", "2t_2vi", "2t_2nic", "2t_cq"
    std::string setup; // SetupShape::name
    int threads = 1;
    std::string what;     // one line for the table
    bool on_main = false; // one thread, the program's main one (which made the setup), each end
};

struct StreamParams {
    int window = 16;
    int blocks = 64;
    std::uint32_t stream = 0; // a number the stream's messages carry, checked on arrival
};

// How a side's polling loops waited during one stream, summed over its
// threads: polls that found nothing, and the times the CPU was given away
// (VIASTACK_WAIT's window used up).  Per message, what tells a stream whose
// threads poll each other's work from one whose threads take turns on a CPU.
struct WaitCounts {
    std::uint64_t idle_polls = 0;
    std::uint64_t yields = 0;
    WaitCounts &operator+=(const WaitCounts &o) {
        idle_polls += o.idle_polls;
        yields += o.yields;
        return *this;
    }
};

// The sending side's measurement of one stream.
struct SendTimes {
    double stream_ns = 0; // first thread's start to last thread's last confirmation
    double post_ns = 0;   // mean time of one VipPostSend (timed per window of posts), over all threads
    std::uint64_t messages = 0;
    bool preempted = false;        // some sending thread was switched out involuntarily during the stream
    WaitCounts wait;               // the timed part's
    std::uint64_t start_ticks = 0; // the clock's start (logp::ticks, the first thread's)
};

// The receiving side's count: messages taken (each checked: kind, stream,
// sender thread, number; in order per sending thread where one thread takes
// a link's receives; exactly once everywhere).
struct RecvCount {
    std::uint64_t messages = 0;
    WaitCounts wait;
    std::uint64_t ready_ticks = 0; // when the last receiving thread said it runs (logp::ticks)
};

// Runs the sending threads of one stream (this process holds the sending
// ends) and returns their times.  Throws std::runtime_error on an error
// completion, a stray message or a wait over kTimeoutS.
SendTimes run_senders(Setup &s, const Variant &v, const StreamParams &p, int spinning_threads);
// Runs the receiving threads of one stream until every message of it came.
RecvCount run_receivers(Setup &s, const Variant &v, const StreamParams &p, int spinning_threads);
// Both sides in this process (single-process mode), at once.
SendTimes run_both(Setup &s, const Variant &v, const StreamParams &p, RecvCount *recv);

} // namespace thbench
