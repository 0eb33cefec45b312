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

namespace vipl::common {

inline bool range_covers(uintptr_t base, size_t size, uintptr_t addr, size_t len) {
    return addr >= base && len <= size && addr - base <= size - len;
}

// For a region record R with members `base` and `len`.
template <class R>
inline bool region_covers(const R &r, uintptr_t addr, size_t len) {
    return range_covers(r.base, r.len, addr, len);
}

} // namespace vipl::common
