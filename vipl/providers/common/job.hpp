// job.hpp - which job a provider's NIC belongs to, and its rank in it, learnt
// the same way by every provider: through the job bootstrap (vipl_boot.h), so
// vipl-run's shared memory, the TCP bootstrap across hosts and PMIx launchers
// all work, and a malformed VIASTACK_* variable is reported once, by vipl_boot.
//
// How a provider uses it, when its NIC is opened:
//
//   common::Job job;
//   if (!common::discover_job(viastack::log::Layer::verbs, &job)) return VIP_ERROR_RESOURCE;
//   // job.rank (0 outside a launcher), job.size (1), job.id ("" outside a launcher)
//
// A process started without a launcher is a job of one: rank 0, size 1, no id.
#pragma once

#include <string>

#include "viastack_log.hpp"

namespace vipl::common {

struct Job {
    int rank = 0;
    int size = 1;
    std::string id; // VIASTACK_JOB; "" for a job of one started without a launcher
};

// Initialises the bootstrap (idempotent) and reads the job.  False, after
// logging on `layer` why, if the bootstrap failed.
bool discover_job(viastack::log::Layer layer, Job *out);

} // namespace vipl::common
