// protocol.hpp - how a work request's bytes cross from one process to another
// (docs/nicfw.md, "Data path").  The firmware chooses one protocol per
// descriptor, from data (the operation, its length, where its memory and the
// target's lie, the configuration: Firmware::choose_protocol, protocol.cpp),
// and sends it with that protocol's row of Firmware::kTxOps, the way
// libfabric's shm provider picks a protocol per message and runs its entry of
// a table of operations.
//
//   protocol  initiator                               target
//   Staged    header + data in FIFO slots            its firmware places the bytes from the slot
//   Pull      header + the initiator's segments      its firmware checks, its DMA engine moves the bytes
//   OneSided  (RDMA) checks the target's published   nothing: its host may be computing
//             table, its DMA engine moves the bytes
//
// A one-sided transfer the initiator cannot do (a check fails, the target VI
// still has packets of ours to take, memory it cannot reach) is Declined and
// sent with the packet protocol instead; the target's firmware then checks
// again and reports as the VI spec says.
#pragma once

#include <cstdint>

#include "vipl.h"

namespace nicfw {

enum class Protocol : uint8_t { Staged, Pull, OneSided };
constexpr size_t kProtocols = 3;

// A descriptor the firmware has fetched and checked, on its SRAM copies.
struct TxRequest {
    VIP_CONTROL_SEGMENT cs;
    uint16_t op; // VIP_CONTROL_OP_*
    bool imm;
    uint32_t ops;                 // the status bits of its operation
    const VIP_DATA_SEGMENT *segs; // its data segments (in the descriptor cache)
    uint32_t nseg;
};

enum class TxResult : uint8_t {
    Done,     // sent (or completed with an error): the descriptor's entry is updated
    Full,     // back-pressure: nothing done, retry later
    Declined, // one-sided not possible here: nothing done, use a packet protocol
};

} // namespace nicfw
