// nic.hpp - the emulated LANai-style NIC of this process, put together from
// its components (nicfw/README.md maps them to files):
//
//   ProtectionTable  registered regions and ptags          protection.hpp/.cpp
//   ViTable          VI index -> VI                        vi_table.hpp
//   ErrorQueue       asynchronous errors, callbacks        errors.hpp/.cpp
//   Firmware         the wire link, doorbells, tx, rx,     firmware.hpp, firmware.cpp,
//                    SRAM, completions, how it runs        tx.cpp, rx.cpp
//   ConnectionManager connect/accept/peer/disconnect      connection.hpp, connect.cpp
//   Agent            notify handlers, error delivery,      agent.hpp/.cpp
//                    progress while the host is away
//
// Everything here is process-local: the NIC of a process lives in that
// process, and only the wire FIFOs (wire.hpp) are shared between processes.
// One NicHw per process, shared by every VipOpenNic of the device (provider.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "agent.hpp"
#include "config.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "firmware.hpp"
#include "objects.hpp"
#include "protection.hpp"
#include "vi_table.hpp"
#include "vipl_instr.h"
#include "wire.hpp"

namespace nicfw {

class NicHw {
public:
    NicHw(const Config &cfg, const std::string &job, int rank, int nprocs);
    ~NicHw();
    NicHw(const NicHw &) = delete;
    NicHw &operator=(const NicHw &) = delete;

    // What every host call does to make progress: step an inline firmware, and
    // run error callbacks if no agent thread does.  Under the cost model the
    // step is the modelled NIC's work, not the host's (the LANai ran its own
    // firmware, and the model charges its time on the NIC's timeline): the
    // instrumentation leaves it out of host overhead (vipl_instr.h, "NIC work").
    void host_poll() {
        if (__builtin_expect(fw.cost().on(), 0) && cfg.mode == Mode::Inline && vipl_instr_enabled()) {
            vipl_instr_offload_begin();
            fw.host_step();
            vipl_instr_offload_end();
        } else {
            fw.host_step();
        }
        deliver_errors();
    }
    // After a direct send (Firmware::send_direct), which stands for host_poll's
    // step: errors it raised are delivered now, as a step's would be.
    void deliver_errors() {
        if (__builtin_expect(errors.pending(), 0) && !agent.running()) errors.deliver();
    }
    void idle_poll() { fw.idle_poll(); }
    // Stops the firmware and agent threads (at exit, or when the last handle closes).
    void stop();

    const Config cfg;
    const int rank;
    const int nprocs;
    uint8_t addr_bytes[2]; // our host address: the rank, little endian

    ProtectionTable protection;
    ViTable vis;
    ErrorQueue errors;
    Firmware fw;
    ConnectionManager cm;
    Agent agent; // last: stopped first, it steps the firmware

    int refs = 0; // open handles (under provider.cpp's mutex)
};

} // namespace nicfw

#include "poll.hpp"
