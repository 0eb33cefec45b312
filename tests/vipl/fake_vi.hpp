// fake_vi.hpp - a provider VI that does nothing, for tests of the API layer's
// handle table (its `id` tells the objects apart, `alive` says it was not yet
// destroyed).
#pragma once

#include <atomic>

#include "vipl_provider.hpp"

namespace vipl::test {

struct FakeVi final : vipl::prov::Vi {
    explicit FakeVi(int id) : id(id) {}
    VIP_RETURN post_send(VIP_DESCRIPTOR *, VIP_MEM_HANDLE) override { return VIP_SUCCESS; }
    VIP_RETURN send_done(VIP_DESCRIPTOR **) override { return VIP_NOT_DONE; }
    VIP_RETURN post_recv(VIP_DESCRIPTOR *, VIP_MEM_HANDLE) override { return VIP_SUCCESS; }
    VIP_RETURN recv_done(VIP_DESCRIPTOR **) override { return VIP_NOT_DONE; }
    VIP_RETURN send_wait(VIP_ULONG, VIP_DESCRIPTOR **) override { return VIP_TIMEOUT; }
    VIP_RETURN recv_wait(VIP_ULONG, VIP_DESCRIPTOR **) override { return VIP_TIMEOUT; }
    VIP_RETURN send_notify(VIP_PVOID, VIP_DESCRIPTOR_NOTIFY_HANDLER) override { return VIP_SUCCESS; }
    VIP_RETURN recv_notify(VIP_PVOID, VIP_DESCRIPTOR_NOTIFY_HANDLER) override { return VIP_SUCCESS; }
    VIP_RETURN query(VIP_VI_STATE *, vipl::prov::ViAttr *, bool *, bool *) override { return VIP_SUCCESS; }
    VIP_RETURN set_attributes(const vipl::prov::ViAttr &) override { return VIP_SUCCESS; }
    VIP_RETURN connect_start(const VIP_NET_ADDRESS *, const VIP_NET_ADDRESS *, VIP_ULONG, const void *,
                             VIP_ULONG) override {
        return VIP_SUCCESS;
    }
    VIP_RETURN connect_done(VIP_VI_ATTRIBUTES *, void *, VIP_ULONG *) override { return VIP_SUCCESS; }
    VIP_RETURN connect_wait(VIP_VI_ATTRIBUTES *, void *, VIP_ULONG *) override { return VIP_SUCCESS; }
    VIP_RETURN disconnect() override { return VIP_SUCCESS; }
    VIP_RETURN peer_request(const VIP_NET_ADDRESS *, const VIP_NET_ADDRESS *, VIP_ULONG) override {
        return VIP_SUCCESS;
    }
    VIP_RETURN peer_done(VIP_VI_ATTRIBUTES *) override { return VIP_SUCCESS; }
    VIP_RETURN peer_wait(VIP_VI_ATTRIBUTES *) override { return VIP_SUCCESS; }
    int id;
    std::atomic<bool> alive{true};
};

} // namespace vipl::test
