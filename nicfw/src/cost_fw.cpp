// cost_fw.cpp - the firmware's hooks into the hardware-cost model
// (cost_model.hpp): what a transmit and a receive cost the NIC.  Called only
// with the model on (Firmware::cost_.on()), so nothing here is on the default
// path.
#include <cstring>

#include "dma.hpp"
#include "firmware.hpp"
#include "packet_check.hpp"
#include "vi_table.hpp"

namespace nicfw {

void Firmware::cost_tx(const ViImpl *vi, TxEntry &e, uint32_t bytes) {
    tx_arrival_ = cost_.nic_tx(bytes, nvis_.load(std::memory_order_relaxed), vi->send_cq != nullptr);
    e.due = cost_.nic_free_at();
}

bool Firmware::rx_due(const PacketHeader *wire_h) {
    const PacketHeader h = snapshot_header(wire_h);
    // Only data packets a peer's cost model stamped are charged; connection
    // management, Acks and read responses are NIC-generated and not modelled.
    if (!(h.flags & kFlagStamp) || h.op > Op::ReadReq || !packet_fits(h, wire_.max_payload())) return true;
    const auto *payload = reinterpret_cast<const unsigned char *>(wire_h) + kHeaderBytes;
    uint64_t arrival;
    std::memcpy(&arrival, payload + h.length, 8);
    if (cost_.now() < arrival) return false; // still on the link: the NIC is free to send meanwhile
    // The data this receive moves to the host (none for an RDMA read request).
    const uint32_t ext = h.op == Op::Send ? 0 : sizeof(RdmaExt);
    uint32_t bytes = h.op == Op::ReadReq || h.length < ext ? 0 : h.length - ext;
    if ((h.flags & kFlagBulk) && h.length >= ext + sizeof(BulkExt)) {
        BulkExt b;
        std::memcpy(&b, payload + ext, sizeof b);
        bytes = h.op == Op::ReadReq ? 0 : b.length;
    }
    const ViImpl *vi = vis_.find(h.dst_vi);
    const bool cq = vi && vi->recv_cq && (h.op == Op::Send || (h.flags & kFlagImm));
    return cost_.now() >= cost_.nic_rx(rx_head_, arrival, bytes, cq);
}

} // namespace nicfw
