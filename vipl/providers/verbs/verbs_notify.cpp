// verbs_notify.cpp - VipSendNotify/VipRecvNotify/VipCQNotify: one provider thread
// per NIC (started on first use) sleeps in epoll on the completion channels of
// the queues and CQs that have a handler armed, and runs each handler once with
// the next completion.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <functional>

#include "verbs_provider.hpp"

namespace vipl::verbs {

struct Notifier {
    explicit Notifier(VerbsNic &n) : nic(n) {
        epfd = epoll_create1(EPOLL_CLOEXEC);
        wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = wake;
        epoll_ctl(epfd, EPOLL_CTL_ADD, wake, &ev);
        th = std::thread([this] { run(); });
    }
    ~Notifier() {
        stop = true;
        kick();
        th.join();
        close(wake);
        close(epfd);
    }
    void kick() {
        uint64_t one = 1;
        (void)!write(wake, &one, sizeof one);
    }

    // Arms the CQ and watches its channel; the caller re-checks for completions
    // afterwards, so none can slip between the check and the arming.
    void watch(ibv_cq *cq, ibv_comp_channel *ch) {
        ibv_req_notify_cq(cq, 0);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = ch->fd;
        epoll_ctl(epfd, EPOLL_CTL_ADD, ch->fd, &ev); // EEXIST is fine
    }

    // One pass over the armed handlers; returns the calls to make (without the lock).
    std::vector<std::function<void()>> scan() {
        std::vector<std::function<void()>> calls;
        std::lock_guard<std::mutex> g(nic.ctl_mu);
        void *nic_h = nic.api_handle;
        for (VerbsVi *vi : nic.vis) {
            for (WorkQueue *q : {&vi->sq, &vi->rq}) {
                if (!q->notify_fn) continue;
                VIP_DESCRIPTOR *d = nullptr;
                if (q->done(&d) != VIP_SUCCESS) {
                    watch(q->bound ? q->bound->cq : q->cq, q->bound ? q->bound->channel : q->channel);
                    if (q->done(&d) != VIP_SUCCESS) continue;
                }
                auto fn = q->notify_fn;
                void *ctx = q->notify_ctx, *vi_h = vi->api_handle;
                q->notify_fn = nullptr;
                calls.push_back([=] { fn(ctx, nic_h, vi_h, d); });
            }
        }
        for (VerbsCq *cq : nic.cqs) {
            if (!cq->notify_fn) continue;
            VIP_VI_HANDLE vi_h = nullptr;
            bool recv = false;
            if (cq->done(&vi_h, &recv) != VIP_SUCCESS) {
                watch(cq->cq, cq->channel);
                if (cq->done(&vi_h, &recv) != VIP_SUCCESS) continue;
            }
            auto fn = cq->notify_fn;
            void *ctx = cq->notify_ctx;
            cq->notify_fn = nullptr;
            calls.push_back([=] { fn(ctx, nic_h, vi_h, recv ? VIP_TRUE : VIP_FALSE); });
        }
        return calls;
    }

    // Consumes the completion event behind a readable channel fd.
    void consume(int fd) {
        std::lock_guard<std::mutex> g(nic.ctl_mu);
        auto take = [&](ibv_comp_channel *ch) {
            ibv_cq *cq = nullptr;
            void *c = nullptr;
            if (ch && ch->fd == fd && ibv_get_cq_event(ch, &cq, &c) == 0) ibv_ack_cq_events(cq, 1);
        };
        for (VerbsVi *vi : nic.vis) {
            take(vi->sq.channel);
            take(vi->rq.channel);
        }
        for (VerbsCq *cq : nic.cqs) take(cq->channel);
    }

    void run() {
        std::vector<std::pair<VerbsNic *, VIP_ERROR_DESCRIPTOR>> errors;
        deferred_errors = &errors;
        while (!stop) {
            auto calls = scan();
            for (auto &e : errors) // held back while scan() held the lock
                e.first->deliver_error(e.second);
            errors.clear();
            for (auto &c : calls) c();
            if (!calls.empty()) continue;
            epoll_event evs[16];
            int n = epoll_wait(epfd, evs, 16, 100);
            for (int i = 0; i < n; i++) {
                if (evs[i].data.fd == wake) {
                    uint64_t v;
                    (void)!read(wake, &v, sizeof v);
                } else {
                    consume(evs[i].data.fd);
                }
            }
        }
    }

    VerbsNic &nic;
    int epfd = -1, wake = -1;
    std::atomic<bool> stop{false};
    std::thread th;
};

void VerbsNic::notify_armed() {
    std::lock_guard<std::mutex> g(err_mu_);
    if (!notifier_) notifier_.reset(new Notifier(*this));
    else notifier_->kick();
}

void VerbsNic::NotifierDeleter::operator()(Notifier *n) const { delete n; }

} // namespace vipl::verbs
