// nic_attributes.hpp - filling VIP_NIC_ATTRIBUTES (VipQueryNic) for a
// provider whose limits are fixed table sizes (nicfw, the fake provider):
// what differs between them is in NicLimits, what the VI Architecture fixes
// for every such NIC (a 2-byte rank address, all three reliability levels,
// RDMA read at the reliable levels) is written once here.
#pragma once

#include <cstdio>
#include <cstring>

#include "vipl.h"

namespace vipl::common {

struct NicLimits {
    const char *name;
    VIP_ULONG hardware_version;
    VIP_UINT8 *address; // the NIC's 2-byte host address (lives as long as the NIC)
    bool thread_safe;
    VIP_ULONG max_regions, max_vi, max_queue, max_segments, max_cq, max_cq_entries, max_transfer, max_ptags;
};

inline void fill_nic_attributes(VIP_NIC_ATTRIBUTES *a, const NicLimits &l) {
    std::memset(a, 0, sizeof *a);
    std::snprintf(a->Name, sizeof a->Name, "%s", l.name);
    a->HardwareVersion = l.hardware_version;
    a->ProviderVersion = 0x00010000;
    a->NicAddressLen = 2;
    a->LocalNicAddress = l.address;
    a->ThreadSafe = l.thread_safe ? VIP_TRUE : VIP_FALSE;
    a->MaxDiscriminatorLen = VIP_MAX_DISCRIMINATOR_LEN;
    a->MaxRegisterBytes = ~0ul >> 1;
    a->MaxRegisterRegions = l.max_regions;
    a->MaxRegisterBlockBytes = ~0ul >> 1;
    a->MaxVI = l.max_vi;
    a->MaxDescriptorsPerQueue = l.max_queue;
    a->MaxSegmentsPerDesc = l.max_segments + 1; // the address segment counts
    a->MaxCQ = l.max_cq;
    a->MaxCQEntries = l.max_cq_entries;
    a->MaxTransferSize = l.max_transfer;
    a->NativeMTU = l.max_transfer;
    a->MaxPtags = l.max_ptags;
    a->ReliabilityLevelSupport =
        VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
    a->RDMAReadSupport = VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
}

} // namespace vipl::common
