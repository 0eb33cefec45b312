// vipl_provider.hpp - the contract between the VIPL API layer and a provider.
//
// The API layer (vipl/src) owns handles and checks arguments that need no
// provider knowledge (NULL pointers, alignment, stale handles); a provider
// implements the objects below.  Providers register a ProviderInfo at start-up
// (see VIPL_REGISTER_PROVIDER); the core never includes a provider's header.
//
// Every method returns a VIP_RETURN with the spec's meaning.  An operation a
// provider cannot support returns the spec's error for it (documented in the
// provider's docs), never a silent success.
#pragma once

#include <atomic>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "vipl.h"

namespace vipl::prov {

class Nic;
class Vi;
class Cq;
class Ptag;

// Every provider object carries the API handle that names it, so a provider
// can report handles in CQ entries, notify handlers and error callbacks.
struct Object {
    void *api_handle = nullptr;
    virtual ~Object() = default;
    // Another thread is destroying the object (docs/vipl.md, "Threads"): the
    // API layer waits for the calls in progress on it to end before the
    // provider destroys it, and a provider's Wait on it returns at once
    // (VIP_INVALID_STATE) rather than hold the destroy up.
    bool closing() const { return closing_.load(std::memory_order_acquire); }
    std::atomic<bool> closing_{false}; // set and cleared by the API layer only
};

class Ptag : public Object {};

// VI attributes with the protection tag already resolved to the provider's object.
struct ViAttr {
    VIP_RELIABILITY_LEVEL reliability = VIP_SERVICE_UNRELIABLE;
    VIP_ULONG max_transfer = 0;
    VIP_QOS qos = nullptr;
    Ptag *ptag = nullptr;
    bool rdma_write = false;
    bool rdma_read = false;
};

// Memory attributes with the protection tag resolved.
struct MemAttr {
    Ptag *ptag = nullptr;
    bool rdma_write = false;
    bool rdma_read = false;
};

class Cq : public Object {
public:
    // The entry's VI comes back as its API handle, read under the CQ's
    // consumer lock (common::CqFifo::take): another thread may destroy that
    // VI as soon as the entry is taken, so the caller must not touch the VI.
    virtual VIP_RETURN done(VIP_VI_HANDLE *vi, bool *recv_queue) = 0;
    virtual VIP_RETURN wait(VIP_ULONG timeout_ms, VIP_VI_HANDLE *vi, bool *recv_queue) = 0;
    virtual VIP_RETURN resize(VIP_ULONG entries) = 0;
    virtual VIP_RETURN notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) = 0;
};

class Vi : public Object {
public:
    // data path (hot): descriptors are VIP_DESCRIPTOR_ALIGNMENT-aligned, non-NULL
    virtual VIP_RETURN post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) = 0;
    virtual VIP_RETURN send_done(VIP_DESCRIPTOR **d) = 0;
    virtual VIP_RETURN post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) = 0;
    virtual VIP_RETURN recv_done(VIP_DESCRIPTOR **d) = 0;
    virtual VIP_RETURN send_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) = 0;
    virtual VIP_RETURN recv_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) = 0;
    virtual VIP_RETURN send_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) = 0;
    virtual VIP_RETURN recv_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) = 0;

    // API-layer bookkeeping (vipl/src/api_data.cpp), not for providers: the
    // user's one-shot notify handler of each queue (0 send, 1 receive), called
    // through a wrapper that marks the descriptor as handed back.
    struct UserNotify {
        VIP_PVOID ctx = nullptr;
        VIP_DESCRIPTOR_NOTIFY_HANDLER h = nullptr;
    } api_notify[2];

    virtual VIP_RETURN query(VIP_VI_STATE *state, ViAttr *attr, bool *sendq_empty, bool *recvq_empty) = 0;
    virtual VIP_RETURN set_attributes(const ViAttr &attr) = 0;

    // connection management.  The client side does not block: connect_start
    // sends the request with `len` (<= VIPX_CM_DATA_MAX, checked by the API
    // layer) bytes of private data; connect_done reports progress and the
    // result (VIP_NOT_DONE while pending; the answer's private data copied to
    // data, at most *len bytes, *len set to the length it carried; either may
    // be NULL), handing a result back once (then VIP_INVALID_STATE);
    // connect_wait is connect_done waiting until it is not VIP_NOT_DONE (the
    // request's own timeout ends it).  VipConnectRequest is start + wait.
    virtual VIP_RETURN connect_start(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms,
                                     const void *data, VIP_ULONG len) = 0;
    virtual VIP_RETURN connect_done(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) = 0;
    virtual VIP_RETURN connect_wait(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) = 0;
    virtual VIP_RETURN disconnect() = 0;
    virtual VIP_RETURN peer_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                                    VIP_ULONG timeout_ms) = 0;
    virtual VIP_RETURN peer_done(VIP_VI_ATTRIBUTES *remote_attr) = 0;
    virtual VIP_RETURN peer_wait(VIP_VI_ATTRIBUTES *remote_attr) = 0;
};

// A pending incoming connection request returned by Nic::connect_wait, with
// the private data it carried.  accept and reject send `len` (<=
// VIPX_CM_DATA_MAX, checked by the API layer) bytes of private data back.
class Conn : public Object {
public:
    virtual VIP_RETURN accept(Vi *vi, const void *data, VIP_ULONG len) = 0;
    virtual VIP_RETURN reject(const void *data, VIP_ULONG len) = 0;

    unsigned char data[VIPX_CM_DATA_MAX] = {}; // the request's private data
    VIP_ULONG data_len = 0;
};

// Copies private data that arrived (n bytes) to the caller's buffer (at most
// *len bytes) and sets *len to n; data and len may be NULL.
inline void copy_cm_data(const void *src, VIP_ULONG n, void *data, VIP_ULONG *len) {
    if (len) {
        if (data && n) std::memcpy(data, src, n < *len ? n : *len);
        *len = n;
    }
}

class Nic : public Object {
public:
    virtual VIP_RETURN query(VIP_NIC_ATTRIBUTES *attr) = 0;

    virtual VIP_RETURN create_ptag(Ptag **out) = 0;
    virtual VIP_RETURN destroy_ptag(Ptag *p) = 0; // VIP_INVALID_STATE while in use

    virtual VIP_RETURN register_mem(void *addr, VIP_ULONG len, const MemAttr &a, VIP_MEM_HANDLE *out) = 0;
    virtual VIP_RETURN deregister_mem(void *addr, VIP_MEM_HANDLE mh) = 0;
    virtual VIP_RETURN query_mem(void *addr, VIP_MEM_HANDLE mh, MemAttr *out) = 0;
    virtual VIP_RETURN set_mem_attributes(void *addr, VIP_MEM_HANDLE mh, const MemAttr &a) = 0;

    virtual VIP_RETURN create_vi(const ViAttr &a, Cq *send_cq, Cq *recv_cq, Vi **out) = 0;
    virtual VIP_RETURN destroy_vi(Vi *vi) = 0; // VIP_INVALID_STATE unless idle/error and queues empty
    virtual VIP_RETURN create_cq(VIP_ULONG entries, Cq **out) = 0;
    virtual VIP_RETURN destroy_cq(Cq *cq) = 0; // VIP_INVALID_STATE while VIs are bound

    virtual VIP_RETURN connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                                    VIP_VI_ATTRIBUTES *remote_attr, Conn **out) = 0;

    virtual VIP_RETURN error_callback(VIP_PVOID ctx, VIP_ERROR_HANDLER h) = 0;

    // Name service.  The API layer maps names to ranks of the job and back
    // (vipl/src/names.hpp: the same rules on every provider); a provider maps a
    // rank to its host address and back, and may know names outside the job.
    virtual VIP_RETURN ns_init(VIP_PVOID info) = 0;
    virtual VIP_RETURN ns_shutdown() = 0;
    virtual int job_size() const = 0; // ranks in the job (1 outside one)
    // The host address of `rank`'s NIC (DiscriminatorLen 0); VIP_ERROR_NAMESERVICE if unknown.
    virtual VIP_RETURN rank_address(int rank, VIP_NET_ADDRESS *out) = 0;
    // The rank whose NIC has this host address, or -1.
    virtual int address_rank(const VIP_NET_ADDRESS *addr) = 0;
    // Names the job does not know ("host:port" on verbs); VIP_ERROR_NAMESERVICE if none.
    virtual VIP_RETURN ns_other_name(const char *, VIP_NET_ADDRESS *, VIP_ULONG) { return VIP_ERROR_NAMESERVICE; }
    // A name for an address outside the job; false if none.
    virtual bool ns_other_addr(const VIP_NET_ADDRESS *, std::string *) { return false; }
    virtual VIP_RETURN query_system_management(VIP_ULONG info_type, VIP_PVOID out) = 0;

    // Memory for data buffers (VipxAllocMem/VipxAllocMemAt/VipxFreeMem),
    // page aligned and zeroed, anywhere (at == nullptr) or exactly at `at`
    // (never replacing a mapping: VIP_ERROR_RESOURCE).  The default is private
    // memory (verbs, fake); nicfw overrides it with shared memory its peers
    // map for the single-copy bulk path.
    virtual VIP_RETURN alloc_mem(VIP_ULONG len, void *at, void **out);
    virtual VIP_RETURN free_mem(void *p); // VIP_INVALID_PARAMETER if not from alloc_mem

    virtual int rank() const = 0; // this NIC's address as an integer, or -1
    // Whether registering memory pins the pages mapped at the time (a real
    // NIC's registration) rather than naming an address range that cannot go
    // stale (VipxRegistrationPins).
    virtual bool registration_pins() const = 0;
    virtual void progress() = 0; // one non-blocking step (VipxProgress)
};

// How a provider makes itself known.
struct ProviderInfo {
    const char *name; // "nicfw", "verbs"
    // Does this provider own the device name?  ("nicfw0" -> nicfw, "rxe0" -> verbs)
    bool (*matches)(const char *device);
    // Open the named device (never NULL/empty here: the API layer resolves the default).
    VIP_RETURN (*open)(const char *device, Nic **out);
    // Name of the default device of this provider ("nicfw0").
    const char *default_device;
};

void register_provider(const ProviderInfo *p);

} // namespace vipl::prov

// Registers a provider at program start (the provider library is linked whole).
#define VIPL_REGISTER_PROVIDER(info)                                                                                   \
    namespace {                                                                                                        \
    struct ViplProviderRegistrar_ {                                                                                    \
        ViplProviderRegistrar_() { ::vipl::prov::register_provider(&(info)); }                                         \
    } vipl_provider_registrar_;                                                                                        \
    }
