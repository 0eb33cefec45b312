// cost_fw.cpp - the firmware's hooks into the hardware-cost model
// (cost_model.hpp): what a transmit and a receive cost the NIC.  Called only
// with the model on (Firmware::cost_.on()), so nothing here is on the default
// path.
#include <cstring>
#include <mutex>

#include "dma.hpp"
#include "firmware.hpp"
#include "packet_check.hpp"
#include "vi_table.hpp"
#include "vipl_instr.h"
#include "viastack_log.hpp"

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
    rx_visible_ = cost_.nic_rx(rx_head_, arrival, bytes, cq);
    return cost_.now() >= rx_visible_;
}

void Firmware::cost_arrived(const ViImpl *vi, const VIP_DESCRIPTOR *d, bool recv) {
    // When the NIC wrote the completion under the model, on the TSC clock of
    // the instrumentation; and when the host's check that finds it began: the
    // completion is being handed over now, inside a host call, and a Done has
    // read the descriptor status (objects.cpp) just before - on the hardware
    // the poll that finds it pays that read after the arrival, so it stays
    // overhead.  A CQ entry is read and cleared after it was found: its check
    // begins now.
    const uint64_t visible = recv ? rx_visible_ : tx_visible_, now = cost_.now();
    const double cyc = vipl_instr_cycles_per_ns();
    const uint64_t tsc = vipl_instr_now();
    auto ago = [&](uint64_t ns) {
        const uint64_t c = uint64_t(double(ns) * cyc);
        return c < tsc ? tsc - c : 1;
    };
    const uint64_t at = ago(now > visible ? now - visible : 0);
    vipl_instr_arrived(d, at, ago(cost_.params().uncached_read_ns));
    if (const CqImpl *cq = recv ? vi->recv_cq : vi->send_cq)
        vipl_instr_arrived(static_cast<const vipl::prov::Cq *>(cq), at, tsc);
}

namespace {
std::mutex g_host_mutex;
int g_host_users = 0; // open NICs whose profile models the host CPU
} // namespace

void Firmware::cost_host_acquire() {
    vipl_host_model m;
    if (!host_cpu_model(cost_.params(), vipl_instr_cycles_per_ns() * 1000.0, &m)) return;
    std::lock_guard<std::mutex> lock(g_host_mutex);
    if (g_host_users == 0 && vipl_host_model_set(&m) != 0) {
        viastack::log::error(viastack::log::Layer::nicfw, "cost model {}: bad host-CPU parameters (slowdown {})",
                             cost_.params().name, m.slowdown);
        return;
    }
    if (g_host_users == 0)
        viastack::log::debug(viastack::log::Layer::nicfw,
                             "cost model {}: host CPU modelled, the layers' software stretched {:.2f}x; "
                             "received messages read in {}-byte lines of {} ns",
                             cost_.params().name, m.slowdown, m.line_bytes, m.line_ns);
    ++g_host_users;
    cost_host_ = true;
}

void Firmware::cost_host_release() {
    std::lock_guard<std::mutex> lock(g_host_mutex);
    cost_host_ = false;
    if (--g_host_users == 0) vipl_host_model_set(nullptr);
}

} // namespace nicfw
