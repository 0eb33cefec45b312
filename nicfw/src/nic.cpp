// nic.cpp - bringing the NIC of this process up and down: its components in
// dependency order (nic.hpp), the agent started at once when the
// configuration asks for progress in inline mode, and the orderly stop.
#include "nic.hpp"

namespace nicfw {

NicHw::NicHw(const Config &c, const std::string &job, int rank_, int nprocs_)
    : cfg(c), rank(rank_),
      nprocs(nprocs_), addr_bytes{static_cast<uint8_t>(rank_ & 0xff), static_cast<uint8_t>(rank_ >> 8)},
      fw(cfg, job, rank_, nprocs_, protection, vis, errors, cm), cm(*this, fw, vis, nprocs_), agent(cfg, fw, errors) {
    // Peers' one-sided transfers end before a deregistration returns.
    protection.set_drain([this] { fw.wait_peer_dma(); });
    // Threads last: they use every component.
    fw.start();
    if (cfg.progress_thread && cfg.mode == Mode::Inline) agent.ensure_running(true);
}

NicHw::~NicHw() { stop(); }

void NicHw::stop() {
    agent.stop();
    fw.stop_thread();
}

} // namespace nicfw
