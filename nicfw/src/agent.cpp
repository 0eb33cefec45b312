// agent.cpp - the agent thread (agent.hpp): notify handlers, error delivery,
// and firmware progress while the host computes.
#include "agent.hpp"

#include <time.h>

#include "errors.hpp"
#include "firmware.hpp"

namespace nicfw {

void Agent::ensure_running(bool step) {
    if (step) fw_.share_stepping();
    if (thread_.joinable()) return;
    running_.store(true);
    thread_ = std::thread([this] { run(); });
}

void Agent::stop() {
    stop_.store(true);
    errors_.wake();
    if (thread_.joinable()) thread_.join();
}

VIP_RETURN Agent::arm(ViImpl *vi, NotifySlot &slot, VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) {
    if (!h) return VIP_INVALID_PARAMETER;
    {
        std::lock_guard<std::mutex> g(mu_);
        if (slot.armed.load()) return VIP_INVALID_STATE; // one pending notify per queue
        slot.ctx = ctx;
        slot.desc_handler = h;
        slot.armed.store(true);
        vis_.push_back(vi);
    }
    ensure_running(true);
    errors_.wake(); // an agent idle in ErrorQueue::wait starts polling the handler
    return VIP_SUCCESS;
}

VIP_RETURN Agent::arm(CqImpl *cq, VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) {
    if (!h) return VIP_INVALID_PARAMETER;
    {
        std::lock_guard<std::mutex> g(mu_);
        if (cq->notify_slot.armed.load()) return VIP_INVALID_STATE;
        cq->notify_slot.ctx = ctx;
        cq->notify_slot.cq_handler = h;
        cq->notify_slot.armed.store(true);
        cqs_.push_back(cq);
    }
    ensure_running(true);
    errors_.wake();
    return VIP_SUCCESS;
}

void Agent::forget(ViImpl *vi) {
    std::lock_guard<std::mutex> g(mu_);
    std::erase(vis_, vi);
}

void Agent::forget(CqImpl *cq) {
    std::lock_guard<std::mutex> g(mu_);
    std::erase(cqs_, cq);
}

void Agent::run() {
    struct Fire {
        NotifySlot *slot;
        ViImpl *vi;
        CqImpl *cq;
        VIP_DESCRIPTOR *d;
        bool recv;
        VIP_VI_HANDLE cq_vi; // a CQ entry's VI, as its handle (the VI may be gone)
    };
    std::vector<Fire> fire;
    while (!stop_.load(std::memory_order_relaxed)) {
        if (cfg_.mode == Mode::Inline && fw_.stepping_shared()) fw_.locked_step();
        fire.clear();
        bool armed = false;
        {
            std::lock_guard<std::mutex> g(mu_);
            for (size_t i = 0; i < vis_.size();) {
                ViImpl *vi = vis_[i];
                bool keep = false;
                for (int q = 0; q < 2; ++q) {
                    NotifySlot &s = q ? vi->notify_recv : vi->notify_send;
                    if (!s.armed.load()) continue;
                    VIP_DESCRIPTOR *d = nullptr;
                    if (vi->done(q ? vi->host_rq : vi->host_sq, &d) == VIP_SUCCESS) {
                        s.armed.store(false);
                        fire.push_back(Fire{&s, vi, nullptr, d, q == 1, nullptr});
                    } else {
                        keep = true;
                    }
                }
                if (keep) {
                    ++i;
                    armed = true;
                } else vis_.erase(vis_.begin() + static_cast<long>(i));
            }
            for (size_t i = 0; i < cqs_.size();) {
                CqImpl *cq = cqs_[i];
                VIP_VI_HANDLE v = nullptr;
                bool recv = false;
                if (cq->notify_slot.armed.load() && cq->done(&v, &recv) == VIP_SUCCESS) {
                    cq->notify_slot.armed.store(false);
                    fire.push_back(Fire{&cq->notify_slot, nullptr, cq, nullptr, recv, v});
                }
                if (cq->notify_slot.armed.load()) {
                    ++i;
                    armed = true;
                } else cqs_.erase(cqs_.begin() + static_cast<long>(i));
            }
        }
        // Handlers run outside the lock: they may arm the next notify.
        for (auto &f : fire) {
            if (f.cq) {
                VIP_NIC_HANDLE nh = f.cq->owner ? f.cq->owner->api_handle : nullptr;
                f.slot->cq_handler(f.slot->ctx, nh, f.cq_vi, f.recv);
            } else {
                VIP_NIC_HANDLE nh = f.vi->owner ? f.vi->owner->api_handle : nullptr;
                f.slot->desc_handler(f.slot->ctx, nh, f.vi->api_handle, f.d);
            }
        }
        if (errors_.pending()) errors_.deliver();
        if (!fire.empty()) continue;
        if (!armed && !(cfg_.mode == Mode::Inline && fw_.stepping_shared())) {
            // Nothing to poll: only an error report, an arm or stop() needs
            // us.  (Polling every 100 us cost a store stream of Split-C, whose
            // runtime registers an error callback, 12 000 context switches a
            // second on the cores its ranks spin on.)  The timeout is a
            // safety net only.
            errors_.wait(std::chrono::milliseconds(100));
            continue;
        }
        timespec ts{0, armed ? 50000L : (cfg_.progress_thread ? 200000L : 100000L)};
        nanosleep(&ts, nullptr);
    }
}

} // namespace nicfw
