// fault_inject.hpp - faults on the emulated wire (VIPL_NICFW_FAULTS, docs/nicfw.md
// "Faults and recovery"): what a lossy link does to packets, applied by the
// receiving NIC as it takes each data-path packet off its FIFO.
//
//   drop      the packet is lost
//   dup       the packet arrives twice (the copy right after the original)
//   reorder   the packet is overtaken by the next one
//   delay     the packet arrives delay_us later (later packets overtake it)
//   corrupt   one bit of the header or the payload flips (the link CRC, on
//             whenever faults are, catches it)
//   kill=R@MS     rank R's NIC dies MS ms after it opened: its VIs break, it
//                 answers nothing (its peers find out by their retry limit)
//   linkdown=R@MS rank R's link goes down MS ms after opening: nothing reaches
//                 R and nothing from R reaches anyone (every rank applies it)
//   die_reserved=R@N  test hook: rank R's process raises SIGKILL right after
//                 reserving the FIFO slot of its Nth data packet, before writing
//                 or publishing it (the consumer must skip the stuck slot; it
//                 is not a wire fault, so it alone turns on neither the CRC nor
//                 the transport)
//
// Probabilities are drawn from a generator seeded with `seed` and the rank, so a
// run is repeatable up to scheduling.  Connection-management packets are not
// faulted (they have no retransmission of their own); data, replies and the
// transport's acknowledgements are.  The injector is the only place faults are
// made: the firmware asks it for each packet's fate (Firmware::rx_faulty) only
// when one is configured, so with none the receive path pays one branch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wire.hpp"

namespace nicfw {

// What VIPL_NICFW_FAULTS asks for (all zero: no faults).
struct FaultSpec {
    double drop = 0, dup = 0, reorder = 0, delay = 0, corrupt = 0;
    uint32_t delay_us = 500;
    uint64_t seed = 1;
    int kill_rank = -1; // kill=R@MS
    uint32_t kill_ms = 0;
    int linkdown_rank = -1; // linkdown=R@MS
    uint32_t linkdown_ms = 0;
    int die_reserved_rank = -1; // die_reserved=R@N (wire.hpp Wire::die_after_reserves)
    uint32_t die_reserved_n = 0;
    bool any() const {
        return drop > 0 || dup > 0 || reorder > 0 || delay > 0 || corrupt > 0 || kill_rank >= 0 || linkdown_rank >= 0;
    }
    // "drop=0.05,dup=0.01,reorder=0.01,delay=0.01,delay_us=500,corrupt=0.001,seed=7,
    //  kill=1@2000,linkdown=0@1500" (any subset; "" or "off": none).  Throws
    // std::runtime_error naming the bad item and what is accepted.
    static FaultSpec parse(const std::string &s);
};

// One data-path packet's fate.
enum class Fate : uint8_t { Deliver, Drop, Duplicate, Reorder, Delay, Corrupt };

class FaultInjector {
public:
    FaultInjector(const FaultSpec &spec, int rank, uint64_t opened_ns);

    Fate decide();
    // Flips one bit of a packet copy: in the header (past tag and nslots, which
    // only the FIFO uses) or in the payload.
    void corrupt(unsigned char *pkt, size_t bytes);
    // Whether this NIC is dead (kill) at `now`, and whether the link between this
    // NIC and `src_nic` is down (linkdown names either end).
    bool dead(uint64_t now) const { return kill_at_ && now >= kill_at_; }
    bool cut(uint64_t now, uint16_t src_nic) const {
        return linkdown_at_ && now >= linkdown_at_ && (rank_ == spec_.linkdown_rank || src_nic == spec_.linkdown_rank);
    }

    // Packets held back (reorder, delay) or due again (dup): private copies.
    struct Held {
        std::vector<unsigned char> bytes; // header + payload (+ stamp)
        uint64_t release_ns;              // not before
        uint32_t after;                   // not before this many more packets were taken
        bool used = false;
    };
    // Keeps a copy of the packet at `h` (false: too many held, deliver it now).
    bool hold(const PacketHeader *h, uint64_t release_ns, uint32_t after);
    std::vector<Held> &held() { return held_; }
    uint32_t held_count() const { return nheld_; }
    void released(Held &e) {
        e.used = false;
        --nheld_;
    }
    void packet_taken(); // one more packet came off the FIFO: counts down `after`
    // A scratch copy for a corrupted packet.
    unsigned char *scratch(size_t bytes);

    struct Stats {
        uint64_t dropped = 0, duplicated = 0, reordered = 0, delayed = 0, corrupted = 0, cut = 0;
    } stats;
    const FaultSpec &spec() const { return spec_; }

private:
    uint64_t next(); // splitmix64
    double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }

    FaultSpec spec_;
    int rank_;
    uint64_t state_;
    uint64_t kill_at_ = 0, linkdown_at_ = 0;
    std::vector<Held> held_;
    uint32_t nheld_ = 0;
    std::vector<unsigned char> scratch_;
};

} // namespace nicfw
