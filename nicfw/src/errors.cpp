// errors.cpp - queueing and delivering the NIC's asynchronous errors (errors.hpp).
#include "errors.hpp"

#include <algorithm>

#include "viastack_log.hpp"

namespace nicfw {

namespace {
const char *error_name(VIP_ERROR_CODE c) {
    static const char *names[] = {"POST_DESC",  "CONN_LOST",  "RECVQ_EMPTY", "VI_OVERRUN",
                                  "RDMAW_PROT", "RDMAW_DATA", "RDMAW_ABORT", "RDMAR_PROT",
                                  "COMP_PROT",  "RDMA_TRANSPORT", "CATASTROPHIC"};
    return (c >= 0 && c <= VIP_ERROR_CATASTROPHIC) ? names[c] : "?";
}
} // namespace

void ErrorQueue::report(VIP_ERROR_DESCRIPTOR e, vipl::prov::Nic *handle) {
    std::lock_guard<std::mutex> g(mu_);
    if (!handle && !live_.empty()) handle = live_.front();
    e.NicHandle = handle ? handle->api_handle : nullptr;
    queue_.push_back(Queued{e, handle});
    pending_.store(true, std::memory_order_release);
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
        if (h) h(ctx, &qe.e);
        else if (qe.e.ErrorCode != VIP_ERROR_CONN_LOST)
            // The line carries "[rank R] " from the facility (the job's rank).
            viastack::log::error(viastack::log::Layer::nicfw,
                                 "asynchronous error VIP_ERROR_{} on {} (register VipErrorCallback to handle it)",
                                 error_name(qe.e.ErrorCode), qe.e.ViHandle ? "a VI" : "the NIC");
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
