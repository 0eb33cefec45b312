// reliable.hpp - the reliable transport of a connection at the reliable levels
// when the wire may lose packets (docs/nicfw.md "Faults and recovery").
//
// Every data-path packet of a connection (Send, RdmaWrite, ReadReq, and the
// answers Ack and ReadResp) already carries a per-direction sequence number.
// With the transport on, the sender keeps a copy of each such packet in the
// connection's retransmit window until the peer acknowledges it; the header's
// `aux` carries the sender's cumulative acknowledgement (the low 16 bits of the
// next sequence number it expects), piggybacked on every packet, and a receiver
// with nothing to send answers with a LinkAck after a short delay or every few
// packets (at once after a duplicate or a gap).  The receiver takes packets
// strictly in order (go-back-N: a packet after a gap is dropped), drops
// duplicates, and the link CRC drops corrupt packets.  The retransmission
// timeout follows RFC 6298 (SRTT, RTTVAR, Karn's rule, exponential back-off);
// when the oldest unacknowledged packet has made no progress for the link
// timeout, the connection is declared broken.
#pragma once

#include <cstdint>
#include <memory>

#include "wire.hpp"

namespace nicfw {

// Sequence arithmetic modulo 2^32.
inline bool seq_before(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }

class RetransmitWindow {
public:
    static constexpr uint32_t kBytes = 256 * 1024; // packet copies (header + payload): 4 of the largest staged packets
    static constexpr uint32_t kEntries = 256;      // packets in flight
    // Requests (data) may fill half; replies (Acks, read responses) the rest, so
    // a receiver can always answer what it takes (the FIFO's reply headroom rule).
    // The buffer is touched once here (zero-filled), so a long run's resident
    // memory does not creep up as the ring first reaches each page.
    RetransmitWindow();

    struct Entry {
        uint64_t start, end; // byte positions in the ring (monotonic)
        uint64_t sent_ns;
        uint32_t seq;
        uint32_t bytes; // header + payload (+ stamp)
        bool reply;
        bool retransmitted; // Karn: no RTT sample from it
    };
    bool empty() const { return head_ == tail_; }
    uint32_t count() const { return static_cast<uint32_t>(tail_ - head_); }
    bool room(uint32_t bytes, bool reply) const;
    // Where to copy a packet of `bytes` (room() checked); becomes the newest entry.
    unsigned char *push(uint32_t seq, uint32_t bytes, bool reply, uint64_t now);
    Entry &at(uint32_t i) { return ents_[(head_ + i) % kEntries]; }
    unsigned char *data(const Entry &e) { return buf_.get() + e.start % kBytes; }
    Entry &oldest() { return ents_[head_ % kEntries]; }
    void pop();
    void clear() {
        head_ = tail_ = 0;
        rpos_ = wpos_ = 0;
    }

private:
    uint64_t next_pos() const;
    std::unique_ptr<unsigned char[]> buf_;
    Entry ents_[kEntries];
    uint64_t head_ = 0, tail_ = 0;
    uint64_t rpos_ = 0, wpos_ = 0;
};

// Transport state of one end of a reliable connection (ViImpl::fw.link), made
// when the connection is made (connect.cpp) and used only by the firmware.
struct LinkState {
    RetransmitWindow win;
    uint32_t una = 0; // oldest sequence number not yet acknowledged
    // RFC 6298, in ns
    uint64_t srtt = 0, rttvar = 0, rto = 0;
    uint64_t timer_ns = 0;    // when the oldest packet times out
    uint64_t progress_ns = 0; // last time the peer acknowledged something new
    // acknowledgements we owe the peer
    uint32_t owed = 0; // in-order packets taken since our last ack
    uint64_t owed_since = 0;
    bool ack_now = false;     // a duplicate or a gap: ack at once
    bool gap = false;         // ... a gap: the ack asks the peer to resend now (fast retransmit)
    uint64_t fast_rtx_ns = 0; // our last fast retransmission (at most one per round trip)
    bool in_ack_list = false;
    // counters
    uint64_t retransmits = 0, timeouts = 0, fast_retransmits = 0, dups_dropped = 0, gaps_dropped = 0;

    static constexpr uint64_t kInitialRto = 5'000'000; // 5 ms
    static constexpr uint64_t kMinRto = 1'000'000;     // 1 ms
    static constexpr uint64_t kMaxRto = 200'000'000;   // 200 ms
    static constexpr uint64_t kAckDelay = 100'000;     // 100 us
    static constexpr uint32_t kAckEvery = 8;

    void reset();
    void rtt_sample(uint64_t r);
    void backoff() { rto = rto * 2 > kMaxRto ? kMaxRto : rto * 2; }
};

} // namespace nicfw
