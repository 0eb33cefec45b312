// peer_vi.hpp - a layer's VI to a peer, from the address exchange to the
// tear-down: the one home of connection set-up for AM, the Split-C runtime,
// FM and BIP.
//
//   LayerNic             the NIC a layer with a VI per rank (FM, BIP) keeps
//                        for all of them: handle, attributes, protection tag,
//                        the receive CQ
//   open_reliable_nic    opens the NIC the layer's variable names, reads its
//                        attributes, creates a protection tag, and checks the
//                        NIC offers Reliable Delivery (close_reliable_nic
//                        undoes it)
//   exchange_addresses   every rank's NIC address (opaque bytes from
//                        VipQueryNic) plus a payload of the layer's, by one
//                        vipl_boot_allgather (AM, whose peers come from
//                        AM_Map's endpoint names, does not need it)
//   PeerViConfig         what all of a layer's VIs share: reliability
//                        (Reliable Delivery), CQs, RDMA read, the largest
//                        transfer, the connection timeout, the NIC's limits
//                        (layer_vi_config: the one a LayerNic's VIs share)
//   start_peer_vi        checks the NIC's limits, creates the VI, pre-posts the
//                        channel's receives on it (the peer can never find
//                        the receive queue empty), starts the peer-to-peer
//                        connection named by the layer's discriminator
//                        (start_rank_link: the channel's region first)
//   poll_peer_vi /       one look at, or a wait for, that connection, with a
//   finish_peer_vi       deadline (VIP_TIMEOUT past it)
//   close_vi /           disconnect, take the descriptors back, destroy
//   close_peer_vi
//
// Start every VI's connection first (VipConnectPeerRequest does not wait),
// then finish them: no rank waits for a peer still creating its VIs.  Set-up
// and tear-down only; nothing here runs per message.  NIC addresses are
// opaque here as in the layers: no provider's format is assumed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viastack/channel.hpp"
#include "vipl_wait.h"

namespace viastack::channel {

// The longest NIC address a layer keeps (VIP_MAX_HOST_ADDRESS_LEN).
constexpr uint16_t kMaxNicAddress = VIP_MAX_HOST_ADDRESS_LEN;

struct NicAddress {
    uint16_t len = 0;
    uint8_t bytes[kMaxNicAddress] = {};
};

// The NIC a layer with one VI per rank keeps for all of its VIs (FM's and
// BIP's States are one): what open_reliable_nic opens, the CQ the layer
// creates for its receives, what close_reliable_nic closes.
struct LayerNic {
    VIP_NIC_HANDLE nic = nullptr;
    VIP_PROTECTION_HANDLE ptag = nullptr;
    VIP_NIC_ATTRIBUTES attr{};
    VIP_CQ_HANDLE rcq = nullptr; // every VI's receives complete here
};

// Opens device (nullptr: the provider's default), fills n->attr and n->ptag,
// and checks the NIC offers Reliable Delivery, which the layer's guarantees
// rest on.  n->nic is set only once VipOpenNic succeeded, so the layer's
// tear-down closes what was opened.  On failure returns false and *why says
// what failed in the layer's words: device_env is the variable naming the
// device (the hint on a failed open), layer the layer's name ("FM", "BIP").
bool open_reliable_nic(const char *device, const char *device_env, const char *layer, LayerNic *n, std::string *why);

// The other end of open_reliable_nic, once every VI is closed: destroys the
// layer's receive CQ (if any) and protection tag, closes the NIC, and sets
// the three handles to null, so a layer may open again.
void close_reliable_nic(LayerNic *n);

// Collective over the job (vipl_boot): (*addrs)[r] is rank r's NIC address,
// and payload_len bytes at payloads + r * payload_len are the payload rank r
// passed (payload_len may be 0).  On failure returns false and *why says
// what failed ("NIC address too long", "exchanging NIC addresses failed").
bool exchange_addresses(const VIP_NIC_ATTRIBUTES &nic, const void *payload, size_t payload_len,
                        std::vector<NicAddress> *addrs, void *payloads, std::string *why);

// What every VI of one layer in one process has in common.
struct PeerViConfig {
    VIP_NIC_HANDLE nic = nullptr;
    const VIP_NIC_ATTRIBUTES *attr = nullptr; // the NIC's limits (MaxTransferSize, MaxDiscriminatorLen)
    VIP_PROTECTION_HANDLE ptag = nullptr;
    VIP_CQ_HANDLE send_cq = nullptr; // sends complete here (nullptr: reaped from the VI)
    VIP_CQ_HANDLE recv_cq = nullptr; // receives complete here (nullptr: none)
    VIP_ULONG max_transfer = 0;      // MaxTransferSize wanted (at most the NIC's)
    bool rdma_read = false;          // RDMA write is always enabled; read on request
    VIP_ULONG connect_timeout_ms = 60000;
};

// The configuration of every VI on n of a layer with a VI per rank:
// receives complete on n.rcq, sends are reaped from the VI, RDMA write only
// (the layer writes into its peer's buffers), transfers up to max_transfer
// bytes, connections given connect_timeout_ms.
PeerViConfig layer_vi_config(const LayerNic &n, VIP_ULONG max_transfer, VIP_ULONG connect_timeout_ms);

// One end of a connection: its NIC address and the discriminator that names
// this VI there (at most VIP_MAX_DISCRIMINATOR_LEN bytes).
struct PeerEnd {
    const uint8_t *addr;
    uint16_t addr_len;
    const uint8_t *disc;
    uint16_t disc_len;
};

// Why a set-up step failed: a VIPL call and its return code, or (call null)
// a limit the request exceeds, in words.
struct SetupError {
    const char *call = nullptr;
    VIP_RETURN rc = VIP_SUCCESS;
    std::string limit;
    // "VipCreateVi: VIP_ERROR_RESOURCE", or the limit.
    std::string str() const;
};

// The deadline (monotonic ns) of a connection started now with this timeout
// (a PeerViConfig's connect_timeout_ms).
uint64_t connect_deadline(VIP_ULONG timeout_ms);

// Checks the NIC's limits (address and discriminator lengths), creates a
// Reliable Delivery VI, pre-posts ch's receives on it (ch must be attached)
// and starts its connection from `local` to `remote`.  On failure returns
// false and fills *err; a VI already created stays with ch (close_vi), none
// is created when a limit is exceeded.
bool start_peer_vi(const PeerViConfig &c, Channel &ch, const PeerEnd &local, const PeerEnd &remote, SetupError *err);

// start_peer_vi for a layer with one VI per (rank, rank, side) - FM, BIP, the
// Split-C runtime: from rank `me` to rank `peer`, at the NIC addresses
// exchange_addresses gave (addrs), named at both ends by the layer's
// two-letter tag, the two ranks and the side (both ends compute each other's,
// so the peer-to-peer requests match).  To itself, side 0 connects to side 1.
bool start_rank_vi(const PeerViConfig &c, Channel &ch, const char tag[2], const std::vector<NicAddress> &addrs,
                   unsigned me, unsigned peer, uint8_t side, SetupError *err);

// A channel of its own to rank `peer`: allocates and registers region (the
// size lay needs, on c's NIC and tag), attaches ch to it with lay, and
// start_rank_vi.  On failure returns false and *why says what failed; what
// was made stays with ch and region (close_peer_vi).
bool start_rank_link(const PeerViConfig &c, Channel &ch, Region &region, const Layout &lay, const char tag[2],
                     const std::vector<NicAddress> &addrs, unsigned me, unsigned peer, uint8_t side, std::string *why);

// One look at the connection start_peer_vi began: VIP_NOT_DONE while pending
// and before deadline_ns, VIP_TIMEOUT after it, else VIP_SUCCESS or the error.
VIP_RETURN poll_peer_vi(Channel &ch, uint64_t deadline_ns);
// Waits (polling, giving the CPU away between looks) until poll_peer_vi is
// not VIP_NOT_DONE and returns its result.
VIP_RETURN finish_peer_vi(Channel &ch, uint64_t deadline_ns);

// Disconnects ch's VI (if any), takes back its descriptors (on_send(Slot*)
// for each send slot: the layer releases what it pinned), destroys it and
// forgets it.  Returns VipDestroyVi's result (VIP_SUCCESS without a VI): on
// failure the NIC may still own descriptors in the channel's memory.
template <class F>
VIP_RETURN close_vi(Channel &ch, F &&on_send) {
    if (!ch.vi()) return VIP_SUCCESS;
    VipDisconnect(ch.vi());
    ch.drain(on_send);
    const VIP_RETURN rc = VipDestroyVi(ch.vi());
    ch.forget_vi();
    return rc;
}

// close_vi, then releases the channel's own region (leaked instead if the VI

// A layer joining the job vipl-run started: its wait policy (VIASTACK_WAIT)
// into *wait, this rank and the job's size.  A lookup, not a reference:
// finalizing a layer does not leave the job (the program's vipl_boot_finalize
// does), so the layer can start again.  Not ok: *why says what to fix.
enum class JoinJob { ok, bad_wait_policy, no_job };
JoinJob join_job(vipl_wait::WaitState *wait, unsigned *rank, unsigned *size, std::string *why);

// Finishes the connection of every link start_rank_link began, all within one
// connect timeout, and marks each up.  Links: pointers to a layer's link
// (fields ch, peer, up).  On the first failure *why names the peer
// ("connecting to <peer_word> N: <VIPL status>").
template <class Links>
bool finish_links(const Links &links, VIP_ULONG connect_timeout_ms, const char *peer_word, std::string *why) {
    const uint64_t deadline = connect_deadline(connect_timeout_ms);
    for (auto *l : links) {
        const VIP_RETURN rc = finish_peer_vi(l->ch, deadline);
        if (rc != VIP_SUCCESS) {
            *why =
                std::string("connecting to ") + peer_word + " " + std::to_string(l->peer) + ": " + VipxReturnString(rc);
            return false;
        }
        l->up = true;
    }
    return true;
}
// could not be destroyed) and detaches ch.
void close_peer_vi(Channel &ch, Region &region);

} // namespace viastack::channel
