// agent.hpp - the NIC's agent thread: it runs armed notify handlers
// (VipSendNotify, VipRecvNotify, VipCQNotify), delivers asynchronous errors
// to the error callbacks, and in inline mode with VIPL_NICFW_PROGRESS=1 (or
// once a handler is armed) steps the firmware while the host is away.  It is
// started lazily, the first time something needs it (agent.cpp).
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "config.hpp"
#include "objects.hpp"

namespace nicfw {

class Firmware;
class ErrorQueue;

class Agent {
public:
    Agent(const Config &cfg, Firmware &fw, ErrorQueue &errors) : cfg_(cfg), fw_(fw), errors_(errors) {}
    ~Agent() { stop(); }
    Agent(const Agent &) = delete;
    Agent &operator=(const Agent &) = delete;

    // Starts the thread (once).  With `step` it also runs the firmware, and host
    // polls switch to the try-locked step.  Host thread, never inside a step.
    void ensure_running(bool step);
    bool running() const { return running_.load(std::memory_order_relaxed); }
    void stop();

    // One-shot notify handlers (one pending per queue: VIP_INVALID_STATE otherwise).
    VIP_RETURN arm(ViImpl *vi, NotifySlot &slot, VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h);
    VIP_RETURN arm(CqImpl *cq, VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h);
    // The VI / CQ is being destroyed: drop its armed handlers.
    void forget(ViImpl *vi);
    void forget(CqImpl *cq);

private:
    void run();

    const Config &cfg_;
    Firmware &fw_;
    ErrorQueue &errors_;
    std::thread thread_;
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::vector<ViImpl *> vis_; // under mu_: VIs with an armed handler
    std::vector<CqImpl *> cqs_; // under mu_
};

} // namespace nicfw
