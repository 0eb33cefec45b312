// descriptor_check.hpp - the VI Architecture's rules for a posted descriptor,
// written once for every provider: which status bits a malformed descriptor
// completes with (VIPL spec, "Descriptor Processing Model"; what the
// provider-neutral tests expect is in docs/vipl-tests.md).
//
// How a provider uses it (all inline: this is the post path):
//
//   common::DescriptorRules rules{...};          // from the VI's attributes and the NIC's limits
//   auto lookup = [&](VIP_MEM_HANDLE h) -> const MyRegion * {
//       const MyRegion *r = my_table.find(h);    // the provider's own table
//       return r && r->ptag == vi_ptag ? r : nullptr;  // only regions of the VI's protection tag
//   };
//   uint64_t total;
//   uint32_t err = common::check_send(d, mh, rules, lookup, on_segment, &total);
//   if (err) complete with common::op_status(d->CS.Control) | err (VIP_STATUS_DONE added by the ring);
//
// The region-lookup callback returns a pointer to a record with members `base`
// and `len` (region.hpp), or nullptr when the handle names no live region of
// the VI's protection tag.  The optional segment sink is called once per
// non-empty data segment that passed, with its region: the verbs provider
// builds its scatter/gather list there (lkey from the region), nicfw needs
// nothing.  A provider whose firmware copies the descriptor before checking it
// (nicfw's SRAM descriptor cache) calls the phases itself:
// check_send_control() on its copy of the control segment, then
// check_data_segments() on its copy of the segments.
//
// The functions return the error bits only (0 = valid); the caller ORs in the
// operation bits (op_status) and VIP_STATUS_DONE when it completes the
// descriptor.  Checks run in this order, and the first failure decides:
//   send:    control segment registered             PROTECTION
//            reserved opcode or control bits,
//            SegCount out of range, RDMA read with
//            immediate data or on an unreliable VI   FORMAT
//            whole descriptor registered             PROTECTION
//            every data segment registered           PROTECTION
//            sum of segment lengths != Length        FORMAT
//            Length over the transfer limit          LENGTH
//   receive: control segment registered              PROTECTION
//            reserved control bits, SegCount         FORMAT
//            whole descriptor registered             PROTECTION
//            every data segment registered           PROTECTION
//   (A message longer than the receive's capacity is LENGTH at arrival:
//   receive_fits().)
#pragma once

#include <cstddef>
#include <cstdint>

#include "region.hpp"
#include "vipl.h"

namespace vipl::common {

// The operation bits of a send-queue descriptor's status, from its control field.
inline uint32_t op_status(uint16_t control) {
    switch (control & VIP_CONTROL_OP_MASK) {
    case VIP_CONTROL_OP_RDMAWRITE: return VIP_STATUS_OP_RDMA_WRITE;
    case VIP_CONTROL_OP_RDMAREAD: return VIP_STATUS_OP_RDMA_READ;
    default: return VIP_STATUS_OP_SEND;
    }
}

// What a descriptor posted on one VI may be.
struct DescriptorRules {
    // Largest SegCount, the address segment of an RDMA descriptor included
    // (the NIC's MaxSegmentsPerDesc).
    uint32_t max_seg_count = 0;
    // Largest number of data segments (a device's scatter/gather limit).
    uint32_t max_data_segments = 0;
    // Largest Length: the smaller of the VI's MaxTransferSize and the NIC's.
    uint64_t max_transfer = 0;
    // The VI is reliable (delivery or reception): RDMA read is allowed.
    bool reliable = false;
};

// Does the caller's segment sink want the segments?  The default takes none.
struct NoSegmentSink {
    template <class R>
    void operator()(const R &, const VIP_DATA_SEGMENT &) const {}
};

// Bytes of a descriptor with n segments after its control segment.
inline size_t descriptor_bytes(uint32_t seg_count) {
    return sizeof(VIP_CONTROL_SEGMENT) + sizeof(VIP_DESCRIPTOR_SEGMENT) * size_t(seg_count);
}

// Index of the first data segment: RDMA descriptors start with the address segment.
inline uint32_t first_data_segment(uint16_t control) {
    return (control & VIP_CONTROL_OP_MASK) == VIP_CONTROL_OP_SENDRECV ? 0 : 1;
}

// The control segment of a send-queue descriptor: FORMAT_ERROR or 0.
inline uint32_t check_send_control(const VIP_CONTROL_SEGMENT &cs, const DescriptorRules &rules) {
    const uint16_t op = cs.Control & VIP_CONTROL_OP_MASK;
    if (op == VIP_CONTROL_OP_RESERVED || (cs.Control & VIP_CONTROL_RESERVED)) return VIP_STATUS_FORMAT_ERROR;
    const uint32_t first = first_data_segment(cs.Control);
    if (cs.SegCount < first || cs.SegCount > rules.max_seg_count ||
        uint32_t(cs.SegCount) - first > rules.max_data_segments)
        return VIP_STATUS_FORMAT_ERROR;
    if (op == VIP_CONTROL_OP_RDMAREAD && ((cs.Control & VIP_CONTROL_IMMEDIATE) || !rules.reliable))
        return VIP_STATUS_FORMAT_ERROR;
    return 0;
}

// The control segment of a receive-queue descriptor: FORMAT_ERROR or 0.
inline uint32_t check_recv_control(const VIP_CONTROL_SEGMENT &cs, const DescriptorRules &rules) {
    if ((cs.Control & VIP_CONTROL_RESERVED) || cs.SegCount > rules.max_seg_count ||
        cs.SegCount > rules.max_data_segments)
        return VIP_STATUS_FORMAT_ERROR;
    return 0;
}

// n data segments (ds[i].Local): each non-empty one must lie in a region the
// lookup finds.  PROTECTION_ERROR or 0; *total is the sum of the lengths.
template <class Lookup, class Sink>
inline uint32_t check_data_segments(const VIP_DESCRIPTOR_SEGMENT *ds, uint32_t n, Lookup &&lookup, Sink &&sink,
                                    uint64_t *total) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        const VIP_DATA_SEGMENT &s = ds[i].Local;
        if (s.Length == 0) continue;
        const auto *r = lookup(s.Handle);
        if (r == nullptr || !region_covers(*r, uintptr_t(s.Data.AddressBits), s.Length))
            return VIP_STATUS_PROTECTION_ERROR;
        sink(*r, s);
        sum += s.Length;
    }
    *total = sum;
    return 0;
}

// The descriptor itself (its first `bytes`) lies in the region mh names.
template <class Lookup>
inline bool descriptor_registered(const VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, size_t bytes, Lookup &&lookup) {
    const auto *r = lookup(mh);
    return r != nullptr && region_covers(*r, uintptr_t(d), bytes);
}

// The descriptor itself, the same on both queues: its control segment lies in
// the region mh names (only then may it be read), the control field passes the
// queue's rules (`control`: check_send_control or check_recv_control), and the
// whole descriptor lies in the region.  Error bits or 0.
template <class Lookup, class ControlCheck>
inline uint32_t check_descriptor(const VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, Lookup &&lookup, ControlCheck &&control) {
    if (!descriptor_registered(d, mh, sizeof(VIP_CONTROL_SEGMENT), lookup)) return VIP_STATUS_PROTECTION_ERROR;
    if (uint32_t e = control(d->CS)) return e;
    if (!descriptor_registered(d, mh, descriptor_bytes(d->CS.SegCount), lookup)) return VIP_STATUS_PROTECTION_ERROR;
    return 0;
}

// A descriptor posted on a send queue (VipPostSend).  Error bits or 0; on 0,
// *total is its Length.
template <class Lookup, class Sink = NoSegmentSink>
inline uint32_t check_send(const VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, const DescriptorRules &rules, Lookup &&lookup,
                           Sink &&sink = {}, uint64_t *total = nullptr) {
    if (uint32_t e = check_descriptor(d, mh, lookup,
                                      [&](const VIP_CONTROL_SEGMENT &cs) { return check_send_control(cs, rules); }))
        return e;
    const uint32_t first = first_data_segment(d->CS.Control);
    uint64_t sum = 0;
    if (uint32_t e = check_data_segments(&d->DS[first], d->CS.SegCount - first, lookup, sink, &sum)) return e;
    if (sum != d->CS.Length) return VIP_STATUS_FORMAT_ERROR;
    if (sum > rules.max_transfer) return VIP_STATUS_LENGTH_ERROR;
    if (total) *total = sum;
    return 0;
}

// A descriptor posted on a receive queue (VipPostRecv).  Error bits or 0; on
// 0, *capacity is the bytes its segments can hold.
template <class Lookup, class Sink = NoSegmentSink>
inline uint32_t check_recv(const VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, const DescriptorRules &rules, Lookup &&lookup,
                           Sink &&sink = {}, uint64_t *capacity = nullptr) {
    if (uint32_t e = check_descriptor(d, mh, lookup,
                                      [&](const VIP_CONTROL_SEGMENT &cs) { return check_recv_control(cs, rules); }))
        return e;
    uint64_t sum = 0;
    if (uint32_t e = check_data_segments(&d->DS[0], d->CS.SegCount, lookup, sink, &sum)) return e;
    if (capacity) *capacity = sum;
    return 0;
}

// An arriving message of `length` bytes for a receive that holds `capacity`:
// LENGTH_ERROR or 0.
inline uint32_t receive_fits(uint64_t length, uint64_t capacity) {
    return length > capacity ? VIP_STATUS_LENGTH_ERROR : 0;
}

} // namespace vipl::common
