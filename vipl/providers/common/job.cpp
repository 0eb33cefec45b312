// job.cpp - see job.hpp.
#include "job.hpp"

#include "vipl_boot.h"

namespace vipl::common {

bool discover_job(viastack::log::Layer layer, Job *out) {
    // A lookup, not a reference: the provider never calls vipl_boot_finalize,
    // and must not keep the job alive past the program's own finalize.
    if (vipl_boot_lookup() != VIPL_BOOT_OK) {
        viastack::log::error(layer, "job bootstrap failed (see above); start the program with vipl-run");
        return false;
    }
    out->rank = vipl_boot_rank();
    out->size = vipl_boot_size();
    out->id = vipl_boot_job();
    return true;
}

} // namespace vipl::common
