// layer.hpp - what the measurement loops need from a communication layer.
//
// A Layer is one connection between rank 0 (the client / sender) and rank 1
// (the server / receiver) of a two-process job.  Every measurement is a pair
// of calls made in the same order on both ranks: rank 0 calls the *_client /
// send side, rank 1 the matching *_server / receive side.  The layer owns its
// own flow control and confirmations; the loops only time rank 0's calls (and,
// for o_r, rank 1's receive).  A single-process layer (the synthetic LogP
// machine) models its peer and is driven through the client calls only.
#pragma once

#include <cstddef>
#include <string>

namespace logp {

class Layer {
public:
    virtual ~Layer() = default;
    virtual std::string id() const = 0;          // "vi", "am-v3", "am-v1", "fm", "bip", "splitc", "synthetic"
    virtual std::string description() const = 0; // one line for the report
    virtual bool single_process() const { return false; }

    // Burst sizes: up to short_burst_max() sends never stall the sender; from
    // long_burst_min() on, a burst is in steady state; max_burst() is the
    // largest burst the layer accepts.
    virtual int short_burst_max() const = 0;
    virtual int long_burst_min() const = 0;
    virtual int max_burst() const = 0;

    // Round trips: rank 0 calls rtt_client(bytes) n times (each one round
    // trip of a `bytes` message and its echo), then rtt_client_done(); rank 1
    // calls rtt_server_series(bytes, n) once and returns when all are served.
    virtual void rtt_client(std::size_t bytes) = 0;
    virtual void rtt_client_done() {}
    virtual void rtt_server_series(std::size_t bytes, int n) = 0;

    // Bursts: rank 0 times m calls of burst_send_one (each sends one small
    // message), then calls burst_sender_finish(m), untimed, which returns once
    // rank 1 has taken all m and every resource is back; rank 1 calls
    // burst_receive(m).
    virtual void burst_send_one() = 0;
    virtual void burst_sender_finish(int m) = 0;
    virtual void burst_receive(int m) = 0;

    // o_r: rank 0 sends one message and waits for the confirmation; rank 1
    // computes for settle_ns (no library calls), then times the one receive
    // operation that takes the message and returns its duration in ns, negated
    // when this thread lost the CPU during that operation (a receiver that is
    // preempted inside a poll finds the message there when it resumes, so the
    // call would be charged the whole time off the CPU).
    virtual void recv_probe_send() = 0;
    virtual double recv_probe_receive(double settle_ns) = 0;
    // o_r(reply): with the instrumentation on (vipl_instr.h), the ns the last
    // recv_probe_receive spent inside its timed operation in the send path
    // (an implicit reply returning the credit, an acknowledgement); 0 for a
    // layer whose receive sends nothing.  See logp_method.hpp.
    virtual double recv_probe_reply_ns() const { return 0; }

    // Bulk streaming for the bandwidth curve; rank 0 returns the ns from the
    // first send to the confirmation that all `count` messages were delivered.
    virtual bool has_bulk() const { return false; }
    virtual std::string bulk_method() const { return ""; }
    virtual std::size_t bulk_max_bytes() const { return 0; }
    virtual double bulk_stream_client(std::size_t bytes, int count) { return 0; }
    virtual void bulk_stream_server(std::size_t bytes, int count) {}

    // The host-overhead breakdown operation (Begel et al., Tables 3/4): "" when
    // the layer has none, else its name ("am-request-reply", "splitc-get").
    // Rank 0 runs breakdown_client() n times then breakdown_client_done();
    // rank 1 serves with breakdown_server_series(n).
    virtual std::string breakdown_name() const { return ""; }
    virtual void breakdown_client() {}
    virtual void breakdown_client_done() {}
    virtual void breakdown_server_series(int n) {}
};

} // namespace logp
