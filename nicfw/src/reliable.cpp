// reliable.cpp - the retransmit window and the RTT estimator (reliable.hpp).
#include "reliable.hpp"

namespace nicfw {

RetransmitWindow::RetransmitWindow() : buf_(new unsigned char[kBytes]()), ents_{} {}

// Where the next copy starts: an empty window starts over at the ring's start,
// so even the largest packet fits an empty window without padding.
uint64_t RetransmitWindow::next_pos() const { return head_ == tail_ ? (wpos_ + kBytes - 1) / kBytes * kBytes : wpos_; }

bool RetransmitWindow::room(uint32_t bytes, bool reply) const {
    const uint64_t limit_e = reply ? kEntries : kEntries / 2;
    const uint64_t limit_b = reply ? kBytes : kBytes / 2;
    if (tail_ - head_ >= limit_e) return false;
    const uint64_t w = next_pos();
    const uint64_t r = head_ == tail_ ? w : rpos_;
    const uint64_t off = w % kBytes;
    const uint64_t pad = off + bytes > kBytes ? kBytes - off : 0;
    return w + pad + bytes - r <= limit_b;
}

unsigned char *RetransmitWindow::push(uint32_t seq, uint32_t bytes, bool reply, uint64_t now) {
    wpos_ = next_pos();
    const uint64_t off = wpos_ % kBytes;
    if (off + bytes > kBytes) wpos_ += kBytes - off; // a copy never wraps
    if (head_ == tail_) rpos_ = wpos_;
    Entry &e = ents_[tail_ % kEntries];
    e = Entry{wpos_, wpos_ + bytes, now, seq, bytes, reply, false};
    wpos_ += bytes;
    ++tail_;
    return buf_.get() + e.start % kBytes;
}

void RetransmitWindow::pop() {
    ++head_;
    rpos_ = head_ == tail_ ? wpos_ : ents_[head_ % kEntries].start;
}

void LinkState::reset() {
    win.clear();
    una = 0;
    srtt = rttvar = 0;
    rto = kInitialRto;
    timer_ns = progress_ns = 0;
    owed = 0;
    owed_since = 0;
    ack_now = false;
    gap = false;
    fast_rtx_ns = 0;
    in_ack_list = false;
}

void LinkState::rtt_sample(uint64_t r) {
    if (!srtt) {
        srtt = r;
        rttvar = r / 2;
    } else {
        const uint64_t d = srtt > r ? srtt - r : r - srtt;
        rttvar = (3 * rttvar + d) / 4;
        srtt = (7 * srtt + r) / 8;
    }
    rto = srtt + (4 * rttvar > 100'000 ? 4 * rttvar : 100'000); // G: the timer tick
    if (rto < kMinRto) rto = kMinRto;
    if (rto > kMaxRto) rto = kMaxRto;
}

} // namespace nicfw
