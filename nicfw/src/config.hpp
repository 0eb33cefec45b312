// config.hpp - what the emulated NIC is built with: its table sizes and limits
// (the constants a real LANai board would report in its attributes), and the
// run-time configuration read from VIPL_NICFW_* at VipOpenNic (docs/nicfw.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nicfw {

constexpr uint32_t kMaxVi = 1024;
constexpr uint32_t kMaxRegions = 65535;
constexpr uint32_t kMaxQueue = 4096;       // descriptors per work queue
constexpr uint32_t kMaxSegments = 252;     // data segments of an RDMA descriptor (SegCount <= 253 = MaxSegmentsPerDesc)
constexpr uint32_t kMaxTransfer = 64 * 1024;
constexpr uint32_t kFifoDoorbellDepth = 64;
constexpr uint32_t kMaxCq = 1024;
constexpr uint32_t kMaxCqEntries = 1u << 20;
constexpr uint32_t kMaxPtags = 4096;

enum class Mode { Inline, Thread };
enum class Doorbell { Fifo, Emulated };

// Timing profile: delays the firmware adds to model a slower NIC (or a synthetic
// one with known LogP parameters for checking the LogP extraction).
struct Profile {
    std::string name = "none";
    uint32_t send_ns = 0;   // host send overhead added to each post (o_s)
    uint32_t recv_ns = 0;   // host receive overhead added to each receive completion (o_r)
    uint32_t wire_ns = 0;   // latency added between transmit and delivery (L)
    uint32_t gap_ns = 0;    // minimum interval between packet injections (g)
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
    Profile profile;
    // Unlike the other layers' settings, a bad VIPL_NICFW_* value is refused, not
    // replaced by its default: a mistyped timing profile would silently measure
    // the wrong machine.  Throws std::runtime_error naming the variable and value.
    static Config from_env();
};

} // namespace nicfw
