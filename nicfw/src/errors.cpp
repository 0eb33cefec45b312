// errors.cpp - queueing and delivering the NIC's asynchronous errors (errors.hpp).
#include "errors.hpp"

#include <algorithm>

#include "async_error.hpp"

namespace nicfw {

void ErrorQueue::report(VIP_ERROR_DESCRIPTOR e, vipl::prov::Nic *handle) {
    std::lock_guard<std::mutex> g(mu_);
    if (!handle && !live_.empty()) handle = live_.front();
    e.NicHandle = handle ? handle->api_handle : nullptr;
    queue_.push_back(Queued{e, handle});
    pending_.store(true, std::memory_order_release);
    cv_.notify_one();
}

void ErrorQueue::wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> g(mu_);
    cv_.wait_for(g, timeout, [this] { return woken_ || !queue_.empty(); });
    woken_ = false;
}

void ErrorQueue::wake() {
    {
        std::lock_guard<std::mutex> g(mu_);
        woken_ = true;
    }
    cv_.notify_one();
}

void ErrorQueue::deliver() {
    static thread_local bool delivering = false; // a handler's own VIPL calls must not recurse
    if (delivering) return;
    delivering = true;
    std::vector<Queued> q;
    {
        std::lock_guard<std::mutex> g(mu_);
        q.swap(queue_);
        pending_.store(false, std::memory_order_relaxed);
    }
    for (auto &qe : q) {
        VIP_ERROR_HANDLER h = nullptr;
        VIP_PVOID ctx = nullptr;
        bool live = false;
        {
            std::lock_guard<std::mutex> g(mu_);
            live = std::find(live_.begin(), live_.end(), qe.handle) != live_.end();
            for (auto &sk : sinks_)
                if (sk.handle == qe.handle) {
                    h = sk.h;
                    ctx = sk.ctx;
                }
        }
        if (!live) continue; // the handle was closed: nobody to tell
        // A log line carries "[rank R] " from the facility (the job's rank).
        vipl::common::deliver_error(h, ctx, qe.e, viastack::log::Layer::nicfw, "");
    }
    delivering = false;
}

void ErrorQueue::handle_opened(vipl::prov::Nic *handle) {
    std::lock_guard<std::mutex> g(mu_);
    live_.push_back(handle);
}

void ErrorQueue::handle_closed(vipl::prov::Nic *handle) {
    std::lock_guard<std::mutex> g(mu_);
    std::erase_if(sinks_, [handle](const Sink &s) { return s.handle == handle; });
    std::erase(live_, handle);
}

void ErrorQueue::set_callback(vipl::prov::Nic *handle, VIP_ERROR_HANDLER h, VIP_PVOID ctx) {
    std::lock_guard<std::mutex> g(mu_);
    std::erase_if(sinks_, [handle](const Sink &s) { return s.handle == handle; });
    if (h) sinks_.push_back(Sink{handle, h, ctx});
}

} // namespace nicfw
