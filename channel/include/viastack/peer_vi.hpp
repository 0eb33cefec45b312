// peer_vi.hpp - the connections of a layer that keeps one VI per peer of the
// job (BIP, FM): every rank opens one VI to every rank and two to itself
// (side 0 sends, side 1 receives what the rank sends itself), each a
// channel (channel.hpp) connected peer-to-peer by a discriminator both ends
// compute from the layer's two-letter tag, the two ranks and the side.
//
// Start every VI's connection first (VipConnectPeerRequest does not wait),
// then finish them all: no rank waits for a peer still creating its VIs.
// Set-up and tear-down only; nothing here runs per message.
#pragma once

#include <cstdint>
#include <string>

#include "viastack/channel.hpp"

namespace viastack::channel {

// What every VI of one layer in one process has in common.
struct PeerViConfig {
    char tag[2];                  // the layer's discriminator prefix ("BI", "FM")
    VIP_NIC_HANDLE nic;
    VIP_PROTECTION_HANDLE ptag;
    VIP_CQ_HANDLE recv_cq;        // receives complete here (nullptr: none)
    VIP_ULONG max_transfer;       // each VI's MaxTransferSize
    VIP_ULONG connect_timeout_ms; // for VipConnectPeerRequest
    unsigned me;                  // this rank
    const uint8_t *my_addr;       // this NIC's address (VIP_NIC_ATTRIBUTES)
    uint16_t my_addr_len;
};

// Creates a Reliable Delivery VI with RDMA write enabled (peers write into
// buffers the layer registers for it) and no RDMA read, pre-posts ch's
// receives on it (ch must be attached) and starts its connection to `peer`,
// whose NIC is at peer_addr, on `side`.  On failure returns false and *why
// names the VIPL call; a VI already created stays with ch (close_peer_vi).
bool start_peer_vi(const PeerViConfig &c, Channel &ch, unsigned peer, const uint8_t *peer_addr,
                   uint16_t peer_addr_len, uint8_t side, std::string *why);

// Waits for the connection start_peer_vi began: VIP_SUCCESS or its error.
VIP_RETURN finish_peer_vi(Channel &ch);

// Disconnects ch's VI (if any), takes back its descriptors, destroys it and
// releases the region (leaked instead if the VI could not be destroyed: the
// NIC may still own descriptors in it); detaches ch.
void close_peer_vi(Channel &ch, Region &region);

}  // namespace viastack::channel
