// async_error.hpp - the VI Architecture's asynchronous errors (VipErrorCallback)
// as every provider reports them: the VIP_ERROR_DESCRIPTOR a provider fills in
// for a broken descriptor, VI, CQ or NIC, and what happens to it at delivery —
// the program's handler gets its own copy, or, with no handler registered, the
// error is logged (the spec leaves the default handler to the provider; a lost
// connection is left to the calls that see it, since a peer that exits
// normally breaks every VI connected to it).
//
// Each provider keeps what is specific to it: where the error is queued and on
// which thread the handler runs (nicfw's ErrorQueue, the fake provider's agent,
// verbs' notify thread).
#pragma once

#include "vipl.h"
#include "viastack_log.hpp"

namespace vipl::common {

// "CONN_LOST" for VIP_ERROR_CONN_LOST, as the spec's names go; "?" for a code
// outside the spec.
inline const char *error_code_name(VIP_ERROR_CODE c) {
    static const char *const names[] = {"POST_DESC",  "CONN_LOST",      "RECVQ_EMPTY", "VI_OVERRUN",
                                        "RDMAW_PROT", "RDMAW_DATA",     "RDMAW_ABORT", "RDMAR_PROT",
                                        "COMP_PROT",  "RDMA_TRANSPORT", "CATASTROPHIC"};
    static_assert(sizeof names / sizeof names[0] == VIP_ERROR_CATASTROPHIC + 1);
    return (c >= 0 && c <= VIP_ERROR_CATASTROPHIC) ? names[c] : "?";
}

// The error descriptor for an error on descriptor d (may be null) of a VI or
// CQ (either may be null).  The opcode is the descriptor's operation; the
// NIC handle is the one the erring object was made through.
inline VIP_ERROR_DESCRIPTOR make_error_descriptor(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, VIP_CQ_HANDLE cq,
                                                  const VIP_DESCRIPTOR *d, VIP_RESOURCE_CODE rc, VIP_ERROR_CODE ec) {
    VIP_ERROR_DESCRIPTOR e{};
    e.NicHandle = nic;
    e.ViHandle = vi;
    e.CQHandle = cq;
    e.DescriptorPtr = const_cast<VIP_DESCRIPTOR *>(d);
    e.OpCode = d ? (d->CS.Control & VIP_CONTROL_OP_MASK) : 0;
    e.ResourceCode = rc;
    e.ErrorCode = ec;
    return e;
}

// Hands the program's handler its own copy of e (a handler may write to it),
// or logs e when no handler is registered.  `who` names the provider in the
// log line ("" for nicfw, whose layer tag already says it).
inline void deliver_error(VIP_ERROR_HANDLER handler, VIP_PVOID ctx, const VIP_ERROR_DESCRIPTOR &e,
                          viastack::log::Layer layer, const char *who) {
    if (handler) {
        VIP_ERROR_DESCRIPTOR copy = e;
        handler(ctx, &copy);
        return;
    }
    if (e.ErrorCode != VIP_ERROR_CONN_LOST)
        viastack::log::error(layer, "{}asynchronous error VIP_ERROR_{} on {} (register VipErrorCallback to handle it)",
                             who, error_code_name(e.ErrorCode),
                             e.ViHandle       ? "a VI"
                                 : e.CQHandle ? "a CQ"
                                              : "the NIC");
}

} // namespace vipl::common
