// firmware.cpp - the MCP main loop (Firmware, firmware.hpp): poll the doorbells
// of active VIs round-robin, transmit their descriptors (tx.cpp), drain the
// wire FIFO (rx.cpp), complete descriptors in order and post completion-queue
// entries; the VI error path; control packets kept until the peer has room;
// and how the firmware runs (inline steps, the step lock, its own thread,
// quiescing it while the host changes tables).
#include "firmware.hpp"

#include <linux/membarrier.h>

#include <algorithm>
#include <cstring>

#include "async_error.hpp"
#include "connection.hpp"
#include "descriptor_check.hpp"
#include "errors.hpp"
#include "host_dma.hpp"
#include "nic.hpp"
#include "packet_check.hpp"
#include "protection.hpp"
#include "vi_table.hpp"
#include "vipl_instr.h"
#include "viastack_log.hpp"

namespace nicfw {

VIPL_INSTR_DEFINE(c_fw_tx, "firmware.send", VIPL_INSTR_FIRMWARE);
VIPL_INSTR_DEFINE(c_fw_rx, "firmware.recv", VIPL_INSTR_FIRMWARE);
VIPL_INSTR_DEFINE(c_fw_bell, "firmware.doorbell", VIPL_INSTR_FIRMWARE);

void spin_ns(uint32_t ns) {
    if (!ns) return;
    const uint64_t end = now_ns() + ns;
    while (now_ns() < end) __builtin_ia32_pause();
}

Firmware::Firmware(const Config &cfg, const std::string &job, int rank, int nprocs, const ProtectionTable &protection,
                   const ViTable &vis, ErrorQueue &errors, ConnectionManager &cm)
    : cfg_(cfg), wire_(job, nprocs, cfg.ring_bytes), rank_(rank), protection_(protection), vis_(vis), errors_(errors),
      cm_(cm), sram_tx_(new unsigned char[kMaxStagedTransfer + 64]),
      sram_rx_(new unsigned char[wire_.max_payload() + 64]), cost_(cfg.profile.cost), dma_(rank), peers_(wire_, rank) {
    rx_head_ = wire_.ctl(rank_).head.load(std::memory_order_acquire);
    rx_slots_ = wire_.slots(rank_);
    rx_mask_ = wire_.ring_slots() - 1;
    if (cfg_.faults.any()) faults_ = std::make_unique<FaultInjector>(cfg_.faults, rank, now_ns());
    ack_list_.reserve(kMaxVi);
    // Every rank of a job has the same configuration, so every consumer of the
    // job's FIFOs sleeps or none does.
    wire_.consumers_may_sleep = cfg_.mode == Mode::Thread || cfg_.progress_thread;
    wire_.self = static_cast<uint16_t>(rank_);
    if (cfg_.faults.die_reserved_rank == rank_) wire_.die_after_reserves.store(cfg_.faults.die_reserved_n);
    if (cost_.on()) cost_host_acquire();
    direct_ok_ = cfg_.direct_send && cfg_.mode == Mode::Inline && !cost_.on() && !faults_ && !cfg_.transport;
    fast_tx_ = direct_ok_ && !stamping() && !cfg_.profile.gap_ns;
    fast_rx_ = !faults_ && !cfg_.transport && !cost_.on();
    fast_tx_limit_ = kMaxStagedTransfer + 1;
    if (cfg_.dma_min) fast_tx_limit_ = std::min(fast_tx_limit_, cfg_.shm_crossover()); // bulk_eligible never true below
    // One-sided RDMA (onesided.cpp): peers find this NIC's published table here.
    pub_vis_ = &protection_.published().vi(0);
    peer_tables_.resize(size_t(nprocs));
    static std::atomic<uint32_t> serial{0};
    const uint32_t fd = uint32_t(protection_.published().fd()) + 1;
    wire_.ctl(rank_).table.store((uint64_t(serial.fetch_add(1) + 1) << 32) | fd, std::memory_order_release);
}

Firmware::~Firmware() {
    stop_thread();
    wire_.ctl(rank_).table.store(0, std::memory_order_release);
    if (cost_host_) cost_host_release();
    if (faults_ || cfg_.transport) {
        const FaultInjector::Stats f = faults_ ? faults_->stats : FaultInjector::Stats{};
        viastack::log::info(viastack::log::Layer::nicfw,
                            "faults injected: {} dropped, {} duplicated, {} reordered, {} delayed, {} corrupted, {} "
                            "cut; recovery: {} CRC errors, {} retransmitted, {} acks sent, {} dropped by the "
                            "transport, {} connections broken",
                            f.dropped, f.duplicated, f.reordered, f.delayed, f.corrupted, f.cut, crc_errors_,
                            retransmits_, link_acks_, rel_drops_, links_broken_);
    }
}

void Firmware::vi_added(uint32_t index) {
    nvis_.fetch_add(1, std::memory_order_relaxed);
    if (index / 64 + 1 > vi_words_.load()) vi_words_.store(index / 64 + 1);
}

void Firmware::vi_removed(uint32_t index) {
    active_[index / 64].fetch_and(~(1ull << (index % 64)));
    nvis_.fetch_sub(1, std::memory_order_relaxed);
}

// ---------------------------------------------------------------- completions
void Firmware::report_error(ViImpl *vi, CqImpl *cq, VIP_DESCRIPTOR *d, VIP_RESOURCE_CODE rc, VIP_ERROR_CODE ec) {
    // The NIC handle is filled in by the error queue (the handle the VI or CQ was made through).
    errors_.report(vipl::common::make_error_descriptor(nullptr, vi ? vi->api_handle : nullptr,
                                                       cq ? cq->api_handle : nullptr, d, rc, ec),
                   vi       ? vi->owner
                       : cq ? cq->owner
                            : nullptr);
}

void Firmware::complete_tx(ViImpl *vi) {
    auto &c = vi->fw;
    while (c.tx_head < c.tx_next) {
        TxEntry &e = c.txq[c.tx_head % kMaxQueue];
        if (!e.ready) break;
        if (__builtin_expect(cost_.on(), 0) && cost_.now() < e.due) break; // cost model: not sent yet
        tx_visible_ = e.due;
        complete_desc(vi, e.desc, e.status, e.length, false);
        ++c.tx_head;
    }
}

// Send doorbell -> the firmware's transmit queue, as far as it has room.
inline void Firmware::fetch_tx_tokens(ViImpl *vi) {
    auto &c = vi->fw;
    Token t;
    while (c.tx_tail - c.tx_head < kMaxQueue && vi->bell_sq.pop(&t)) {
        c.txq[c.tx_tail % kMaxQueue] = TxEntry{.desc = t.desc, .mh = t.mh};
        ++c.tx_tail;
    }
}

// Completes everything the firmware holds for a VI with "flushed".
void Firmware::flush_vi(ViImpl *vi) {
    auto &c = vi->fw;
    fetch_tx_tokens(vi);
    for (uint64_t i = c.tx_head; i < c.tx_tail; ++i) {
        TxEntry &e = c.txq[i % kMaxQueue];
        if (!e.ready) {
            e.status |= VIP_STATUS_DESC_FLUSHED_ERROR;
            e.ready = true;
            e.awaiting = false;
            e.awaiting_transport_ack = false;
        }
    }
    c.tx_next = c.tx_tail;
    c.tx_await = c.tx_tail;
    complete_tx(vi);
    Token t;
    while (fetch_rx_desc(vi, &t))
        complete_desc(vi, t.desc, VIP_STATUS_OP_RECEIVE | VIP_STATUS_DESC_FLUSHED_ERROR, 0, true);
}

void Firmware::vi_error(ViImpl *vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *d, bool tell_peer) {
    if (vi->state.load() == ViState::Error) return;
    const bool was_connected = vi->state.load() == ViState::Connected;
    vi->set_state(ViState::Error);
    if (tell_peer && was_connected)
        send_ctl_reliably(vi->peer_nic, Op::ConnErr, vi->peer_vi, static_cast<uint16_t>(vi->index), vi->own_nonce);
    report_error(vi, nullptr, d, d ? VIP_RESOURCE_DESCRIPTOR : VIP_RESOURCE_VI, code);
    flush_vi(vi);
}

// ---------------------------------------------------------------- the loop
// One VI's doorbell work: fetch tokens, transmit, complete.
inline void Firmware::process_vi(ViImpl *vi) {
    auto &c = vi->fw;
    VIPL_INSTR_BEGIN(t0);
    if (__builtin_expect(
            vi->flush_req.load(std::memory_order_acquire) != vi->flush_done.load(std::memory_order_relaxed), 0)) {
        flush_vi(vi);
        vi->flush_done.store(vi->flush_req.load(std::memory_order_relaxed), std::memory_order_release);
    }
    fetch_tx_tokens(vi);
    if (vi->state.load(std::memory_order_relaxed) == ViState::Error) {
        flush_vi(vi);
        VIPL_INSTR_END(c_fw_bell, t0);
        return;
    }
    Token t;
    while (vi->bell_rq.pop(&t)) c.rxq.push(t);
    VIPL_INSTR_END(c_fw_bell, t0);
    transmit(vi);
}

inline void Firmware::transmit(ViImpl *vi) {
    auto &c = vi->fw;
    while (c.tx_next < c.tx_tail) {
        VIPL_INSTR_BEGIN(t1);
        const bool sent = tx_one(vi, c.txq[c.tx_next % kMaxQueue]);
        VIPL_INSTR_END(c_fw_tx, t1);
        if (!sent) break; // wire FIFO full: retry on a later pass
        const TxEntry &e = c.txq[c.tx_next % kMaxQueue];
        ++c.tx_next;
        if (__builtin_expect((e.status & VIP_STATUS_ERROR_MASK) != 0, 0) &&
            vi->attr.reliability != VIP_SERVICE_UNRELIABLE &&
            vi->state.load(std::memory_order_relaxed) == ViState::Connected) {
            // Reliable levels: a bad descriptor breaks the connection.  Complete it
            // with its own error first; the rest are flushed.
            VIP_DESCRIPTOR *d = e.desc;
            complete_tx(vi);
            vi_error(vi, VIP_ERROR_POST_DESC, d, true);
            break;
        }
        if (vi->state.load(std::memory_order_relaxed) == ViState::Error) break;
    }
    complete_tx(vi);
}

void Firmware::send_ctl_reliably(uint16_t dst_nic, Op op, uint16_t dst_vi, uint16_t src_vi, uint32_t imm) {
    if (send_ctl(dst_nic, op, dst_vi, src_vi, imm, nullptr, 0)) return;
    std::lock_guard<std::mutex> g(backlog_mu_);
    backlog_.push_back(PendingCtl{dst_nic, op, dst_vi, src_vi, imm});
    backlog_pending_.store(true, std::memory_order_release);
}

void Firmware::retry_backlog() {
    std::lock_guard<std::mutex> g(backlog_mu_);
    while (!backlog_.empty()) {
        const PendingCtl &c = backlog_.front();
        if (!send_ctl(c.dst_nic, c.op, c.dst_vi, c.src_vi, c.imm, nullptr, 0)) return;
        backlog_.pop_front();
    }
    backlog_pending_.store(false, std::memory_order_relaxed);
}

void Firmware::step() {
    if (__builtin_expect(backlog_pending_.load(std::memory_order_relaxed), 0)) retry_backlog();
    if (__builtin_expect(housekeeping_due(), 0)) housekeeping();
    // Doorbells: round-robin over the VIs marked active.
    const uint32_t kWords = vi_words_.load(std::memory_order_relaxed);
    uint32_t w = rr_cursor_ < kWords ? rr_cursor_ : 0;
    for (uint32_t n = 0; n < kWords; ++n, w = w + 1 < kWords ? w + 1 : 0) { // no division per step
        uint64_t bits = active_[w].load(std::memory_order_relaxed);
        if (!bits) continue;
        while (bits) {
            const uint32_t b = static_cast<uint32_t>(__builtin_ctzll(bits));
            bits &= bits - 1;
            const uint32_t idx = w * 64 + b;
            ViImpl *vi = vis_.get(idx);
            if (!vi) {
                active_[w].fetch_and(~(1ull << b), std::memory_order_relaxed);
                continue;
            }
            process_vi(vi);
            // Idle again?  Clear the bit, then re-check (the host may have rung meanwhile).
            // (Under the cost model a VI stays active until its sends completed: e.due.)
            if (vi->bell_sq.empty() && vi->bell_rq.empty() && vi->fw.tx_next == vi->fw.tx_tail &&
                (!cost_.on() || vi->fw.tx_head == vi->fw.tx_next) &&
                vi->flush_req.load(std::memory_order_relaxed) == vi->flush_done.load(std::memory_order_relaxed)) {
                if (run_.unshared_inline()) {
                    // Only this thread rings and serves doorbells: no atomic RMW needed.
                    active_[w].store(active_[w].load(std::memory_order_relaxed) & ~(1ull << b),
                                     std::memory_order_relaxed);
                } else {
                    active_[w].fetch_and(~(1ull << b), std::memory_order_seq_cst);
                    if (!vi->bell_sq.empty() || !vi->bell_rq.empty() || vi->flush_req.load() != vi->flush_done.load())
                        active_[w].fetch_or(1ull << b, std::memory_order_relaxed);
                }
            }
        }
        rr_cursor_ = w + 1;
    }
    drain_wire();
    if (__builtin_expect(cfg_.transport || faults_, 0)) {
        if (faults_ && faults_->held_count()) release_held();
        if (cfg_.transport) transport_tick();
    }
}

// The wire: a bounded number of packets per call, so doorbells are not starved.
void Firmware::drain_wire() {
    for (int n = 0; n < 32; ++n) {
        const PacketHeader *h = rx_peek();
        if (!h) break;
        if (__builtin_expect(!wire_header_sane(wire_, rx_head_, h), 0)) {
            // Corrupt FIFO memory: skip one slot (its tag is cleared) and go on.
            ++dropped_;
            reinterpret_cast<std::atomic<uint32_t> *>(const_cast<PacketHeader *>(h))->store(0);
            __atomic_store_n(&rx_head_, rx_head_ + 1, __ATOMIC_RELAXED); // read by rx_mark()
            wire_.ctl(rank_).head.store(rx_head_, std::memory_order_release);
            continue;
        }
        if (h->op != Op::Pad) {
            if (__builtin_expect(cost_.on(), 0) && !rx_due(h)) break; // cost model: still receiving it
            VIPL_INSTR_BEGIN(t2);
            const bool consumed = __builtin_expect(faults_ != nullptr, 0) ? rx_faulty(h) : rx_packet_try(h);
            VIPL_INSTR_END(c_fw_rx, t2);
            if (!consumed) {
                // Needs to answer but the peer's FIFO is full: retry later.  With the
                // transport, no window room for the answer: drop it, the peer resends.
                if (!drop_instead_) break;
                drop_instead_ = false;
                ++rel_drops_;
            }
        }
        __atomic_store_n(&rx_head_, wire_consume(wire_, rank_, rx_head_, h), __ATOMIC_RELAXED); // read by rx_mark()
    }
}

// The short message's straight line: every check tx_one makes, on the same
// kind of private copies (the control segment and the data segments read once
// from host memory), but only for the shape that passes them all and goes
// staged - a send (immediate data allowed, no fence) of at most kFastSegs
// registered segments below fast_tx_limit_, on a VI whose sends complete on
// the wire (not reliable reception) - so its result is tx_one's: the same
// packet, sequence number and completion status.  Anything else, or a full
// FIFO, returns false before anything changed, and tx_one then runs its full
// checks and produces the spec's error status.  The caller has checked the VI
// (Connected, nothing queued or flushing) and the configuration (fast_tx_,
// which leaves out the cost model, so the completion books nothing on it).
// `alone`: send_alone's call, for a VI whose connection fixed a level other
// than reliable reception (ViImpl::send_fast), which is not looked at again.
// Here beside its callers, so that a send is one call into the firmware.
template <bool alone>
[[gnu::always_inline]] inline bool Firmware::tx_fast(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    VIP_CONTROL_SEGMENT cs;
    std::memcpy(&cs, &d->CS, sizeof cs);
    const uint32_t n = cs.SegCount;
    if ((cs.Control & ~VIP_CONTROL_IMMEDIATE) != VIP_CONTROL_OP_SENDRECV || n > kFastSegs ||
        cs.Length >= fast_tx_limit_ || cs.Length > vi->attr.max_transfer ||
        (!alone && vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION))
        return false;
    // The descriptor (control segment and data segments) in one region of the VI's ptag.
    const Region *dr = protection_.covers(mh, vi->ptag_id, d, vipl::common::descriptor_bytes(n));
    if (!dr) return false;
    VIP_DESCRIPTOR_SEGMENT seg[kFastSegs];
    for (uint32_t i = 0; i < n; ++i) seg[i] = d->DS[i];
    uint64_t total = 0;
    if (!protection_.check_segments(vi->ptag_id, seg, n, &total, dr, mh) || total != cs.Length) return false;

    TxSlot tx;
    if (!wire_reserve(wire_, vi->peer_nic, cs.Length, &tx)) return false; // back-pressure: the queue's path
    const bool imm = cs.Control & VIP_CONTROL_IMMEDIATE;
    write_header(tx.hdr, static_cast<uint16_t>(rank_),
                 {.op = Op::Send,
                  .flags = static_cast<uint8_t>(imm ? kFlagImm : 0),
                  .dst_vi = vi->peer_vi,
                  .src_vi = static_cast<uint16_t>(vi->index),
                  .seq = vi->fw.send_seq++,
                  .length = cs.Length,
                  .imm = imm ? cs.ImmediateData : 0});
    unsigned char *out = tx.payload;
    for (uint32_t i = 0; i < n; ++i) { // host DMA and link DMA in one, as tx_packet
        dma_copy(out, seg[i].Local.Data.Address, seg[i].Local.Length);
        out += seg[i].Local.Length;
    }
    wire_publish(wire_, vi->peer_nic, tx, cfg_.crc);
    vipl::common::complete_descriptor(d, VIP_STATUS_OP_SEND); // complete_desc without the cost model
    post_cq(vi, vi->send_cq, d, false);
    return true;
}

// Whether any VI has a doorbell pending (the MCP iteration would serve it first).
// The first word (VIs 0-63, the only one in most programs) without the loop.
inline bool Firmware::doorbell_pending() const {
    if (active_[0].load(std::memory_order_relaxed)) return true;
    const uint32_t words = vi_words_.load(std::memory_order_relaxed);
    for (uint32_t w = 1; w < words; ++w)
        if (active_[w].load(std::memory_order_relaxed)) return true;
    return false;
}

// Nothing else for the firmware to do before this VI's next send: its queue
// has no untransmitted entry and room, its doorbell is empty, it is Connected
// and not being flushed, and no VI has a doorbell pending.  In an owner section.
inline bool Firmware::direct_idle(const ViImpl *vi) const {
    const auto &c = vi->fw;
    return c.tx_next == c.tx_tail && c.tx_tail - c.tx_head < kMaxQueue && direct_ready(vi);
}

// direct_idle's conditions besides the VI's transmit queue: its doorbell
// empty, Connected, not being flushed, and no VI's doorbell pending.
[[gnu::always_inline]] inline bool Firmware::direct_ready(const ViImpl *vi) const {
    return vi->bell_sq.empty() && vi->state.load(std::memory_order_relaxed) == ViState::Connected &&
        vi->flush_req.load(std::memory_order_relaxed) == vi->flush_done.load(std::memory_order_relaxed) &&
        !doorbell_pending();
}

// A direct send the fast transmit did not take: onto the VI's transmit queue
// and transmitted from there (tx_one: the checks, the spec's error statuses);
// a send the wire FIFO had no room for stays queued, its VI marked active, and
// the loop retries it.  In an owner section, direct_idle(vi).
void Firmware::transmit_queued(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    auto &c = vi->fw;
    c.txq[c.tx_tail % kMaxQueue] = TxEntry{.desc = d, .mh = mh};
    ++c.tx_tail;
    transmit(vi);
    if (c.tx_next != c.tx_tail)
        active_[vi->index / 64].store(active_[vi->index / 64].load(std::memory_order_relaxed) |
                                          (1ull << (vi->index % 64)),
                                      std::memory_order_relaxed);
}

// What the step would have done besides a direct send: housekeeping when due,
// and the wire drained when a packet waits.
[[gnu::always_inline]] inline void Firmware::direct_step_rest() {
    if (housekeeping_due()) housekeeping();
    if (rx_peek()) drain_wire();
}

// The send transmitted now (tx_fast, else through the VI's transmit queue),
// then what the step would have done besides.  In an owner section,
// direct_idle(vi).
[[gnu::always_inline]] inline void Firmware::direct_transmit(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    auto &c = vi->fw;
    VIPL_INSTR_BEGIN(t1);
    const bool fast = fast_tx_ && c.tx_head == c.tx_tail && tx_fast<false>(vi, d, mh);
    VIPL_INSTR_END_IF(c_fw_tx, t1, fast);
    if (!fast) transmit_queued(vi, d, mh);
    direct_step_rest();
}

// What a doorbell and the next MCP iteration would do for this send, when they
// would do nothing else: the token would be fetched at once (the VI's queue
// has no untransmitted entry), no other VI has a doorbell pending, and there is
// no backlog, cost model, fault injection or transport to run.  Completion
// order is kept by the VI's transmit queue as on the doorbell path (an entry
// completes only after every earlier one).  The wire is still drained when a
// packet waits, and housekeeping still runs every kHousekeepingSteps calls, so
// a host that only posts sends keeps its NIC answering.
bool Firmware::send_direct(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    if (!direct_ok_ || run_.shared() || backlog_pending_.load(std::memory_order_relaxed)) return false;
    if (__builtin_expect(!run_.on_owner_thread(), 0)) return false; // ring: shares stepping
    Stepper<Firmware>::OwnerSection owner(&run_);
    if (!owner.alone() || !direct_idle(vi)) return false;
    direct_transmit(vi, d, mh);
    return true;
}

// tx_fast for send_alone, timed as the firmware's send when instrumentation
// is on (kept out of line: off, the send pays one branch for it).
__attribute__((noinline)) bool Firmware::tx_fast_timed(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    VIPL_INSTR_BEGIN(t1);
    const bool fast = tx_fast<true>(vi, d, mh);
    VIPL_INSTR_END_IF(c_fw_tx, t1, fast);
    return fast;
}

// send_direct's work for a VI whose fixed conditions were checked when it
// connected (ViImpl::send_fast: fast_tx_, its reliability level, no send
// profile) and a caller that is the owner thread of an unshared inline
// firmware (alone_on_owner_thread): the descriptor goes on the host's send
// queue inside the same owner section, so the queue needs no post lock (a
// second posting thread shares stepping first, which waits for this section
// and turns every later post to the locked path).  The VI's transmit queue
// empty (tx_head == tx_tail) is direct_idle's two conditions on it at once:
// nothing untransmitted, and room.  Declined: nothing was done, the VI's
// general path decides (after the section: sections do not nest).  Errors
// the send raised are delivered once the section ended, as host_poll would.
VIP_RETURN Firmware::send_alone(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, GeneralPost general) {
    {
        Stepper<Firmware>::OwnerSection owner(&run_);
        const auto &c = vi->fw;
        if (__builtin_expect(!owner.alone() || backlog_pending_.load(std::memory_order_relaxed) ||
                                 c.tx_head != c.tx_tail || !direct_ready(vi),
                             0))
            goto declined;
        if (__builtin_expect(!vi->host_sq.post(d), 0)) return VIP_ERROR_RESOURCE; // full (post clears Status)
        const bool fast = __builtin_expect(vipl_instr_timing, 0) ? tx_fast_timed(vi, d, mh) : tx_fast<true>(vi, d, mh);
        if (__builtin_expect(!fast, 0)) transmit_queued(vi, d, mh);
        direct_step_rest();
    }
    vi->hw->deliver_errors();
    return VIP_SUCCESS;
declined:
    return (vi->*general)(d, mh);
}

// ---------------------------------------------------------------- faults and recovery
void Firmware::housekeeping() {
    housekeeping_in_.store(kHousekeepingSteps, std::memory_order_relaxed);
    const uint64_t now = now_ns();
    if (faults_ && !dead_ && faults_->dead(now)) {
        // Killed by the fault injector: every VI breaks, nothing is answered any more.
        dead_ = true;
        viastack::log::warn(viastack::log::Layer::nicfw,
                            "the fault injector killed this NIC (VIPL_NICFW_FAULTS kill=)");
        const uint32_t n = vi_words_.load(std::memory_order_relaxed) * 64;
        for (uint32_t i = 0; i < n; ++i)
            if (ViImpl *vi = vis_.get(i); vi && vi->state.load() != ViState::Error && vi->state.load() != ViState::Idle)
                vi_error(vi, VIP_ERROR_CATASTROPHIC, nullptr, false);
    }
    if (now < next_watch_ns_.load(std::memory_order_relaxed)) return;
    next_watch_ns_.store(now + 100'000'000, std::memory_order_relaxed); // every 100 ms
    // A peer whose process is gone: its VIs here break, once everything it sent
    // before it died has been taken off our FIFO.
    if (rx_peek()) {
        next_watch_ns_.store(now, std::memory_order_relaxed); // drain first, look again at the next housekeeping
        return;
    }
    // Nothing published at head, but a slot reserved there by a producer that
    // died before publishing it: skip it, or every packet the live senders put
    // behind it would wait forever.  Only a slot that names a dead owner is
    // skipped (wire.hpp claim_of): a slow, live producer publishes in time.
    uint64_t stuck_slots = 0;
    if (const int owner = wire_stuck_owner(wire_, rank_, rx_head_, &stuck_slots); owner >= 0 && peers_.dead(owner)) {
        viastack::log::warn(viastack::log::Layer::nicfw,
                            "rank {} died holding {} reserved slot(s) of this NIC's FIFO: skipped", owner, stuck_slots);
        ++dropped_;
        __atomic_store_n(&rx_head_, wire_skip(wire_, rank_, rx_head_, stuck_slots),
                         __ATOMIC_RELAXED);                   // read by rx_mark()
        next_watch_ns_.store(now, std::memory_order_relaxed); // drain what follows, then look again
        return;
    }
    if (backlog_pending_.load(std::memory_order_relaxed)) drop_backlog_to_dead();
    const uint32_t n = vi_words_.load(std::memory_order_relaxed) * 64;
    bool pending = false;
    for (uint32_t i = 0; i < n; ++i) {
        ViImpl *vi = vis_.get(i);
        if (!vi) continue;
        const ViState st = vi->state.load(std::memory_order_acquire);
        if (st == ViState::Connected && peers_.dead(vi->peer_nic)) peer_died(vi->peer_nic);
        pending |= st == ViState::Pending;
    }
    // A client request to a process that is gone would wait for its whole
    // timeout (for ever with VIP_INFINITE): it fails now.
    if (pending) cm_.fail_requests_to_dead([this](uint16_t nic) { return peers_.dead(nic); });
}

// A peer whose process is gone never drains its FIFO: control packets for it
// are dropped (its connections break here anyway, peer_died), or the backlog
// would keep a firmware thread from sleeping for ever (has_work).
void Firmware::drop_backlog_to_dead() {
    std::lock_guard<std::mutex> g(backlog_mu_);
    std::erase_if(backlog_, [this](const PendingCtl &c) { return peers_.dead(c.dst_nic); });
    if (backlog_.empty()) backlog_pending_.store(false, std::memory_order_relaxed);
}

void Firmware::peer_died(uint16_t nic) {
    viastack::log::info(viastack::log::Layer::nicfw, "rank {} is gone (its process exited): its connections break",
                        nic);
    const uint32_t n = vi_words_.load(std::memory_order_relaxed) * 64;
    for (uint32_t i = 0; i < n; ++i) {
        ViImpl *vi = vis_.get(i);
        if (vi && vi->peer_nic == nic && vi->state.load(std::memory_order_acquire) == ViState::Connected) {
            ++links_broken_;
            vi_error(vi, VIP_ERROR_CONN_LOST, nullptr, false);
        }
    }
}

// A data-path packet on a faulty wire.  Connection management passes untouched
// (unless the link is cut or the NIC dead).  Returns whether it was consumed.
bool Firmware::rx_faulty(const PacketHeader *h) {
    const uint64_t now = now_ns();
    if (dead_ || faults_->cut(now, h->src_nic)) {
        ++faults_->stats.cut;
        return true;
    }
    faults_->packet_taken();
    if (h->op >= Op::ConnReq && h->op != Op::LinkAck) return rx_packet_try(h);
    switch (faults_->decide()) {
    case Fate::Deliver: return rx_packet_try(h);
    case Fate::Drop: ++faults_->stats.dropped; return true;
    case Fate::Duplicate:
        if (!rx_packet_try(h)) return false;
        if (faults_->hold(h, 0, 0)) ++faults_->stats.duplicated;
        return true;
    case Fate::Reorder:
        if (!faults_->hold(h, 0, 1)) return rx_packet_try(h);
        ++faults_->stats.reordered;
        return true;
    case Fate::Delay:
        if (!faults_->hold(h, now + uint64_t(faults_->spec().delay_us) * 1000, 0)) return rx_packet_try(h);
        ++faults_->stats.delayed;
        return true;
    case Fate::Corrupt: {
        const size_t n = std::min<size_t>(kHeaderBytes + packet_read_bytes(*h), size_t(h->nslots) * kSlotBytes);
        unsigned char *c = faults_->scratch(n);
        std::memcpy(c, h, n);
        faults_->corrupt(c, n);
        ++faults_->stats.corrupted;
        rx_packet_try(reinterpret_cast<const PacketHeader *>(c)); // the CRC drops it
        drop_instead_ = false;
        return true;
    }
    }
    return true;
}

// Held packets that are due: taken as if they had just arrived.  A packet that
// cannot be taken now (no room to answer) is lost, as on a real link.
void Firmware::release_held() {
    const uint64_t now = now_ns();
    for (auto &e : faults_->held()) {
        if (!e.used || e.after || now < e.release_ns) continue;
        rx_packet_try(reinterpret_cast<const PacketHeader *>(e.bytes.data()));
        drop_instead_ = false;
        faults_->released(e);
    }
}

void Firmware::link_connected(ViImpl *vi) {
    // Made with the VI (objects.cpp); the VI is not Connected yet, so the
    // firmware does not read it (it looks at a VI's link only when Connected).
    if (!vi->fw.link || vi->attr.reliability == VIP_SERVICE_UNRELIABLE) return;
    vi->fw.link->reset();
    vi->fw.link->una = vi->fw.send_seq; // the connection's initial sequence number (connect.cpp)
}

// ---------------------------------------------------------------- execution
void Firmware::wake_thread() {
    RingCtl &c = wire_.ctl(rank_);
    c.doorbell.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&c.doorbell), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

// The firmware thread's iteration (stepper.hpp): a step, and whether it
// found work (a VI with a doorbell, or packets taken off the wire).
bool Firmware::thread_step() {
    const uint64_t head_before = rx_head_;
    bool any_active = false;
    for (uint32_t w = 0; w < vi_words_.load(std::memory_order_relaxed); ++w)
        if (active_[w].load(std::memory_order_relaxed)) {
            any_active = true;
            break;
        }
    step();
    return any_active || rx_head_ != head_before;
}

// Before the firmware thread sleeps: anything on the wire, a doorbell, or a
// control packet waiting for room in a peer's FIFO.  Nothing wakes this
// firmware when that peer drains, so a sleeping thread would retry it only at
// each futex timeout (2 ms); it keeps stepping instead, as it does for a VI
// whose sends wait for room.
bool Firmware::has_work() {
    bool busy = backlog_pending_.load(std::memory_order_acquire) || rx_peek() != nullptr;
    for (auto &w : active_) busy = busy || w.load(std::memory_order_seq_cst) != 0;
    return busy;
}

} // namespace nicfw
