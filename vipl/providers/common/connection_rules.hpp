// connection_rules.hpp - the choices every provider makes the same way where the
// VI Architecture Specification 1.0 leaves room in connection management and
// memory (docs/vipl.md, "One behaviour on every provider", gives each with the
// reason), written once so that a program sees one VI whichever provider runs it.
#pragma once

#include <cstdint>
#include <vector>

#include "descriptor_check.hpp"
#include "vipl.h"
#include "vipl_provider.hpp"

namespace vipl::common {

// The discriminator bytes of a VIP_NET_ADDRESS (they follow the host
// address); none for a null address (a request that names no local end).
inline std::vector<uint8_t> disc_of(const VIP_NET_ADDRESS *a) {
    if (!a) return {};
    return std::vector<uint8_t>(a->HostAddress + a->HostAddressLen,
                                a->HostAddress + a->HostAddressLen + a->DiscriminatorLen);
}

// VipConnectAccept (and a peer request's match): the accepting VI must have the
// requester's reliability level.  A mismatch is VIP_INVALID_RELIABILITY_LEVEL
// and changes nothing: the VI stays Idle and the request stays pending, to be
// accepted with another VI or rejected (the requester is told nothing until
// then).  The other attributes are the VI's own: RDMA enables and
// MaxTransferSize may differ between the ends (each end checks what it posts).
inline VIP_RETURN check_accept(const prov::ViAttr &local, const VIP_VI_ATTRIBUTES &remote) {
    return local.reliability == remote.ReliabilityLevel ? VIP_SUCCESS : VIP_INVALID_RELIABILITY_LEVEL;
}

// A receive that failed when a message arrived: if one of its data segments no
// longer lies in a registered region of the VI's tag (VipDeregisterMem while it
// was posted, which succeeds), the failure is the spec's protection error,
// whatever the device called it.  `lookup` is the provider's region lookup (as for
// check_recv).  PROTECTION_ERROR or 0.
template <class Lookup>
inline uint32_t receive_memory_gone(const VIP_DESCRIPTOR *d, Lookup &&lookup) {
    uint64_t sum = 0;
    return check_data_segments(&d->DS[0], d->CS.SegCount, lookup, NoSegmentSink{}, &sum);
}

} // namespace vipl::common
