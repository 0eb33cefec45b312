// cost_model.hpp - the hardware-cost model of the emulated NIC
// (VIPL_NICFW_PROFILE=lanai4|lanai7|file:PATH; docs/cost-model.md).
//
// Instead of adding LogP delays, the model charges what the LANai-based VI
// implementation of [Begel01] spends per operation: programmed-I/O reads and
// writes across the I/O bus (doorbells, the NIC-resident completion queue),
// uncached reads of descriptor status, DMA set-up and per-byte DMA time, the
// firmware's loop and round-robin VI polling, its per-send and per-receive
// processing, link serialization and switch latency.  Host costs are spun on
// the calling thread where they occur.  NIC costs go on the NIC's own timeline
// (`nic_free_`): the firmware may not start a transmit before the NIC is free,
// a packet carries the time its last byte reaches the peer NIC, and the peer
// processes it only once its own NIC has spent the receive occupancy on it.
// So the NIC's time is real delay for the messages without being spun on the
// host thread that steps an inline firmware.
//
// Off (profile none or synthetic) every hook is one predictable branch.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "vipl_instr.h"

namespace nicfw {

// Where completion-queue entries live ([Begel01] §8: on the NIC, read by PIO).
enum class CqPlace : uint8_t { Nic, Host };
// The LANai control program's main loop ([FM1] §4.2, Figure 2).
enum class FwLoop : uint8_t { Streamed, Baseline };
// How a short send's data reaches the NIC ([FM1] §4.3: hybrid vs all-DMA).
enum class SendData : uint8_t { Dma, Pio };
// The doorbell the profile assumes (nicfw's VIPL_NICFW_DOORBELL modes).
enum class BellKind : uint8_t { Fifo, Emulated };

// The machine's costs.  Times in ns, bandwidths in MB/s (10^6 bytes/s).
// docs/cost-model.md gives the source of every value of lanai4 and lanai7.
struct CostParams {
    std::string name = "none";
    bool enabled = false;
    // host <-> NIC across the I/O bus
    uint32_t pio_read_ns = 0;      // one programmed-I/O read of NIC memory
    uint32_t pio_write_ns = 0;     // one programmed-I/O write of NIC memory
    uint32_t doorbell_writes = 1;  // PIO writes per doorbell token
    uint32_t uncached_read_ns = 0; // a host read of a descriptor field the NIC wrote by DMA
    uint32_t host_cq_read_ns = 0;  // a host read of a host-resident CQ slot (cq = host)
    double pio_data_mb_s = 0;      // host PIO bandwidth into NIC memory (send_data = pio)
    // NIC
    uint32_t dma_setup_ns = 0;      // a null host DMA
    double dma_mb_s = 0;            // host DMA bandwidth
    uint32_t desc_bytes = 64;       // a descriptor fetched by DMA
    uint32_t fw_loop_ns = 0;        // one pass of the firmware's main loop
    uint32_t fw_vi_poll_ns = 0;     // polling one VI's doorbell in that pass
    uint32_t fw_send_ns = 0;        // firmware work per send (besides DMA and polling)
    uint32_t fw_recv_ns = 0;        // firmware work per receive (besides DMA)
    double link_mb_s = 0;           // link bandwidth
    uint32_t link_header_bytes = 0; // bytes a packet carries besides its data (route, type, CRC)
    uint32_t switch_ns = 0;         // switch and cable latency
    // the host CPU (vipl_instr.h's host-CPU model: the layers' own software
    // stretched by slowdown = this host's clock / host_mhz * host_ipc_ratio)
    double host_mhz = 0;           // the modelled host's clock (0: its CPU is not modelled)
    double host_ipc_ratio = 0;     // this host's instructions per clock / the modelled host's
    double this_host_mhz = 0;      // this host's clock (0: the measured TSC rate)
    uint32_t host_max_self_ns = 0; // a layer scope longer than this is a preemption: not stretched
    uint32_t recv_line_bytes = 0;  // a received message is read in lines of this size ...
    uint32_t recv_line_ns = 0;     // ... each a host read of memory the NIC wrote (0: not modelled)
    // design-space switches
    CqPlace cq = CqPlace::Nic;
    BellKind doorbell = BellKind::Fifo;
    FwLoop loop = FwLoop::Streamed;
    SendData send_data = SendData::Dma;
    uint32_t pio_max_bytes = 0; // send_data = pio: sends up to this size are written by the host

    bool operator==(const CostParams &) const = default;
};

// none, lanai4, lanai7 (false for any other name).
bool builtin_cost_profile(const std::string &name, CostParams *out);
// The parameters as a "key = value" file (every key, one a line, '#' comments).
std::string dump_cost_params(const CostParams &p);
// Parses such a file (keys not given keep the lanai7 values when the file says
// `base = lanai7`, else 0); throws std::runtime_error naming the line.
CostParams parse_cost_params(const std::string &text, const std::string &where);
CostParams load_cost_params(const std::string &path);

// The host-CPU model these parameters ask for (vipl_instr.h), with this host's
// clock `this_mhz` when the profile does not give it; false if it asks for none.
bool host_cpu_model(const CostParams &p, double this_mhz, vipl_host_model *out);

// What the model has charged, per item (tests, docs).
enum CostItem : int {
    kCostPioRead,  // host: CQ check (NIC-resident CQ), emulated-doorbell token poll
    kCostPioWrite, // host: doorbells, CQ clear
    kCostPioData,  // host: short-send data written by PIO
    kCostUncached, // host: descriptor status reads (VipSendDone/VipRecvDone)
    kCostHostCq,   // host: host-resident CQ reads
    kCostBellWait, // host: emulated doorbell, waiting for the NIC to take the last token
    kCostNicLoop,  // NIC: main-loop passes
    kCostNicPoll,  // NIC: round-robin VI polling
    kCostNicDma,   // NIC: DMA set-up and transfer
    kCostNicFw,    // NIC: send/receive processing
    kCostLink,     // NIC: link serialization + switch
    kCostItems
};
const char *cost_item_name(int i);

// The clock the model charges against: real (CLOCK_MONOTONIC, busy-wait) by
// default, a fake one in the tests.
struct CostClock {
    uint64_t (*now)(void *ctx);
    void (*spin)(void *ctx, uint64_t ns); // returns `ns` later by `now`
    void *ctx;
};
const CostClock &real_cost_clock();

class CostModel {
public:
    explicit CostModel(const CostParams &p, const CostClock &clock = real_cost_clock());
    bool on() const { return on_; }
    const CostParams &params() const { return p_; }

    // ---- host side (spun on the calling thread) ----
    // A doorbell token written to the NIC; with the emulated doorbell the host
    // first waits until the NIC has taken the previous token (it has started
    // the last transmit it was given) and reads the token slot back.
    void host_doorbell(bool emulated);
    // send_data = pio: the host writes a short send's data into NIC memory.
    void host_send_data(uint32_t bytes);
    // VipCQDone / VipCQWait: the CQ head checked, and cleared when an entry was taken.
    void host_cq_check(bool took);
    // VipSendDone / VipRecvDone: the descriptor's status read.
    void host_desc_status();

    // ---- NIC side (the stepping thread) ----
    bool nic_free_now() const { return now() >= nic_free_.load(std::memory_order_relaxed); }
    // Books a transmit of `bytes` of data (0 for an RDMA read request) on a
    // NIC polling `nvis` VIs: now, or when the NIC is free if it is busy (it
    // then goes straight on to it).  A send on the host-PIO path (pio_path)
    // has its data in NIC memory already.  Returns the time its last byte
    // reaches the peer NIC; nic_free_at() is then when its status is written.
    // `send_cq`: the send completion goes to a CQ.
    uint64_t nic_tx(uint32_t bytes, uint32_t nvis, bool send_cq);
    // A packet with `bytes` of data that reached this NIC at `arrival`: the
    // time at which its receive processing ends (booked once per packet: the
    // same `key` returns the same time).  `recv_cq`: the completion goes to a CQ.
    uint64_t nic_rx(uint64_t key, uint64_t arrival, uint32_t bytes, bool recv_cq);
    // Whether a send of `bytes` takes the host-PIO data path.
    bool pio_path(uint32_t bytes) const { return p_.send_data == SendData::Pio && bytes <= p_.pio_max_bytes; }

    uint64_t now() const { return clock_.now(clock_.ctx); }
    uint64_t charged(int item) const { return charged_[item].load(std::memory_order_relaxed); }
    uint64_t nic_free_at() const { return nic_free_.load(std::memory_order_relaxed); }

    // Pure cost functions (ns), used by the above and the tests.
    uint64_t dma_ns(uint64_t bytes) const;
    uint64_t link_ns(uint64_t bytes) const;

private:
    void spin(int item, uint64_t ns);
    void add(int item, uint64_t ns) {
        charged_[item].store(charged_[item].load(std::memory_order_relaxed) + ns, std::memory_order_relaxed);
    }
    // Main-loop charge of an operation starting at `start`: baseline pays a
    // pass per message; streamed only when the NIC was not already streaming
    // operations of the same kind back to back.
    uint64_t loop_ns(uint64_t start, bool tx);

    const CostParams p_;
    const CostClock clock_;
    const bool on_;
    std::atomic<uint64_t> nic_free_{0};    // the NIC's timeline: busy until then
    std::atomic<uint64_t> tx_start_{0};    // the last transmit's start: its token taken (read by host doorbells)
    uint64_t last_end_ = 0;                // end of the NIC's last operation
    bool last_tx_ = false;                 // ... and whether it was a transmit
    uint64_t rx_key_ = ~0ull, rx_end_ = 0; // the packet whose receive is booked
    std::atomic<uint64_t> charged_[kCostItems] = {};
};

} // namespace nicfw
