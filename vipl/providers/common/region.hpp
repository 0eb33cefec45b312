// region.hpp - the registered-range check every provider makes: does
// [addr, addr + len) lie inside a region registered at [base, base + size)?
//
// How a provider uses it: its region record (whatever else it holds: an ibv_mr,
// a protection-table entry) calls range_covers() with its base and size; the
// descriptor checks (descriptor_check.hpp) call it through the region-lookup
// callback's result, which must have members `base` and `len`.
//
// Written so that no sum can overflow: a huge len or an address near the top of
// the address space is rejected instead of wrapping around to "inside".
#pragma once

#include <cstddef>
#include <cstdint>

#include "vipl.h"

namespace vipl::common {

inline bool range_covers(uintptr_t base, size_t size, uintptr_t addr, size_t len) {
    return addr >= base && len <= size && addr - base <= size - len;
}

// For a region record R with members `base` and `len`.
template <class R>
inline bool region_covers(const R &r, uintptr_t addr, size_t len) {
    return range_covers(r.base, r.len, addr, len);
}

// VipSetMemAttributes, one behaviour on every provider (docs/vipl.md, "A
// region's tag and its RDMA rights"): peers name a region by its memory handle,
// and a verbs device ties the key behind that handle to the protection domain
// the region was registered in; no verbs call moves it to another domain under
// the same key.  So a region may move to another tag only with its RDMA rights
// off, and once moved it stays local-only for the rest of its registration
// (re-register it to reach it by RDMA under the new tag).  Refused changes
// return VIP_ERROR_RESOURCE and leave the region as it was.
//   moved:        the region's tag was changed before
//   tag_changes:  this call gives it another tag
//   rdma_after:   this call leaves RDMA write or read enabled
inline VIP_RETURN check_tag_change(bool moved, bool tag_changes, bool rdma_after) {
    return rdma_after && (moved || tag_changes) ? VIP_ERROR_RESOURCE : VIP_SUCCESS;
}

} // namespace vipl::common
