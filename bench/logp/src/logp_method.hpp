// logp_method.hpp - LogP parameters from timed bursts, after Culler, Liu,
// Martin and Yoshikawa, "LogP performance assessment of fast network
// interfaces", IEEE Micro 16(1), February 1996.
//
// The method (what the measurement loops produce and how it is reduced):
//  * Bursts.  The sender times a burst of M back-to-back sends, optionally with
//    a computation delay dt inserted after every send.  T(M, dt) is the total.
//  * o_s (send overhead).  While a burst is short enough that flow control and
//    the NIC's queue never stall the sender (M <= short_max_m), every send
//    costs exactly o_s of host time: T(M, 0) = c + M*o_s (c is the constant
//    timer overhead), so o_s is the slope of T over the short bursts.
//  * g (gap).  In a long burst the sender soon fills the NIC queue / runs out
//    of credits and then proceeds at the rate the network accepts messages:
//    the steady-state slope of T(M, 0) over long bursts (M >= long_min_m) is g
//    (more exactly max(g, o_s): a sender slower than the network hides g).
//  * Cross-check of o_s.  With dt large enough that the network is never the
//    bottleneck (dt >= g - o_s) the long-burst slope is o_s + dt, so slope - dt
//    is a second, independent estimate of o_s; a disagreement is reported.
//  * o_r (receive overhead) is timed at the receiver: a message is sent, the
//    receiver computes long enough for it to have arrived, then times the one
//    receive operation (poll, handler/dispatch, buffer recycling) that takes it.
//  * o_r is split in two.  A layer whose receive operation also sends (AM
//    returns the request's credit with an implicit reply, Split-C acknowledges
//    a store) pays inside it for a send that belongs to the other direction:
//    in a ping-pong that send is the o_s of the way back.  o_r(reply) is the
//    receiver's time in the send path (posting, descriptor building, send
//    bookkeeping) during the timed receive, o_r(request) the rest.
//  * RTT/2 is half the median ping-pong round trip of the same small message,
//    and the latency is what remains: L = RTT/2 - o_s - o_r(request).  (A
//    round trip is o_s + L + o_r(request) + [the reply's o_s] + L + o_r; charging
//    o_r(reply) as well would count the reply's send twice and drive L below 0.)
//  * On shared memory the receiver's first read of the message pulls its
//    cache lines from the sender's CPU: that transfer is the wire.  When the
//    transfer is measured (recv_lines_ns: the receive timed with the lines
//    cold and with them local), o_r is the receive without it and the
//    transfer falls into L.
// Every parameter is the median over many timed repetitions (after warm-up).
#pragma once

#include "stats.hpp"

#include <limits>
#include <string>
#include <vector>

namespace logp {

// One timed burst at the sender.
struct BurstSample {
    int m = 0;           // messages in the burst
    double delay_ns = 0; // computation inserted after each send
    double total_ns = 0; // time from before the first send to after the last delay
};

struct LogPInputs {
    std::vector<BurstSample> bursts;
    std::vector<double> rtt_ns;        // ping-pong round trips
    std::vector<double> recv_ns;       // timed receive operations (o_r, request and reply together)
    std::vector<double> recv_reply_ns; // of those, the time in the send path (empty: the receive sends nothing)
    // The part of the timed receive that pulls the message from the sender's
    // CPU: on shared memory the receiver's first read of the packet moves its
    // cache line across, and that transfer is the wire.  When given (the
    // one-way time of a raw cross-core line on the same CPUs, LineProbe), o_r
    // is the receive without it and the transfer is part of L.  NaN: o_r is
    // the whole receive (recv_ns), as on a NIC.  recv_lines_iqr_ns: its
    // scatter (added to L's resolution).
    double recv_lines_ns = std::numeric_limits<double>::quiet_NaN();
    double recv_lines_iqr_ns = 0;
    int short_max_m = 4; // bursts up to this size never stall the sender
    int long_min_m = 32; // bursts from this size on are in steady state
    // The clock's own cost: a timed interval with nothing in it (two back-to-back
    // reads).  A single timed operation (a round trip, the one receive of an o_r
    // probe) carries it once; burst slopes do not (it is in their constant).
    double timer_ns = 0;
    // Interquartile ranges of the round trips and the receive timings, when the
    // series above hold only their medians (NaN: taken from the series).
    double rtt_iqr_ns = std::numeric_limits<double>::quiet_NaN();
    double recv_iqr_ns = std::numeric_limits<double>::quiet_NaN();
};

// How far L = RTT/2 - o_s - o_r(request) can be trusted.  L is a time and
// cannot be negative; the three terms come from separate series, each with its
// own scatter, so on a machine whose wire costs almost nothing (nicfw's wire is
// one shared cache line) the difference scatters around 0.  The resolution is
// the sum of the three terms' quartile deviations (half their IQRs):
//   raw >= 0                  -> "measured", L = raw
//   -resolution <= raw < 0    -> "below resolution", L = 0 (L is smaller than
//                                 the method can resolve; the raw figure is kept)
//   raw < -resolution         -> "inconsistent", L not reported (NaN): the
//                                 overheads measured in isolation exceed the
//                                 one-way time by more than the scatter explains.
enum class LatencyState { measured, below_resolution, inconsistent };
const char *latency_state_name(LatencyState s);

struct LogPEstimate {
    double rtt_half_ns = 0, o_s_ns = 0, g_ns = 0;
    double L_ns = 0;            // never negative; NaN when inconsistent (see LatencyState)
    double L_raw_ns = 0;        // RTT/2 - o_s - o_r(request) as computed
    double L_resolution_ns = 0; // the scatter that bounds it
    LatencyState L_state = LatencyState::measured;
    double o_r_ns = 0;            // o_r(request): the receive minus what it spends sending back
    double o_r_reply_ns = 0;      // o_r(reply+credit): the send path inside the receive
    double o_r_total_ns = 0;      // the timed receive operation as a whole (without the lines' transfer when given)
    bool o_r_lines_local = false; // the lines' transfer was measured and taken out of o_r (recv_lines_ns)
    double o_r_cold_ns = 0;       // o_r(request) of the cold receive (recv_ns): lines pulled from the sender's CPU
    double o_r_lines_ns = 0;      // cold - local: the transfer of the message's lines, counted in L
    double o_s_delay_ns = -1;     // cross-check from delayed long bursts; -1 = not measured
    double delay_used_ns = 0;     // the dt of that cross-check
    Summary rtt, recv;            // raw summaries (ns)
    double o_s_spread = 0, g_spread = 0; // worst relative IQR among the bursts used
    double g_fit_r2 = 0;
    std::vector<std::string> warnings;
};

// Throws std::invalid_argument when a required series is missing (no short
// bursts, no long bursts with dt = 0, no round trips, no receive timings).
LogPEstimate extract_logp(const LogPInputs &in, const SpreadPolicy &policy);

// ---- a LogP machine with known parameters, for checking the method ---------
// The sender pays o_s per send and then dt; the NIC accepts one message per g
// and holds at most `window` unsent messages, so a send blocks while the queue
// is full.  A message takes L on the wire and o_r to receive.
struct LogPMachine {
    double o_s_ns = 0, o_r_ns = 0, g_ns = 0, L_ns = 0;
    int window = 8;
};
// Total time of a burst of m sends with delay dt after each, on the machine.
double simulate_burst_ns(const LogPMachine &mach, int m, double delay_ns);
// Round trip of one message and its echo: 2 * (o_s + L + o_r).
double simulate_rtt_ns(const LogPMachine &mach);

} // namespace logp
