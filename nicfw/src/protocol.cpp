// protocol.cpp - the data the choice of protocol (protocol.hpp) is made from:
// whether a transfer may take the pull protocol (Firmware::choose_protocol,
// firmware.hpp, inline on the send path, decides; the table of what each
// protocol does at the initiator, kTxOps, is in tx.cpp).
#include "firmware.hpp"
#include "protection.hpp"

namespace nicfw {

namespace {
inline bool reliable(const ViImpl *vi) { return vi->attr.reliability != VIP_SERVICE_UNRELIABLE; }
} // namespace

// The single-copy pull protocol (dma.hpp): from VIPL_NICFW_DMA_MIN bytes on,
// or VIPL_NICFW_DMA_MIN_SHM when all the initiator's memory is VipxAllocMem
// memory, which the target's NIC maps and copies with one memcpy.
bool Firmware::bulk_eligible(const ViImpl *vi, uint32_t len, const VIP_DATA_SEGMENT *segs, uint32_t nseg) const {
    if (!cfg_.dma_min || len < cfg_.shm_crossover()) return false;
    // Unreliable VIs complete staged messages at transmit; they take the bulk
    // path (completion on the target's answer) only for what cannot be staged.
    // On a faulty wire not at all: an unreliable request or answer is not resent,
    // and a lost one would leave the descriptor waiting for ever (the transfer
    // then fails with LENGTH_ERROR instead, docs/nicfw.md "Faults and recovery").
    if (!reliable(vi) && (len <= kMaxStagedTransfer || faults_)) return false;
    // From dma_min on, any memory (cross-memory attach where it is not shared);
    // between the shared-memory crossover and dma_min, and wherever cross-memory
    // attach is not allowed, only memory the target's NIC can memcpy from.
    if (len >= cfg_.dma_min && dma_.cma_ok()) return true;
    for (uint32_t i = 0; i < nseg; ++i) {
        const Region *r = segs[i].Length ? protection_.lookup(segs[i].Handle) : nullptr;
        if (segs[i].Length && !(r && r->shm.id)) return false;
    }
    return true;
}

// The target could not move the bytes (the initiator died or unmapped them):
// the connection is broken, as after a transport error on a staged packet.
void Firmware::bulk_copy_failed(ViImpl *vi, VIP_DESCRIPTOR *d) {
    if (reliable(vi)) vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, d, true);
    else report_error(vi, nullptr, d, d ? VIP_RESOURCE_DESCRIPTOR : VIP_RESOURCE_VI, VIP_ERROR_RDMA_TRANSPORT);
}

} // namespace nicfw
