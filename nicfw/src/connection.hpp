// connection.hpp - the NIC's connection management: client/server
// (ConnectRequest / ConnectWait / Accept / Reject, with the private data of
// the Vipx calls, the request not blocking: start, then done) and peer-to-peer
// (ConnectPeerRequest / Done / Wait) connections matched by discriminators,
// and orderly disconnect (connect.cpp).
//
// Host calls and the firmware (on_packet) share the pending-request lists
// under one mutex; connection management is rare, so a mutex is fine.  It
// sends its packets and breaks connections through the firmware, finds VIs in
// the VI table, and steps the NIC (host_poll) while it waits.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "objects.hpp"
#include "wire.hpp"

namespace nicfw {

class NicHw;
class Firmware;
class ViTable;

class ConnectionManager {
public:
    ConnectionManager(NicHw &nic, Firmware &fw, const ViTable &vis, int nprocs)
        : nic_(nic), fw_(fw), vis_(vis), nprocs_(nprocs) {}

    // A remote address -> the NIC's rank (2-byte little-endian host address).
    VIP_RETURN parse_addr(const VIP_NET_ADDRESS *a, uint16_t *nic) const;

    // ---- host side ----
    // The client's request: sent by connect_start; connect_done steps an
    // inline firmware once and reports the answer (or gives up at the
    // deadline); connect_wait_done waits for it.
    VIP_RETURN connect_start(ViImpl *vi, const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                             VIP_ULONG timeout_ms, const void *data, VIP_ULONG len);
    VIP_RETURN connect_done(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len);
    VIP_RETURN connect_wait_done(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len);
    VIP_RETURN connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                            VIP_VI_ATTRIBUTES *remote_attr, ConnImpl **out);
    VIP_RETURN accept(const ConnImpl &c, ViImpl *vi, const void *data, VIP_ULONG len);
    VIP_RETURN reject(const ConnImpl &c, const void *data, VIP_ULONG len);
    VIP_RETURN peer_request(ViImpl *vi, const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                            VIP_ULONG timeout_ms);
    VIP_RETURN peer_done(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr);
    VIP_RETURN peer_wait(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr);
    VIP_RETURN disconnect(ViImpl *vi);

    // ---- firmware side: a connection-management packet arrived ----
    void on_packet(const PacketHeader *h, const unsigned char *payload);
    // Client requests whose server's process is gone (dead(nic)) fail:
    // VipxConnectRequestDone answers VIP_NO_MATCH.
    void fail_requests_to_dead(const std::function<bool(uint16_t)> &dead);

private:
    struct ConnRequest { // a ConnReq that arrived, waiting for VipConnectWait
        uint16_t src_nic, src_vi;
        uint32_t nonce;
        VIP_VI_ATTRIBUTES attr;
        std::vector<uint8_t> want_disc;   // discriminator the client asked for
        std::vector<uint8_t> client_disc; // the client's own discriminator
        std::vector<uint8_t> data;        // its private data
        bool claimed = false;
        bool cancelled = false; // the client gave up (ConnCancel) after a VipConnectWait claimed it
    };
    struct PeerRequest { // a PeerReq that arrived before the local side asked
        uint16_t src_nic, src_vi;
        uint32_t nonce;
        VIP_VI_ATTRIBUTES attr;
        std::vector<uint8_t> their_disc, want_disc;
    };
    struct LocalPeer { // a local VipConnectPeerRequest in progress
        ViImpl *vi;
        uint16_t remote_nic;
        std::vector<uint8_t> my_disc, their_disc;
        uint64_t deadline_ns;
        uint32_t nonce;
    };

    void forget_request(uint16_t nic, uint32_t nonce); // under mu_
    // The client request's result without stepping the NIC (VIP_NOT_DONE while pending).
    VIP_RETURN client_result(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len);
    void cancel_client_request(ViImpl *vi); // under mu_: give up, tell the server
    void send_cm(uint16_t dst, Op op, uint16_t dst_vi, uint16_t src_vi, const void *payload, uint32_t len);

    NicHw &nic_; // only to step it while waiting (host_poll)
    Firmware &fw_;
    const ViTable &vis_;
    const int nprocs_;
    std::mutex mu_;
    std::deque<ConnRequest> conn_requests_;
    std::deque<PeerRequest> peer_requests_;
    std::vector<LocalPeer> local_peers_;
    std::atomic<uint32_t> nonce_gen_{1};
};

} // namespace nicfw
