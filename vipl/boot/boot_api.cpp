// boot_api.cpp - the vipl_boot_* C API: reads the job's environment once,
// picks a backend (job of one, vipl-run's shared memory, TCP across hosts, or
// PMIx) and forwards.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "boot_backend.hpp"
#include "boot_segment.hpp"
#include "tcp_wire.hpp"
#include "vipl_boot.h"
#include "viastack_log.hpp"

namespace viastack::boot {

void report(int rank, const std::string &msg, log::Level level) {
    // The boot logger's lines name their rank themselves; one write(2) per line.
    log::log(log::Layer::boot, level, "vipl_boot[rank {}]: {}", rank, msg);
}

namespace {

class SingleBackend final : public Backend {
public:
    int barrier() override { return VIPL_BOOT_OK; }
    int allgather(const void *mine, size_t len, void *out) override {
        if (len > VIPL_BOOT_MAX_ITEM || (len && (!mine || !out))) {
            report(0,
                   "vipl_boot_allgather: len " + std::to_string(len) +
                       (len > VIPL_BOOT_MAX_ITEM ? " exceeds VIPL_BOOT_MAX_ITEM" : " with a NULL buffer"));
            return VIPL_BOOT_ERR_ARG;
        }
        if (len && out != mine) std::memmove(out, mine, len);
        return VIPL_BOOT_OK;
    }
    int bcast(void *buf, size_t len, int root) override {
        if (root != 0 || (len && !buf)) {
            report(0,
                   root != 0 ? "vipl_boot_bcast: root " + std::to_string(root) + " out of range 0..0 (job of one)"
                             : std::string("vipl_boot_bcast: NULL buffer"));
            return VIPL_BOOT_ERR_ARG;
        }
        return VIPL_BOOT_OK;
    }
    int finalize() override { return VIPL_BOOT_OK; }
    void abort_job(int, const char *) override {}
};

// Parses a whole decimal integer in [lo, hi]; false on any junk.
bool parse_int(const char *s, long lo, long hi, long *out) {
    if (!s || !*s) return false;
    errno = 0;
    char *end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

struct State {
    // rank/size/job are read without the lock (other layers may ask often):
    // published once, by init, through `ready`.
    std::atomic<bool> ready{false};
    std::mutex mu;
    bool init_done = false;
    int init_rc = VIPL_BOOT_ERR_NOT_INIT;
    bool finalized = false;
    int finalize_rc = VIPL_BOOT_OK;
    // Successful vipl_boot_init calls not yet matched by vipl_boot_finalize:
    // the job is left when the last user finalizes (vipl_boot.h).
    int users = 0;
    JobInfo info;
    std::unique_ptr<Backend> backend;
};

State &state() {
    static State *s = new State; // never destroyed: usable from atexit handlers
    return *s;
}

int read_env(JobInfo *info) {
    if (const char *t = std::getenv("VIASTACK_BOOT_TIMEOUT"); t && *t) {
        char *end = nullptr;
        errno = 0;
        double v = std::strtod(t, &end);
        if (errno || *end != '\0' || !(v > 0)) {
            report(0,
                   std::string("VIASTACK_BOOT_TIMEOUT='") + t +
                       "' is not a positive number of seconds (unset it for the default 300)");
            return VIPL_BOOT_ERR_ENV;
        }
        info->timeout_s = v;
    }
    const char *job = std::getenv("VIASTACK_JOB");
    if (const char *b = std::getenv("VIASTACK_BOOT"); b && *b) {
        TcpEndpoint ep;
        std::string err;
        if (!parse_boot_spec(b, &ep, &err)) {
            report(0,
                   std::string("VIASTACK_BOOT='") + b + "': " + err +
                       " (e.g. tcp:10.77.0.1:7000; unset it for a single-host job)");
            return VIPL_BOOT_ERR_ENV;
        }
        if (!job) {
            report(0,
                   std::string("VIASTACK_BOOT='") + b +
                       "' needs VIASTACK_JOB, VIASTACK_RANK and VIASTACK_SIZE too (vipl-run --job ID "
                       "--world N --first-rank R --boot ... sets them all)");
            return VIPL_BOOT_ERR_ENV;
        }
        info->boot = b;
    }
    if (!job) return VIPL_BOOT_OK; // job of one (or PMIx, decided by the caller)
    info->job = job;
    if (!valid_job_id(info->job)) {
        report(0,
               "VIASTACK_JOB='" + info->job +
                   "' is not a valid job id ([A-Za-z0-9._-], 1..128 chars); start the job with "
                   "vipl-run, or unset VIASTACK_JOB to run as a job of one");
        return VIPL_BOOT_ERR_ENV;
    }
    long size = 0, rank = 0;
    const char *s = std::getenv("VIASTACK_SIZE");
    const char *r = std::getenv("VIASTACK_RANK");
    if (!parse_int(s, 1, kMaxJobSize, &size)) {
        report(0,
               std::string("VIASTACK_SIZE='") + (s ? s : "(unset)") + "' must be an integer in 1.." +
                   std::to_string(kMaxJobSize) + " when VIASTACK_JOB is set");
        return VIPL_BOOT_ERR_ENV;
    }
    if (!parse_int(r, 0, size - 1, &rank)) {
        report(0,
               std::string("VIASTACK_RANK='") + (r ? r : "(unset)") + "' must be an integer in 0.." +
                   std::to_string(size - 1) + " (VIASTACK_SIZE=" + std::to_string(size) + ")");
        return VIPL_BOOT_ERR_ENV;
    }
    info->size = static_cast<int>(size);
    info->rank = static_cast<int>(rank);
    return VIPL_BOOT_OK;
}

int init_locked(State &st) {
    JobInfo info;
    if (int rc = read_env(&info); rc != VIPL_BOOT_OK) return rc;
    int rc = VIPL_BOOT_OK;
    if (!info.boot.empty()) {
        st.backend = make_tcp_backend(info, &rc);
    } else if (!info.job.empty()) {
        st.backend = make_shm_backend(info, &rc);
    } else if (std::getenv("PMIX_RANK") && std::getenv("PMIX_NAMESPACE")) {
#if VIASTACK_HAVE_PMIX
        st.backend = make_pmix_backend(&info, &rc);
#else
        report(0,
               "started by a PMIx launcher, but viastack was built without PMIx "
               "(install libpmix-dev and rebuild); running as a job of one");
        st.backend = make_single_backend();
#endif
    } else {
        st.backend = make_single_backend();
    }
    if (!st.backend) return rc;
    st.info = info;
    return VIPL_BOOT_OK;
}

// Collectives share this prologue: initialised, not finalized.
Backend *live_backend(const char *call) {
    State &st = state();
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.init_done || st.init_rc != VIPL_BOOT_OK || st.finalized) {
        report(st.init_done ? st.info.rank : 0,
               std::string(call) + ": " +
                   (st.finalized ? "called after vipl_boot_finalize" : "vipl_boot_init was not called (or failed)"));
        return nullptr;
    }
    return st.backend.get();
}

} // namespace

std::unique_ptr<Backend> make_single_backend() { return std::make_unique<SingleBackend>(); }

} // namespace viastack::boot

using namespace viastack::boot;

extern "C" {

namespace {
int start_locked(State &st) {
    if (!st.init_done) {
        st.init_rc = init_locked(st);
        st.init_done = true;
        if (st.init_rc == VIPL_BOOT_OK) {
            st.ready.store(true, std::memory_order_release);
            // "[rank R] " before every layer's lines (a job of one has no prefix).
            if (st.info.size > 1) viastack::log::set_rank(st.info.rank);
        }
    }
    return st.init_rc;
}
} // namespace

int vipl_boot_init(void) {
    State &st = state();
    std::lock_guard<std::mutex> lock(st.mu);
    const int rc = start_locked(st);
    if (rc == VIPL_BOOT_OK && !st.finalized) ++st.users;
    return rc;
}

int vipl_boot_lookup(void) {
    State &st = state();
    std::lock_guard<std::mutex> lock(st.mu);
    return start_locked(st);
}

int vipl_boot_rank(void) {
    State &st = state();
    return st.ready.load(std::memory_order_acquire) ? st.info.rank : VIPL_BOOT_ERR_NOT_INIT;
}

int vipl_boot_size(void) {
    State &st = state();
    return st.ready.load(std::memory_order_acquire) ? st.info.size : VIPL_BOOT_ERR_NOT_INIT;
}

const char *vipl_boot_job(void) {
    State &st = state();
    return st.ready.load(std::memory_order_acquire) ? st.info.job.c_str() : "";
}

int vipl_boot_barrier(void) {
    Backend *b = live_backend("vipl_boot_barrier");
    return b ? b->barrier() : VIPL_BOOT_ERR_NOT_INIT;
}

int vipl_boot_allgather(const void *mine, size_t len, void *out) {
    Backend *b = live_backend("vipl_boot_allgather");
    return b ? b->allgather(mine, len, out) : VIPL_BOOT_ERR_NOT_INIT;
}

int vipl_boot_bcast(void *buf, size_t len, int root) {
    Backend *b = live_backend("vipl_boot_bcast");
    return b ? b->bcast(buf, len, root) : VIPL_BOOT_ERR_NOT_INIT;
}

int vipl_boot_finalize(void) {
    State &st = state();
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.finalized) return st.finalize_rc;
    if (!st.init_done || st.init_rc != VIPL_BOOT_OK) return VIPL_BOOT_ERR_NOT_INIT;
    if (st.users > 1) { // another user (AM, Split-C, the program) still needs the job
        --st.users;
        return VIPL_BOOT_OK;
    }
    st.users = 0;
    st.finalize_rc = st.backend->finalize();
    st.finalized = true;
    return st.finalize_rc;
}

void vipl_boot_abort(int code, const char *why) {
    // An exit status of 0 would read as success to the launcher.
    int status = code & 0xff;
    if (status == 0) status = 1;
    vipl_boot_lookup(); // best effort: reach the segment so peers learn at once
    State &st = state();
    int rank = 0;
    {
        std::lock_guard<std::mutex> lock(st.mu);
        rank = st.init_rc == VIPL_BOOT_OK ? st.info.rank : 0;
        report(rank,
               "aborting the job with code " + std::to_string(status) + ": " +
                   (why && *why ? why : "(no reason given)"));
        if (st.backend && !st.finalized) st.backend->abort_job(status, why);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    // _exit, not exit: other threads (a NIC progress agent) may hold locks that
    // static destructors would need.
    _exit(status);
}

} // extern "C"
