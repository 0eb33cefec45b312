// boot_backend.hpp - the ways a job can bootstrap: alone (job of one), over the
// launcher's shared-memory segment, over TCP across hosts, or through PMIx.  boot_api.cpp picks one in
// vipl_boot_init and forwards the C calls to it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "viastack_log.hpp"

namespace viastack::boot {

class Backend {
public:
    virtual ~Backend() = default;
    virtual int barrier() = 0;
    virtual int allgather(const void *mine, size_t len, void *out) = 0;
    virtual int bcast(void *buf, size_t len, int root) = 0;
    // Leaves the job after a final barrier; returns that barrier's result.
    virtual int finalize() = 0;
    // Tells the peers (and the launcher) that the job is over; does not exit.
    virtual void abort_job(int code, const char *why) = 0;
};

struct JobInfo {
    int rank = 0;
    int size = 1;
    std::string job;
    double timeout_s = 300.0; // VIASTACK_BOOT_TIMEOUT
    std::string boot;         // VIASTACK_BOOT ("tcp:<host>:<port>"), "" = shared memory
};

// Each returns nullptr and prints why on failure; *rc gets the VIPL_BOOT_ERR_*.
std::unique_ptr<Backend> make_single_backend();
std::unique_ptr<Backend> make_shm_backend(const JobInfo &info, int *rc);
// Rank 0 listens on info.boot's host:port, the others connect (tcp_backend.cpp).
std::unique_ptr<Backend> make_tcp_backend(const JobInfo &info, int *rc);
#if VIASTACK_HAVE_PMIX
// Fills info->rank/size/job from PMIx.
std::unique_ptr<Backend> make_pmix_backend(JobInfo *info, int *rc);
#endif

// "vipl_boot[rank 3]: <msg>" on stderr through the boot logger (vipl/log:
// $VIASTACK_LOG, one write per line so lines do not interleave).
void report(int rank, const std::string &msg, log::Level level = log::Level::error);

} // namespace viastack::boot
