// errors.hpp - the NIC's asynchronous errors (VipErrorCallback).
//
// The firmware reports an error from wherever it finds one (report: a short
// critical section, off the data path's common case); the error callback of
// the NIC handle the VI or CQ was made through runs later, outside the
// firmware, from a host call or the agent thread (deliver), so a handler may
// itself call VIPL.  Without a handler the error is logged.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "vipl.h"
#include "vipl_provider.hpp"

namespace nicfw {

class ErrorQueue {
public:
    // Any thread.  `handle` is the NIC handle to tell (nullptr: the first open one).
    void report(VIP_ERROR_DESCRIPTOR e, vipl::prov::Nic *handle);
    bool pending() const { return pending_.load(std::memory_order_relaxed); }
    // Host call or agent: runs the callbacks of the queued errors.
    void deliver();
    // The agent's idle wait: returns once an error is queued or wake() is
    // called (at most `timeout` later in any case), so an agent with nothing
    // armed and no firmware to step sleeps until there is work instead of
    // waking every 100 us on the cores the host's threads spin on.
    void wait(std::chrono::milliseconds timeout);
    void wake();

    // NIC handles: opened, closed (its callback and queued errors go with it),
    // and registering (h != nullptr) or removing a callback.
    void handle_opened(vipl::prov::Nic *handle);
    void handle_closed(vipl::prov::Nic *handle);
    void set_callback(vipl::prov::Nic *handle, VIP_ERROR_HANDLER h, VIP_PVOID ctx);

private:
    struct Sink {
        vipl::prov::Nic *handle;
        VIP_ERROR_HANDLER h;
        VIP_PVOID ctx;
    };
    struct Queued {
        VIP_ERROR_DESCRIPTOR e;
        vipl::prov::Nic *handle;
    };
    std::mutex mu_;
    std::vector<Sink> sinks_;             // under mu_
    std::vector<vipl::prov::Nic *> live_; // under mu_, in opening order
    std::vector<Queued> queue_;           // under mu_
    std::atomic<bool> pending_{false};
    std::condition_variable cv_; // with mu_: report() and wake() signal wait()
    bool woken_ = false;         // under mu_
};

} // namespace nicfw
