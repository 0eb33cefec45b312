// firmware.cpp - the MCP main loop: poll the doorbells of active VIs round-robin,
// transmit their descriptors, drain the wire FIFO, complete descriptors in
// order and post completion-queue entries.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "nic.hpp"
#include "vipl_instr.h"

namespace nicfw {

VIPL_INSTR_DEFINE(c_fw_tx, "firmware.send", VIPL_INSTR_FIRMWARE);
VIPL_INSTR_DEFINE(c_fw_rx, "firmware.recv", VIPL_INSTR_FIRMWARE);
VIPL_INSTR_DEFINE(c_fw_bell, "firmware.doorbell", VIPL_INSTR_FIRMWARE);

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void spin_ns(uint32_t ns) {
    if (!ns) return;
    const uint64_t end = now_ns() + ns;
    while (now_ns() < end) __builtin_ia32_pause();
}

// Writes a completed descriptor back to the host and posts the CQ entry.
void NicHw::complete_desc(ViImpl *vi, VIP_DESCRIPTOR *d, uint32_t status, uint32_t length, bool recv) {
    if (recv) d->CS.Length = length;
    __atomic_store_n(&d->CS.Status, status | VIP_STATUS_DONE, __ATOMIC_RELEASE);
    CqImpl *cq = recv ? vi->recv_cq : vi->send_cq;
    if (cq && !cq->ring.push(CqEntry{vi->index, recv})) {
        // The spec makes CQ overrun a catastrophic error of the CQ.
        if (!cq->overrun.exchange(true)) report_error(vi, cq, d, VIP_RESOURCE_CQ, VIP_ERROR_CATASTROPHIC);
    }
}

void NicHw::complete_tx(ViImpl *vi) {
    while (vi->tx_head < vi->tx_next) {
        TxEntry &e = vi->txq[vi->tx_head % kMaxQueue];
        if (!e.ready) break;
        complete_desc(vi, e.desc, e.status, e.length, false);
        ++vi->tx_head;
    }
}

bool NicHw::fetch_rx_desc(ViImpl *vi, Token *t) {
    if (vi->rxq.pop(t)) return true;
    Token b;
    while (vi->bell_rq.pop(&b)) vi->rxq.push(b);
    return vi->rxq.pop(t);
}

// Completes everything the firmware holds for a VI with "flushed".
void NicHw::flush_vi(ViImpl *vi) {
    Token t;
    while (vi->tx_tail - vi->tx_head < kMaxQueue && vi->bell_sq.pop(&t)) {
        vi->txq[vi->tx_tail % kMaxQueue] = TxEntry{t.desc, t.mh, 0, 0, false, false};
        ++vi->tx_tail;
    }
    for (uint64_t i = vi->tx_head; i < vi->tx_tail; ++i) {
        TxEntry &e = vi->txq[i % kMaxQueue];
        if (!e.ready) {
            e.status |= VIP_STATUS_DESC_FLUSHED_ERROR;
            e.ready = true;
            e.awaiting = false;
        }
    }
    vi->tx_next = vi->tx_tail;
    vi->tx_await = vi->tx_tail;
    complete_tx(vi);
    while (fetch_rx_desc(vi, &t))
        complete_desc(vi, t.desc, VIP_STATUS_OP_RECEIVE | VIP_STATUS_DESC_FLUSHED_ERROR, 0, true);
}

void NicHw::vi_error(ViImpl *vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *d, bool tell_peer) {
    if (vi->state.load() == static_cast<int>(ViState::Error)) return;
    const bool was_connected = vi->state.load() == static_cast<int>(ViState::Connected);
    vi->state.store(static_cast<int>(ViState::Error), std::memory_order_release);
    if (tell_peer && was_connected)
        send_ctl_reliably(vi->peer_nic, Op::ConnErr, vi->peer_vi, static_cast<uint16_t>(vi->index), code);
    report_error(vi, nullptr, d, d ? VIP_RESOURCE_DESCRIPTOR : VIP_RESOURCE_VI, code);
    flush_vi(vi);
}

// One VI's doorbell work: fetch tokens, transmit, complete.
static inline void process_vi(NicHw *hw, ViImpl *vi) {
    VIPL_INSTR_BEGIN(t0);
    if (__builtin_expect(vi->flush_req.load(std::memory_order_acquire) !=
                             vi->flush_done.load(std::memory_order_relaxed), 0)) {
        hw->flush_vi(vi);
        vi->flush_done.store(vi->flush_req.load(std::memory_order_relaxed), std::memory_order_release);
    }
    Token t;
    while (vi->tx_tail - vi->tx_head < kMaxQueue && vi->bell_sq.pop(&t)) {
        vi->txq[vi->tx_tail % kMaxQueue] = TxEntry{t.desc, t.mh, 0, 0, false, false};
        ++vi->tx_tail;
    }
    if (vi->state.load(std::memory_order_relaxed) == static_cast<int>(ViState::Error)) {
        hw->flush_vi(vi);
        VIPL_INSTR_END(c_fw_bell, t0);
        return;
    }
    while (vi->bell_rq.pop(&t)) vi->rxq.push(t);
    VIPL_INSTR_END(c_fw_bell, t0);
    while (vi->tx_next < vi->tx_tail) {
        VIPL_INSTR_BEGIN(t1);
        const bool sent = hw->tx_one(vi, vi->txq[vi->tx_next % kMaxQueue]);
        VIPL_INSTR_END(c_fw_tx, t1);
        if (!sent) break; // wire FIFO full: retry on a later pass
        const TxEntry &e = vi->txq[vi->tx_next % kMaxQueue];
        ++vi->tx_next;
        if (__builtin_expect((e.status & VIP_STATUS_ERROR_MASK) != 0, 0) &&
            vi->attr.reliability != VIP_SERVICE_UNRELIABLE &&
            vi->state.load(std::memory_order_relaxed) == static_cast<int>(ViState::Connected)) {
            // Reliable levels: a bad descriptor breaks the connection.  Complete it
            // with its own error first; the rest are flushed.
            VIP_DESCRIPTOR *d = e.desc;
            hw->complete_tx(vi);
            hw->vi_error(vi, VIP_ERROR_POST_DESC, d, true);
            break;
        }
        if (vi->state.load(std::memory_order_relaxed) == static_cast<int>(ViState::Error)) break;
    }
    hw->complete_tx(vi);
}

// Control packets (Disc, ConnErr) that found the peer's FIFO full are kept and
// retried, so a peer always learns that its connection is gone.
void NicHw::send_ctl_reliably(uint16_t dst_nic, Op op, uint16_t dst_vi, uint16_t src_vi, uint32_t imm) {
    if (send_ctl(dst_nic, op, dst_vi, src_vi, 0, imm, 0, nullptr, 0)) return;
    std::lock_guard<std::mutex> g(backlog_mu);
    backlog.push_back(PendingCtl{dst_nic, op, dst_vi, src_vi, imm});
    backlog_pending.store(true, std::memory_order_release);
}

void NicHw::retry_backlog() {
    std::lock_guard<std::mutex> g(backlog_mu);
    while (!backlog.empty()) {
        const PendingCtl &c = backlog.front();
        if (!send_ctl(c.dst_nic, c.op, c.dst_vi, c.src_vi, 0, c.imm, 0, nullptr, 0)) return;
        backlog.pop_front();
    }
    backlog_pending.store(false, std::memory_order_relaxed);
}

void NicHw::step() {
    if (__builtin_expect(backlog_pending.load(std::memory_order_relaxed), 0)) retry_backlog();
    // Doorbells: round-robin over the VIs marked active.
    const uint32_t kWords = vi_words.load(std::memory_order_relaxed);
    for (uint32_t n = 0; n < kWords; ++n) {
        const uint32_t w = (rr_cursor + n) % kWords;
        uint64_t bits = active[w].load(std::memory_order_relaxed);
        if (!bits) continue;
        while (bits) {
            const uint32_t b = static_cast<uint32_t>(__builtin_ctzll(bits));
            bits &= bits - 1;
            const uint32_t idx = w * 64 + b;
            ViImpl *vi = vis[idx].load(std::memory_order_acquire);
            if (!vi) {
                active[w].fetch_and(~(1ull << b), std::memory_order_relaxed);
                continue;
            }
            process_vi(this, vi);
            // Idle again?  Clear the bit, then re-check (the host may have rung meanwhile).
            if (vi->bell_sq.empty() && vi->bell_rq.empty() && vi->tx_next == vi->tx_tail &&
                vi->flush_req.load(std::memory_order_relaxed) == vi->flush_done.load(std::memory_order_relaxed)) {
                if (cfg.mode == Mode::Inline && !shared_step.load(std::memory_order_relaxed)) {
                    // Only this thread rings and serves doorbells: no atomic RMW needed.
                    active[w].store(active[w].load(std::memory_order_relaxed) & ~(1ull << b),
                                    std::memory_order_relaxed);
                } else {
                    active[w].fetch_and(~(1ull << b), std::memory_order_seq_cst);
                    if (!vi->bell_sq.empty() || !vi->bell_rq.empty() ||
                        vi->flush_req.load() != vi->flush_done.load())
                        active[w].fetch_or(1ull << b, std::memory_order_relaxed);
                }
            }
        }
        rr_cursor = w + 1;
    }
    // Wire: drain a bounded number of packets so doorbells are not starved.
    for (int n = 0; n < 32; ++n) {
        const PacketHeader *h = wire_peek(wire, rank, rx_head);
        if (!h) break;
        if (__builtin_expect(!wire_header_sane(wire, rx_head, h), 0)) {
            // Corrupt FIFO memory: skip one slot (its tag is cleared) and go on.
            ++dropped;
            reinterpret_cast<std::atomic<uint32_t> *>(const_cast<PacketHeader *>(h))->store(0);
            rx_head += 1;
            wire.ctl(rank).head.store(rx_head, std::memory_order_release);
            continue;
        }
        if (h->op != Op::Pad) {
            VIPL_INSTR_BEGIN(t2);
            const bool consumed = rx_packet_try(h);
            VIPL_INSTR_END(c_fw_rx, t2);
            if (!consumed) break; // needs to answer but the peer's FIFO is full: retry later
        }
        rx_head = wire_consume(wire, rank, rx_head, h);
    }
}

NicHw::Quiesce NicHw::quiesce() {
    if (cfg.mode == Mode::Thread) {
        pause_req.store(true, std::memory_order_release);
        RingCtl &c = wire.ctl(rank);
        c.doorbell.fetch_add(1);
        syscall(SYS_futex, reinterpret_cast<uint32_t *>(&c.doorbell), FUTEX_WAKE, 1, nullptr, nullptr, 0);
        while (!paused.load(std::memory_order_acquire) && fw_thread.joinable()) sched_yield();
        return Quiesce{this, true};
    }
    if (shared_step.load()) {
        bool expected = false;
        while (!step_lock.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
            expected = false;
            sched_yield();
        }
        return Quiesce{this, true};
    }
    return Quiesce{this, false};
}

NicHw::Quiesce::~Quiesce() {
    if (!held) return;
    if (hw->cfg.mode == Mode::Thread) {
        hw->pause_req.store(false, std::memory_order_release);
        while (hw->paused.load(std::memory_order_acquire)) __builtin_ia32_pause();
    } else {
        hw->step_lock.store(false, std::memory_order_release);
    }
}

void NicHw::locked_step() {
    bool expected = false;
    if (!step_lock.compare_exchange_strong(expected, true, std::memory_order_acquire)) return;
    step();
    step_lock.store(false, std::memory_order_release);
}

// Firmware on its own thread: spin while there is work, sleep on the wire's
// futex when idle (a host doorbell also rings it, see ViImpl::post).
void NicHw::start_thread() {
    fw_thread = std::thread([this] {
        uint32_t idle = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            if (pause_req.load(std::memory_order_acquire)) { // host is changing NIC tables
                paused.store(true, std::memory_order_release);
                while (pause_req.load(std::memory_order_acquire)) __builtin_ia32_pause();
                paused.store(false, std::memory_order_release);
            }
            const uint64_t head_before = rx_head;
            bool any_active = false;
            for (uint32_t w = 0; w < vi_words.load(std::memory_order_relaxed); ++w)
                if (active[w].load(std::memory_order_relaxed)) { any_active = true; break; }
            step();
            epoch.fetch_add(1, std::memory_order_release);
            if (any_active || rx_head != head_before) { idle = 0; continue; }
            // Spin briefly, then keep yielding (cheap when the core is ours, and it
            // lets the host threads run when it is not) for a few milliseconds
            // before sleeping: a firmware that sleeps between the messages of a
            // ping-pong pays a futex wake-up and a scheduling delay on every one.
            if (++idle < 2000) { __builtin_ia32_pause(); continue; }
            if (idle < 200000) { sched_yield(); continue; }
            // Announce the sleep, then re-check every work source: a host doorbell
            // rung before `sleeping` was visible would otherwise wait for the timeout.
            const uint32_t bell = wire_sleep_prepare(wire, rank);
            bool busy = wire_peek(wire, rank, rx_head) != nullptr || pause_req.load() || stop.load();
            for (auto &w : active) busy = busy || w.load(std::memory_order_seq_cst) != 0;
            if (busy) wire_sleep_cancel(wire, rank);
            else wire_sleep_commit(wire, rank, bell, 2000);
        }
    });
}

void NicHw::stop_thread() {
    stop.store(true);
    RingCtl &c = wire.ctl(rank);
    c.doorbell.fetch_add(1);
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&c.doorbell), FUTEX_WAKE, 1, nullptr, nullptr, 0);
    if (fw_thread.joinable()) fw_thread.join();
    if (agent_thread.joinable()) agent_thread.join();
}

} // namespace nicfw
