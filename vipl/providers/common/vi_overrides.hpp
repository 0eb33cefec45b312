// vi_overrides.hpp - the declarations of every vipl::prov::Vi operation a
// provider's VI class overrides (vipl_provider.hpp is the interface), as one
// macro: the providers' VI classes share the list instead of each repeating it,
// and `override` makes the compiler check it against the interface.
#pragma once

#include "vipl_provider.hpp"

// Inside a provider's class derived from vipl::prov::Vi: `VIPL_PROV_VI_OVERRIDES;`
#define VIPL_PROV_VI_OVERRIDES                                                                                         \
    VIP_RETURN post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) override;                                               \
    VIP_RETURN send_done(VIP_DESCRIPTOR **d) override;                                                                 \
    VIP_RETURN post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) override;                                               \
    VIP_RETURN recv_done(VIP_DESCRIPTOR **d) override;                                                                 \
    VIP_RETURN send_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) override;                                           \
    VIP_RETURN recv_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) override;                                           \
    VIP_RETURN send_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) override;                                   \
    VIP_RETURN recv_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) override;                                   \
    VIP_RETURN query(VIP_VI_STATE *state, ::vipl::prov::ViAttr *attr, bool *sendq_empty, bool *recvq_empty) override;  \
    VIP_RETURN set_attributes(const ::vipl::prov::ViAttr &attr) override;                                              \
    VIP_RETURN connect_start(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms,        \
                             const void *data, VIP_ULONG len) override;                                                \
    VIP_RETURN connect_done(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) override;                      \
    VIP_RETURN connect_wait(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) override;                      \
    VIP_RETURN disconnect() override;                                                                                  \
    VIP_RETURN peer_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms)         \
        override;                                                                                                      \
    VIP_RETURN peer_done(VIP_VI_ATTRIBUTES *remote_attr) override;                                                     \
    VIP_RETURN peer_wait(VIP_VI_ATTRIBUTES *remote_attr) override
