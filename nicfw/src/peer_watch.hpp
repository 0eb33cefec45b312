// peer_watch.hpp - which peer NICs are gone because their process died (kill -9,
// a crash, an exit without disconnecting).  A NIC lives in its process, so a
// dead process is a dead NIC: each NIC publishes its pid in its FIFO's control
// block on the job's wire, and a peer watches it through a pidfd (readable once
// the process has exited, zombie or not).  The firmware asks every ~100 ms, and
// only about peers some connected VI talks to (Firmware::housekeeping).
#pragma once

#include <cstdint>
#include <vector>

#include "wire.hpp"

namespace nicfw {

class PeerWatch {
public:
    PeerWatch(Wire &wire, int rank);
    ~PeerWatch();
    PeerWatch(const PeerWatch &) = delete;
    PeerWatch &operator=(const PeerWatch &) = delete;
    // Whether the process of NIC `nic` has exited (false while unknown).
    bool dead(int nic);

private:
    Wire &wire_;
    int rank_;
    std::vector<int> fds_;       // pidfd per peer, -1 not opened yet
    std::vector<uint32_t> pids_; // the pid the pidfd is for
    std::vector<uint8_t> gone_;
};

} // namespace nicfw
