// firmware.hpp - the NIC's firmware (the LANai's MCP): the doorbell bitmap,
// the transmit path, the receive path, the SRAM staging buffers and descriptor
// cache, completions.  How the firmware is run (stepped inline by one host
// thread, by several under a try-lock, or on its own thread) is the Stepper's
// (stepper.hpp), a member here.
//
// Files: firmware.cpp (main loop, completions, execution), tx.cpp (send side),
// rx.cpp (receive side).  The firmware reads the protection table and the VI
// table, reports errors to the error queue and hands connection-management
// packets to the connection manager; nothing else reaches its state.
#pragma once

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clock.hpp"
#include "config.hpp"
#include "dma.hpp"
#include "fault_inject.hpp"
#include "objects.hpp"
#include "peer_watch.hpp"
#include "protocol.hpp"
#include "published.hpp"
#include "reliable.hpp"
#include "stepper.hpp"
#include "vipl_instr.h"
#include "wire.hpp"

namespace nicfw {

class ProtectionTable;
class ViTable;
class ErrorQueue;
class ConnectionManager;

using vipl::common::now_ns;
void spin_ns(uint32_t ns);

class Firmware {
public:
    // Maps the job's wire (throws std::runtime_error, see Wire).
    Firmware(const Config &cfg, const std::string &job, int rank, int nprocs, const ProtectionTable &protection,
             const ViTable &vis, ErrorQueue &errors, ConnectionManager &cm);
    ~Firmware();
    Firmware(const Firmware &) = delete;
    Firmware &operator=(const Firmware &) = delete;

    // ---- running it (stepper.hpp) ----
    // What a host call does to make progress: one MCP iteration in inline mode
    // (under the step lock once another thread steps too); nothing when the
    // firmware has its own thread.
    void host_step() { run_.host_step(); }
    void note_host_thread() { run_.note_host_thread(); }
    // A host poll found nothing (or the host called VipxProgress).  Every 16th:
    //  - thread mode: give the CPU away: on a machine with fewer cores than
    //    busy threads a spinning host would otherwise starve the firmware it
    //    is waiting for;
    //  - inline mode: look at the clock and, when the peer watch is due, make
    //    the next step run housekeeping.  Housekeeping counts steps, and a host
    //    that polls every 10 ms steps 1024 times in 10 s: a peer that died
    //    while this host polled slowly went unnoticed that long (the
    //    faults_dead_producer test, when rank 1's stream ended before rank 2
    //    died).  The counters are relaxed loads and stores, never an RMW: a
    //    lost count only moves a check by one poll.
    void idle_poll() {
        const uint32_t n = idle_polls_.load(std::memory_order_relaxed) + 1;
        idle_polls_.store(n, std::memory_order_relaxed);
        if (__builtin_expect((n & 15) != 0, 1)) return;
        if (cfg_.mode == Mode::Thread) {
            sched_yield();
        } else if (now_ns() >= next_watch_ns_.load(std::memory_order_relaxed)) {
            housekeeping_in_.store(1, std::memory_order_relaxed);
        }
    }
    // Inline mode: how far the firmware has read its wire FIFO (changes when
    // packets arrive), for host waits that keep spinning while traffic flows.
    // The stepping thread (host or progress agent, one at a time) stores it
    // relaxed; a host wait reads it without the step lock.
    uint64_t rx_mark() const { return cfg_.mode == Mode::Inline ? __atomic_load_n(&rx_head_, __ATOMIC_RELAXED) : 0; }
    void step(); // one MCP iteration (whoever the Stepper lets run it)
    // Inline mode, this thread alone, nothing else for the firmware to do: a
    // posted send is transmitted now, without the doorbell token and the scan
    // of every VI an MCP iteration makes (the firmware's own transmit path and
    // checks; the wire is drained only if a packet waits).  False: nothing was
    // done, ring the doorbell as usual (firmware.cpp).
    bool send_direct(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    // send_direct for a VI whose fixed conditions allow it (ViImpl::send_fast),
    // called on the owner thread of an unshared inline firmware: the send is
    // also put on the host's send queue, in the same owner section, and the
    // errors it raised delivered (firmware.cpp).  The post's result; declined,
    // nothing was done and `general` (the VI's general post) takes the send,
    // in a tail call, so that the caller keeps nothing across this one.
    using GeneralPost = VIP_RETURN (ViImpl::*)(VIP_DESCRIPTOR *, VIP_MEM_HANDLE);
    VIP_RETURN send_alone(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, GeneralPost general);
    // Sends of the short message's shape may take tx_fast (decided once).
    bool fast_tx() const { return fast_tx_; }
    void locked_step() { run_.locked_step(); } // one iteration, or a request to the thread running one
    // Inline mode: from now on another thread (the agent, a second host thread)
    // steps the firmware too, so steps take the lock and doorbells use atomics.
    void share_stepping() { run_.share(); }
    bool stepping_shared() const { return run_.shared(); }
    // Inline, not shared, and called on the owner thread: note_host_thread()
    // would do nothing, and this thread may step alone (in an OwnerSection).
    bool alone_on_owner_thread() const { return run_.unshared_inline() && run_.on_owner_thread(); }
    using Quiesce = Stepper<Firmware>::Quiesce;
    // A section of the owner thread without the step lock (stepper.hpp).
    using OwnerSection = Stepper<Firmware>::OwnerSection;
    OwnerSection owner_section() { return OwnerSection(&run_); }
    Quiesce quiesce() { return run_.quiesce(); }
    // Thread mode: starts the firmware thread.  Called once the NIC is complete,
    // since the thread may hand a packet to the connection manager at once.
    void start() { run_.start(); }
    void stop_thread() { run_.stop_thread(); } // thread mode: stops and joins the firmware thread

    // What the Stepper asks of the firmware (stepper.hpp): the firmware thread's
    // iteration (true: it found work), its idle sleep on the wire futex.
    bool thread_step();
    uint32_t sleep_prepare() { return wire_sleep_prepare(wire_, rank_); }
    bool has_work();
    void sleep_cancel() { wire_sleep_cancel(wire_, rank_); }
    void sleep_commit(uint32_t bell) { wire_sleep_commit(wire_, rank_, bell, 2000); }
    void wake() { wake_thread(); }

    // ---- doorbells (host side) ----
    // Marks VI `index` active (and wakes a sleeping firmware thread).
    void ring(uint32_t index) {
        const uint32_t w = index / 64;
        const uint64_t bit = 1ull << (index % 64);
        run_.note_host_thread();
        if (run_.unshared_inline()) {
            Stepper<Firmware>::OwnerSection owner(&run_);
            if (owner.alone()) {
                // Only this thread runs the firmware: a plain read-modify-write suffices.
                const uint64_t v = active_[w].load(std::memory_order_relaxed);
                if (!(v & bit)) active_[w].store(v | bit, std::memory_order_relaxed);
                return;
            }
        }
        active_[w].fetch_or(bit, std::memory_order_seq_cst);
        if (cfg_.mode == Mode::Thread) {
            RingCtl &c = wire_.ctl(rank_);
            if (c.sleeping.load(std::memory_order_relaxed)) {
                c.sleeping.store(0, std::memory_order_relaxed);
                wake_thread();
            }
        }
    }
    void vi_added(uint32_t index);   // the doorbell scan covers it from now on
    void vi_removed(uint32_t index); // with the firmware quiesced

    // ---- for connection management (any thread) ----
    // Sends a small control packet; false when the peer's FIFO is full.
    bool send_ctl(uint16_t dst_nic, Op op, uint16_t dst_vi, uint16_t src_vi, uint32_t imm, const void *payload,
                  uint32_t len);
    // The same, kept and retried from step() while the peer's FIFO is full, so a
    // peer always learns that its connection is gone (Disc, ConnErr).
    void send_ctl_reliably(uint16_t dst_nic, Op op, uint16_t dst_vi, uint16_t src_vi, uint32_t imm);
    // A region of ours was retired or changed in the published table: returns
    // once no one-sided transfer of any NIC that may have read the old entry
    // is still running (onesided.cpp; the protection table's drain hook).
    void wait_peer_dma();
    // The VI goes to the error state: report, optionally tell the peer, flush.
    void vi_error(ViImpl *vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *d, bool tell_peer);

    // The hardware-cost model (cost_model.hpp): host calls charge their PIO
    // and uncached reads through it; the firmware books the NIC's time on it.
    CostModel &cost() { return cost_; }

    // diagnostics
    uint64_t dropped() const { return dropped_; }
    uint64_t crc_errors() const { return crc_errors_; }
    // The reliable transport's state for a new connection of `vi` (connect.cpp,
    // while the VI is not Connected): made on first use, reset on reconnection.
    void link_connected(ViImpl *vi);

private:
    // firmware.cpp: the loop, completions, errors
    void process_vi(ViImpl *vi);
    void transmit(ViImpl *vi); // the VI's fetched descriptors, as far as the wire takes them
    void drain_wire();         // up to 32 packets off this NIC's FIFO
    // Writes a completed descriptor back to the host and posts the CQ entry.
    // Inline: every message completes a descriptor on each side.
    void complete_desc(ViImpl *vi, VIP_DESCRIPTOR *d, uint32_t status, uint32_t length, bool recv) {
        if (recv) d->CS.Length = length;
        vipl::common::complete_descriptor(d, status);
        if (__builtin_expect(cost_.on(), 0) && vipl_instr_enabled()) cost_arrived(vi, d, recv);
        post_cq(vi, recv ? vi->recv_cq : vi->send_cq, d, recv);
    }
    // The CQ entry of a completed descriptor, when its queue has a CQ.
    void post_cq(ViImpl *vi, CqImpl *cq, VIP_DESCRIPTOR *d, bool recv) {
        if (cq && !cq->ring.push(CqEntry{vi->index, recv})) {
            // The spec makes CQ overrun a catastrophic error of the CQ.
            if (!cq->overrun.exchange(true)) report_error(vi, cq, d, VIP_RESOURCE_CQ, VIP_ERROR_CATASTROPHIC);
        }
    }
    void complete_tx(ViImpl *vi);
    // The oldest receive the firmware holds, else the oldest still in the
    // doorbell FIFO: tokens the firmware took earlier precede every token
    // still in the doorbell, so taking the doorbell's head directly when it
    // holds none keeps posting order without moving each token through two
    // rings.  Inline: every received send takes one.
    bool fetch_rx_desc(ViImpl *vi, Token *t) {
        if (__builtin_expect(vi->fw.rxq.pop(t), 0)) return true;
        return vi->bell_rq.pop(t);
    }
    // The receive fetch_rx_desc takes next, left where it is (nullptr: none).
    const Token *peek_rx_desc(ViImpl *vi) {
        if (const Token *t = vi->fw.rxq.front()) return t;
        return vi->bell_rq.front();
    }
    void fetch_tx_tokens(ViImpl *vi);
    void flush_vi(ViImpl *vi);
    void report_error(ViImpl *vi, CqImpl *cq, VIP_DESCRIPTOR *d, VIP_RESOURCE_CODE rc, VIP_ERROR_CODE ec);
    void retry_backlog();
    void drop_backlog_to_dead(); // housekeeping
    void wake_thread();
    // Every kHousekeepingSteps steps: peers that died, a NIC killed by the fault
    // injector (firmware.cpp).
    void housekeeping();
    void peer_died(uint16_t nic);

    // fault_inject.hpp: a packet's fate on a faulty wire, and held packets.
    bool rx_faulty(const PacketHeader *h);
    void release_held();

    // transport.cpp: the reliable transport (reliable.hpp).  rel_room: whether
    // the window takes a packet of `bytes` (checked before the FIFO slot is
    // reserved); rel_record: stamps the ack and copies the packet into the
    // window (before wire_publish); rel_rx: the ack and sequence checks of a
    // received packet, false to drop it.
    bool rel_on(const ViImpl *vi) const {
        return cfg_.transport && vi->attr.reliability != VIP_SERVICE_UNRELIABLE && vi->fw.link;
    }
    bool rel_room(ViImpl *vi, uint32_t payload, bool reply);
    void rel_record(ViImpl *vi, const TxSlot &tx, bool reply);
    bool rel_rx(ViImpl *vi, const PacketHeader *h);
    void rel_acked(ViImpl *vi, uint16_t ack16);
    void rel_delivered(ViImpl *vi);
    void rel_owe_now(ViImpl *vi);
    bool send_link_ack(ViImpl *vi);
    void transport_tick();
    void retransmit(ViImpl *vi, uint64_t now);

    // tx.cpp: the send side
    bool tx_one(ViImpl *vi, TxEntry &e);
    // A direct send whose VI holds nothing else and whose descriptor is the
    // short message's shape (a send of at most kFastSegs segments, staged,
    // completing on the wire): checked, transmitted and completed in one
    // pass, with no transmit-queue entry.  False: nothing was done (another
    // shape, a check failed, or the FIFO is full) and tx_one decides.
    // (firmware.cpp, inlined into send_direct and send_alone; `alone`:
    // send_alone's, whose VI's connection fixed what it checks less.)
    template <bool alone>
    bool tx_fast(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    bool tx_fast_timed(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh); // under instrumentation
    // send_direct and send_alone (firmware.cpp): nothing else to do before
    // this VI's send, the send transmitted (fast, else queued), and what a
    // step adds.
    bool doorbell_pending() const;
    bool direct_idle(const ViImpl *vi) const;
    bool direct_ready(const ViImpl *vi) const;
    void direct_transmit(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    void transmit_queued(ViImpl *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    void direct_step_rest();
    static constexpr uint32_t kFastSegs = 2;
    // A plain staged send into a one-segment receive that passes every check:
    // placed and completed in one pass (rx.cpp, inlined into rx_packet_try).
    // False: nothing was done, the general path decides.
    bool rx_fast(ViImpl *vi, const PacketHeader &h, const unsigned char *payload);
    // A posted receive descriptor checked for a message of `length` bytes (the common
    // receive rules, on SRAM copies): 0 or the spec's status bits.  On 0 its data
    // segments are in desc_cache_[0 .. *nseg).  Shared by staged and pull sends.
    uint32_t check_rx_desc(const ViImpl *vi, const Token &t, uint32_t length, uint32_t *nseg);

    // protocol.cpp: the choice of protocol (protocol.hpp) and its table.
    Protocol choose_protocol(const ViImpl *vi, const TxRequest &t, bool onesided) const {
        if (onesided && onesided_eligible(t)) return Protocol::OneSided;
        if (bulk_eligible(vi, t.cs.Length, t.segs, t.nseg)) return Protocol::Pull;
        return Protocol::Staged;
    }
    // RDMA only.  With immediate data the target must consume a receive: its
    // firmware's work, in order with the VI's other packets.  Faults, the
    // transport and the timing profiles model the wire: their RDMA goes over
    // it.  With the bulk path off everything is staged.
    bool onesided_eligible(const TxRequest &t) const {
        return t.op != VIP_CONTROL_OP_SENDRECV && !t.imm && cfg_.onesided != Config::OneSided::Off && cfg_.dma_min &&
            !faults_ && !cfg_.transport && !stamping() && !cfg_.profile.gap_ns && !cfg_.profile.send_ns;
    }
    bool bulk_eligible(const ViImpl *vi, uint32_t len, const VIP_DATA_SEGMENT *segs, uint32_t nseg) const;
    using TxOp = TxResult (Firmware::*)(ViImpl *, TxEntry &, const TxRequest &);
    static const TxOp kTxOps[kProtocols]; // by Protocol
    // The packet protocols (tx.cpp): one packet per descriptor, its data in
    // the FIFO slots (staged) or named for the target to pull.
    TxResult tx_staged(ViImpl *vi, TxEntry &e, const TxRequest &t);
    TxResult tx_pull(ViImpl *vi, TxEntry &e, const TxRequest &t);
    template <bool pull>
    TxResult tx_packet(ViImpl *vi, TxEntry &e, const TxRequest &t);
    void write_pull_request(unsigned char *out, const TxRequest &t) const;
    // The target could not move a pull request's bytes (the initiator died or
    // unmapped them): the connection breaks.
    void bulk_copy_failed(ViImpl *vi, VIP_DESCRIPTOR *d);

    // The DMA engine inside registered memory (RingCtl::dma_busy odd): from
    // before the protection check to after the copy, for one-sided transfers
    // and for RDMA our firmware serves, so that a deregistration or attribute
    // change on any NIC of the job waits for a copy checked against the old
    // entry (wait_peer_dma).  Only whoever steps the firmware writes it.
    uint32_t dma_begin() {
        RingCtl &me = wire_.ctl(rank_);
        const uint32_t b = me.dma_busy.load(std::memory_order_relaxed);
        me.dma_busy.store(b + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst); // before the table is read
        return b;
    }
    void dma_end(uint32_t b) { wire_.ctl(rank_).dma_busy.store(b + 2, std::memory_order_release); }

    // onesided.cpp: RDMA write/read done by this NIC's DMA engine against the
    // target's published table (published.hpp).
    TxResult tx_onesided(ViImpl *vi, TxEntry &e, const TxRequest &t);
    bool move_onesided(bool write, uint16_t nic, uint32_t pid, const BulkSeg &s, const VIP_DATA_SEGMENT *segs,
                       uint32_t nseg);
    const PublishedTable *peer_table(uint16_t nic);
    struct PeerTable {
        std::unique_ptr<PublishedTable> map; // read-only mapping of the peer's table
        uint64_t word = 0, failed_word = 0;  // RingCtl::table it was mapped for / could not be
        uint32_t pid = 0;
    };
    std::vector<PeerTable> peer_tables_; // by rank
    PubVi *pub_vis_ = nullptr;           // our VIs' published part (recv_seq, rx)
    uint64_t onesided_ = 0;              // transfers done one-sided (diagnostics)

    // rx.cpp: the receive side.  Each rx_* returns false when it must answer but
    // the peer's FIFO is full: the packet then stays on the wire and is retried
    // (nothing was changed).  Staged and pull requests alike (kFlagBulk: pull).
    bool rx_packet_try(const PacketHeader *h);
    bool rx_send(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    bool rx_rdma_write(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    bool rx_read_req(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    void rx_read_resp(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    // One definition each, instantiated for staged and pull requests.
    template <bool pull>
    bool rx_send_as(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    template <bool pull>
    bool rx_rdma_write_as(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    template <bool pull>
    bool rx_read_req_as(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    void rx_ack(ViImpl *vi, const PacketHeader *h);
    // An Ack (or read response) is reserved before anything else is done, so a
    // full FIFO leaves the packet untouched on the wire for a later retry.
    struct Reply {
        TxSlot tx;
        bool held = false;
    };
    bool reserve_reply(ViImpl *vi, uint32_t len, Reply *r);
    void publish_reply(ViImpl *vi, Reply *r, Op op, uint32_t status, uint32_t len);

    // Data packets carry a time after the payload: their send time (synthetic
    // wire latency L), or under the cost model the time their last byte
    // reaches the peer NIC (cost_tx).
    bool stamping() const { return cfg_.profile.wire_ns || cost_.on(); }
    uint32_t stamp_bytes() const { return stamping() ? 8 : 0; }
    void stamp(unsigned char *p) const {
        if (stamping()) {
            const uint64_t t = cost_.on() ? tx_arrival_ : now_ns();
            std::memcpy(p, &t, 8);
        }
    }
    // cost_fw.cpp: the cost model's hooks.  cost_tx books a transmit of `bytes`
    // of data whose wire slot is reserved (the packet leaves at once, stamped
    // with its arrival time; its send completes once the NIC's time for it has
    // passed, e.due); rx_due books a received packet's processing and says
    // whether it has ended (the packet may be used).
    void cost_tx(const ViImpl *vi, TxEntry &e, uint32_t bytes);
    bool rx_due(const PacketHeader *h);
    // With instrumentation on: tells it when the completion of d (and its CQ
    // entry) became visible to the host under the model, so that the part of
    // a host call spent before that is counted as waiting (vipl_instr.h).
    void cost_arrived(const ViImpl *vi, const VIP_DESCRIPTOR *d, bool recv);
    // The host-CPU part of the profile (host_mhz, recv_line_*): turned on in
    // vipl_instr while any NIC with it is open (the process has one host).
    void cost_host_acquire();
    void cost_host_release();
    bool cost_host_ = false;

    const Config cfg_;
    Wire wire_; // the link: owned here, read on every step (no indirection)
    const int rank_;
    const ProtectionTable &protection_;
    const ViTable &vis_;
    ErrorQueue &errors_;
    ConnectionManager &cm_;

    // doorbells: VIs with work, scanned round-robin
    std::atomic<uint64_t> active_[kMaxVi / 64] = {};
    std::atomic<uint32_t> vi_words_{1}; // words of active_ in use (highest VI / 64 + 1)
    uint32_t rr_cursor_ = 0;

    uint64_t rx_head_ = 0; // consumer position in our wire FIFO
    // Our FIFO's slots and ring_slots() - 1, kept: every step and every
    // direct send looks at the FIFO's head.
    const Slot *rx_slots_ = nullptr;
    uint64_t rx_mask_ = 0;
    const PacketHeader *rx_peek() const { return wire_peek_at(rx_slots_, rx_mask_, rx_head_); }
    // SRAM: staging buffers for the host-DMA and link-DMA engines, and the
    // descriptor cache the firmware reads a fetched descriptor's segments from
    std::unique_ptr<unsigned char[]> sram_tx_;
    std::unique_ptr<unsigned char[]> sram_rx_;
    VIP_DESCRIPTOR_SEGMENT desc_cache_[kMaxSegments + 1];
    uint64_t last_inject_ns_ = 0;   // gap profile (g)
    CostModel cost_;                // the hardware-cost model (off: profile none / synthetic)
    uint64_t tx_arrival_ = 0;       // cost model: the packet being sent reaches the peer then
    uint64_t tx_visible_ = 0;       // cost model: the send being completed was written back then
    uint64_t rx_visible_ = 0;       // cost model: the receive being completed was written back then
    std::atomic<uint32_t> nvis_{0}; // VIs the firmware polls
    DmaEngine dma_;                 // the bulk path's copy engine
    iovec iov_[kMaxSegments + 1];   // a receive's scatter list, for dma_

    // control packets waiting for room in a peer's FIFO
    struct PendingCtl {
        uint16_t dst_nic;
        Op op;
        uint16_t dst_vi, src_vi;
        uint32_t imm;
    };
    std::mutex backlog_mu_;
    std::deque<PendingCtl> backlog_;
    std::atomic<bool> backlog_pending_{false};

    // What the configuration allows, decided once: a direct send (send_direct:
    // inline, no cost model, faults or transport) and, on top of that, the
    // fast transmit (tx_fast: no timing profile that stamps or paces packets);
    // the fast transmit takes messages shorter than fast_tx_limit_ (the staged
    // protocol's: below the bulk path's crossover and the FIFO's share).
    bool direct_ok_ = false;
    bool fast_tx_ = false;
    // The fast receive (rx_fast): no fault injection (its packets go through
    // rx_faulty and must carry a CRC), no transport, no cost model (it books
    // each completion); any mode.
    bool fast_rx_ = false;
    uint32_t fast_tx_limit_ = 0;

    // execution
    std::atomic<uint32_t> idle_polls_{0}; // idle_poll(): host threads, relaxed

    // counters (diagnostics)
    uint64_t dropped_ = 0, crc_errors_ = 0;

    // faults and recovery (docs/nicfw.md "Faults and recovery")
    static constexpr uint32_t kHousekeepingSteps = 1024;
    // Steps until the next housekeeping (the stepping thread counts down; a
    // polling host may set it to 1, idle_poll), and when the next peer watch is
    // due (housekeeping writes it, idle_poll reads it).
    std::atomic<uint32_t> housekeeping_in_{kHousekeepingSteps};
    std::atomic<uint64_t> next_watch_ns_{0};
    bool housekeeping_due() { // one step of the countdown
        const uint32_t h = housekeeping_in_.load(std::memory_order_relaxed) - 1;
        housekeeping_in_.store(h, std::memory_order_relaxed);
        return h == 0;
    }
    PeerWatch peers_;
    std::unique_ptr<FaultInjector> faults_; // null: a perfect wire (the default)
    bool dead_ = false;                     // killed by the fault injector
    bool drop_instead_ = false;             // rx: no window room for the answer: drop, the peer resends
    uint64_t next_tick_ns_ = 0;             // transport timers
    std::vector<uint32_t> ack_list_;        // VIs that owe their peer an ack
    uint64_t retransmits_ = 0, link_acks_ = 0, rel_drops_ = 0, links_broken_ = 0;

    // Who runs the firmware (stepper.hpp).  Last: its thread uses everything above.
    Stepper<Firmware> run_{cfg_.mode, *this};
};

} // namespace nicfw
