// fake_switchboard.cpp - the process-wide switchboard of the fake provider:
// devices, the agent thread that runs notify handlers and error callbacks, and
// the small helpers every part uses.
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "async_error.hpp"
#include "fake_provider.hpp"
#include "viastack_log.hpp"

namespace vipl::fake {

// Never destroyed: handlers may still run on the agent while the process exits.
Switchboard &board() {
    static Switchboard *b = new Switchboard;
    return *b;
}

namespace {
void stop_agent_at_exit() { board().stop_agent(); }
} // namespace

// FNV-1a: the "CRC" a receiver checks.  Any single corrupted byte changes it.
uint64_t checksum(const std::vector<uint8_t> &bytes) {
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : bytes) {
        h ^= b;
        h *= 1099511628211ull;
    }
    return h;
}

VIP_RETURN parse_address(const VIP_NET_ADDRESS *a, Device **out) {
    if (!a || a->HostAddressLen != 2 || a->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN) return VIP_INVALID_PARAMETER;
    const int idx = a->HostAddress[0] | (a->HostAddress[1] << 8);
    if (idx >= kMaxDevices) return VIP_INVALID_PARAMETER;
    *out = board().devices[idx]; // nullptr: a NIC nobody opened (requests to it time out)
    return VIP_SUCCESS;
}

Device::Device(int i) : index(i), name("fake" + std::to_string(i)), regions(kMaxRegions + 1) {
    addr[0] = uint8_t(i & 0xff);
    addr[1] = uint8_t(i >> 8);
}

VIP_RETURN Device::check_vi_attr(const prov::ViAttr &a) const {
    if (a.reliability != VIP_SERVICE_UNRELIABLE && a.reliability != VIP_SERVICE_RELIABLE_DELIVERY &&
        a.reliability != VIP_SERVICE_RELIABLE_RECEPTION)
        return VIP_INVALID_RELIABILITY_LEVEL;
    if (a.max_transfer == 0 || a.max_transfer > kMaxTransfer) return VIP_INVALID_MTU;
    if (a.qos != nullptr) return VIP_INVALID_QOS;
    if (!a.ptag || static_cast<FakePtag *>(a.ptag)->dev != this) return VIP_INVALID_PTAG;
    if (a.rdma_read && a.reliability == VIP_SERVICE_UNRELIABLE) return VIP_INVALID_RDMAREAD;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- agent
void Switchboard::run_on_agent(std::function<void()> job) {
    jobs_.push_back(std::move(job));
    if (!agent_.joinable()) {
        static bool once = (std::atexit(stop_agent_at_exit), true);
        (void)once;
        agent_ = std::thread([this] {
            std::unique_lock<std::mutex> lk(mu);
            for (;;) {
                jobs_cv_.wait(lk, [this] { return stopping_ || !jobs_.empty(); });
                if (jobs_.empty()) return; // stopping, nothing left to run
                auto job = std::move(jobs_.front());
                jobs_.pop_front();
                lk.unlock(); // handlers may call VIPL (and so take mu)
                job();
                lk.lock();
            }
        });
    }
    jobs_cv_.notify_one();
}

void Switchboard::stop_agent() {
    {
        std::lock_guard<std::mutex> g(mu);
        stopping_ = true;
    }
    jobs_cv_.notify_one();
    if (agent_.joinable() && agent_.get_id() != std::this_thread::get_id()) agent_.join();
}

void Switchboard::report(FakeVi *vi, FakeCq *cq, VIP_DESCRIPTOR *d, VIP_RESOURCE_CODE rc, VIP_ERROR_CODE ec) {
    NicHandle *h = vi ? vi->owner : cq ? cq->owner : nullptr;
    if (!h) return;
    const VIP_ERROR_DESCRIPTOR e = vipl::common::make_error_descriptor(h->api_handle, vi ? vi->api_handle : nullptr,
                                                                       cq ? cq->api_handle : nullptr, d, rc, ec);
    Device *dev = h->dev;
    run_on_agent([this, e, h, dev] {
        VIP_ERROR_HANDLER fn = nullptr;
        VIP_PVOID ctx = nullptr;
        {
            std::lock_guard<std::mutex> g(mu);
            bool live = false;
            for (NicHandle *l : dev->live_handles) live = live || l == h;
            if (!live) return; // the handle was closed: nobody to tell
            fn = h->err_h;
            ctx = h->err_ctx;
        }
        vipl::common::deliver_error(fn, ctx, e, viastack::log::Layer::vipl, "fake: ");
    });
}

// Fires every armed notify whose queue has a completed descriptor (VI) or an
// entry (CQ): the descriptor or entry is taken here, the handler runs on the agent.
void Switchboard::settle() {
    for (size_t i = 0; i < notify_vis.size();) {
        FakeVi *vi = notify_vis[i];
        for (bool recv : {false, true}) {
            DescNotify &n = recv ? vi->notify_recv : vi->notify_send;
            if (!n.armed) continue;
            VIP_DESCRIPTOR *d = nullptr;
            const VIP_RETURN rc = recv ? vi->rq.reap(&d, [] {}) : vi->sq.reap(&d, [] {});
            if (rc != VIP_SUCCESS) continue;
            n.armed = false;
            run_on_agent(
                [h = n.h, ctx = n.ctx, nic = vi->owner->api_handle, v = vi->api_handle, d] { h(ctx, nic, v, d); });
        }
        if (!vi->notify_send.armed && !vi->notify_recv.armed) notify_vis.erase(notify_vis.begin() + long(i));
        else ++i;
    }
    for (size_t i = 0; i < notify_cqs.size();) {
        FakeCq *cq = notify_cqs[i];
        CqEntry e;
        if (cq->armed && cq->fifo.pop(&e)) {
            cq->armed = false;
            run_on_agent([h = cq->notify_h, ctx = cq->notify_ctx, nic = cq->owner->api_handle, v = e.vi->api_handle,
                          recv = e.recv] { h(ctx, nic, v, recv ? VIP_TRUE : VIP_FALSE); });
        }
        if (!cq->armed) notify_cqs.erase(notify_cqs.begin() + long(i));
        else ++i;
    }
    cv.notify_all();
}

FakeVi *Switchboard::find_vi(VIP_VI_HANDLE h) {
    if (!h) return nullptr;
    for (Device *d : devices)
        if (d)
            for (FakeVi *vi : d->vis)
                if (vi->api_handle == h) return vi;
    return nullptr;
}

} // namespace vipl::fake
