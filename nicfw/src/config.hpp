// config.hpp - what the emulated NIC is built with: its table sizes and limits
// (the constants a real LANai board would report in its attributes), and the
// run-time configuration read from VIPL_NICFW_* at VipOpenNic (docs/nicfw.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fault_inject.hpp"
#include "cost_model.hpp"

namespace nicfw {

constexpr uint32_t kMaxVi = 1024;
constexpr uint32_t kMaxRegions = 65535;
constexpr uint32_t kMaxQueue = 4096;   // descriptors per work queue
constexpr uint32_t kMaxSegments = 252; // data segments of an RDMA descriptor (SegCount <= 253 = MaxSegmentsPerDesc)
// Largest message through the wire FIFO (staged: host -> SRAM -> wire -> SRAM
// -> host): what the SRAM staging buffers and a quarter FIFO can hold.
constexpr uint32_t kMaxStagedTransfer = 64 * 1024;
// Largest transfer with the single-copy bulk path on (dma.hpp): MaxTransferSize.
// Nothing is sized by it (the bytes move between the hosts' own buffers), so it
// is as large as an MPI message over libfabric may be (NetPIPE sweeps past
// 16 MiB; Open MPI's mtl:ofi refuses anything above the provider's maximum).
constexpr uint32_t kMaxTransfer = 1u << 30;
// Default VIPL_NICFW_DMA_MIN: from this many bytes on, RDMA and reliable sends
// take the single-copy path (measured crossover, docs/nicfw.md "Data path").
constexpr uint32_t kDefaultDmaMin = 64 * 1024;
// Default VIPL_NICFW_DMA_MIN_SHM: the crossover for transfers whose initiator
// memory is all VipxAllocMem memory, which the target's NIC copies with one
// memcpy through a mapping it keeps (no system call, no page pinning), so the
// bulk path pays off at smaller sizes than with cross-memory attach (measured,
// docs/nicfw.md "Crossover and limits").
constexpr uint32_t kDefaultDmaMinShm = 1024;
constexpr uint32_t kFifoDoorbellDepth = 64;
constexpr uint32_t kMaxCq = 1024;
constexpr uint32_t kMaxCqEntries = 1u << 20;
constexpr uint32_t kMaxPtags = 4096;

enum class Mode { Inline, Thread };
enum class Doorbell { Fifo, Emulated };

// Timing profile (VIPL_NICFW_PROFILE): the hardware-cost model of a LANai
// board (lanai4, lanai7, file:PATH; cost_model.hpp), or a synthetic machine
// with known LogP parameters for checking the LogP extraction (synthetic:...).
struct Profile {
    std::string name = "none";
    CostParams cost; // the cost model (enabled for lanai4, lanai7, file:)
    // synthetic: LogP delays
    uint32_t send_ns = 0; // host send overhead added to each post (o_s)
    uint32_t recv_ns = 0; // host receive overhead added to each receive completion (o_r)
    uint32_t wire_ns = 0; // latency added between transmit and delivery (L)
    uint32_t gap_ns = 0;  // minimum interval between packet injections (g)
};

struct Config {
    Mode mode = Mode::Inline;
    Doorbell doorbell = Doorbell::Fifo;
    size_t ring_bytes = 1u << 20;
    // Link CRC on every packet.  Off by default: the wire is shared memory, which
    // cannot corrupt bytes in flight (a real NIC's CRC is computed by hardware at
    // no cost to the host); VIPL_NICFW_CRC=1 turns it on, e.g. where something
    // may corrupt the FIFO memory (docs/nicfw.md).
    bool crc = false;
    bool progress_thread = false; // inline mode: a sleeping agent serves the NIC while the host is away
    // Inline mode, one host thread: a send posted while the firmware has no
    // other work goes straight to the transmit path (Firmware::send_direct)
    // instead of through the doorbell token and a whole MCP iteration
    // (VIPL_NICFW_DIRECT_SEND=0 keeps every send on the doorbell path).
    bool direct_send = true;
    Profile profile;
    // Single-copy bulk path: transfers of at least dma_min bytes move once,
    // source memory -> destination memory (VIPL_NICFW_DMA_MIN; 0 = off, every
    // byte staged through the FIFO and MaxTransferSize is kMaxStagedTransfer).
    uint32_t dma_min = kDefaultDmaMin;
    // The crossover when every initiator segment is VipxAllocMem memory
    // (VIPL_NICFW_DMA_MIN_SHM): never above dma_min, and off with it.
    uint32_t dma_min_shm = kDefaultDmaMinShm;
    uint32_t shm_crossover() const { return dma_min && dma_min_shm < dma_min ? dma_min_shm : dma_min; }
    uint32_t max_transfer() const { return dma_min ? kMaxTransfer : kMaxStagedTransfer; }
    // One-sided RDMA (VIPL_NICFW_ONESIDED; onesided.cpp): the initiator's DMA
    // engine checks an RDMA write or read against the target NIC's published
    // protection table and moves the bytes itself, the target's firmware idle.
    // On (1, the default): memcpy into a mapping of VipxAllocMem memory, cross-
    // memory attach for other memory; Shm: only mapped memory (other memory by
    // the target's firmware); Off (0): every RDMA by the target's firmware.
    // Never with the bulk path off (VIPL_NICFW_DMA_MIN=off: everything staged).
    enum class OneSided : uint8_t { Off, Shm, On };
    OneSided onesided = OneSided::On;
    // Faults on the wire (VIPL_NICFW_FAULTS; fault_inject.hpp).  Any fault turns
    // the link CRC and the reliable transport on.
    FaultSpec faults;
    // The reliable transport (reliable.hpp): retransmission, acknowledgements,
    // duplicate suppression for the reliable levels.  VIPL_NICFW_RETRANSMIT:
    // auto (default: on exactly when faults are), 0 or 1.  Every rank of a job
    // must agree.
    bool transport = false;
    // A connection whose oldest unacknowledged packet made no progress for this
    // long is broken (VIPL_NICFW_LINK_TIMEOUT_MS).
    uint32_t link_timeout_ms = 5000;
    // Unlike the other layers' settings, a bad VIPL_NICFW_* value is refused, not
    // replaced by its default: a mistyped timing profile would silently measure
    // the wrong machine.  Throws std::runtime_error naming the variable and value.
    static Config from_env();
};

} // namespace nicfw
