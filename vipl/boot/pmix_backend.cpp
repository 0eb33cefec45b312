// pmix_backend.cpp - vipl_boot over PMIx, for processes started by a PMIx
// launcher (Open MPI's mpirun, srun --mpi=pmix, prterun).  Every data
// collective is one round: each rank Puts a blob under a fresh key, a Fence
// with PMIX_COLLECT_DATA spreads the blobs, and each rank Gets all of them.
// Blob layout: [1 byte: arguments valid][u64 len][i32 root][payload].  Every
// rank sees every header, so argument mismatches fail on all ranks alike.
#include <pmix.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "boot_backend.hpp"
#include "boot_segment.hpp"
#include "vipl_boot.h"

namespace viastack::boot {
namespace {

constexpr size_t kHeader = 1 + sizeof(uint64_t) + sizeof(int32_t);
constexpr int kReapAgeS = 5; // a dead job's files are removed once this old (init)

std::string perr(pmix_status_t rc) { return PMIx_Error_string(rc); }

// Job ids name shm files: keep [A-Za-z0-9._-], map the rest ('@', ':') to '_'.
std::string job_id_from_nspace(const char *nspace) {
    std::string id = "pmix-";
    for (const char *p = nspace; *p && id.size() < 120; ++p) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
            c == '-';
        id.push_back(ok ? c : '_');
    }
    return id;
}

class PmixBackend final : public Backend {
public:
    explicit PmixBackend(double timeout_s) : timeout_s_(static_cast<int>(timeout_s + 0.999)) {}

    bool init(JobInfo *info, int *rc) {
        pmix_status_t st = PMIx_Init(&me_, nullptr, 0);
        if (st != PMIX_SUCCESS) {
            report(0, "PMIx_Init failed: " + perr(st));
            *rc = VIPL_BOOT_ERR_ENV;
            return false;
        }
        inited_ = true;
        pmix_proc_t wildcard;
        PMIX_PROC_LOAD(&wildcard, me_.nspace, PMIX_RANK_WILDCARD);
        pmix_value_t *val = nullptr;
        st = PMIx_Get(&wildcard, PMIX_JOB_SIZE, nullptr, 0, &val);
        if (st != PMIX_SUCCESS || !val || val->type != PMIX_UINT32) {
            report(static_cast<int>(me_.rank), "PMIx_Get(PMIX_JOB_SIZE) failed: " + perr(st));
            if (val) PMIX_VALUE_RELEASE(val);
            *rc = VIPL_BOOT_ERR_ENV;
            return false;
        }
        info->size = static_cast<int>(val->data.uint32);
        PMIX_VALUE_RELEASE(val);
        info->rank = static_cast<int>(me_.rank);
        info->job = job_id_from_nspace(me_.nspace);
        job_ = info->job;
        size_ = info->size;
        // A PMIx job whose ranks were all killed (SIGKILL, a crash) never reaches
        // finalize, and nothing else removes its files: the first rank of the next
        // job removes those that no process has open or mapped (a file is open
        // from its creation on, so a job that is starting keeps its own; the age
        // is a margin on top).
        if (rank() == 0) reap_dead_job_files("pmix-", job_, kReapAgeS);
        return true;
    }

    ~PmixBackend() override {
        if (inited_) PMIx_Finalize(nullptr, 0);
    }

    int barrier() override { return fence(false, "barrier"); }

    int allgather(const void *mine, size_t len, void *out) override {
        bool ok = len <= VIPL_BOOT_MAX_ITEM && (len == 0 || (mine && out));
        if (!ok)
            report(rank(),
                   "vipl_boot_allgather: len " + std::to_string(len) +
                       (len > VIPL_BOOT_MAX_ITEM ? " exceeds VIPL_BOOT_MAX_ITEM" : " with a NULL buffer"));
        std::vector<std::vector<unsigned char>> all;
        if (int rc = exchange(ok, len, -1, ok ? mine : nullptr, ok ? len : 0, &all, "allgather"); rc != VIPL_BOOT_OK)
            return rc;
        for (int r = 0; r < size_; ++r)
            std::memcpy(static_cast<unsigned char *>(out) + size_t(r) * len, all[size_t(r)].data() + kHeader, len);
        return VIPL_BOOT_OK;
    }

    int bcast(void *buf, size_t len, int root) override {
        bool ok = root >= 0 && root < size_ && (len == 0 || buf);
        if (!ok)
            report(rank(),
                   "vipl_boot_bcast: root " + std::to_string(root) + " out of range 0.." + std::to_string(size_ - 1) +
                       " or NULL buffer");
        std::vector<std::vector<unsigned char>> all;
        const bool send = ok && root == rank();
        if (int rc = exchange(ok, len, root, send ? buf : nullptr, send ? len : 0, &all, "bcast"); rc != VIPL_BOOT_OK)
            return rc;
        if (root != rank()) {
            if (all[size_t(root)].size() != kHeader + len) {
                report(rank(), "vipl_boot_bcast: root's data has the wrong size");
                return VIPL_BOOT_ERR_ARG;
            }
            std::memcpy(buf, all[size_t(root)].data() + kHeader, len);
        }
        return VIPL_BOOT_OK;
    }

    // A PMIx job has no launcher of ours to remove its /dev/shm files (the
    // nicfw wire, /dev/shm/viastack-<job>-wire) when it ends.  Past the final
    // fence every rank has opened whatever it opens and maps it still, so rank 0
    // unlinks them: the mappings live on, nothing is left once the ranks exit.
    int finalize() override {
        int rc = fence(false, "finalize");
        if (rc == VIPL_BOOT_OK && rank() == 0) unlink_job_files(job_);
        if (inited_) PMIx_Finalize(nullptr, 0);
        inited_ = false;
        return rc;
    }

    // PMIx_Abort asks the launcher to kill the job.  Open MPI 4.1's mpirun (as
    // packaged in Debian 12 with external PMIx 4.2) crashes or hangs in its
    // PMIx server finalize after a client's PMIx_Abort, so under mpirun we just
    // let the caller exit non-zero: mpirun kills the rest of a job on any
    // non-zero exit anyway.
    void abort_job(int code, const char *why) override {
        if (inited_ && !std::getenv("OMPI_COMM_WORLD_SIZE")) PMIx_Abort(code, why ? why : "", nullptr, 0);
    }

private:
    int rank() const { return static_cast<int>(me_.rank); }

    int fence(bool collect, const char *what) {
        pmix_info_t info[2];
        PMIX_INFO_CONSTRUCT(&info[0]);
        PMIX_INFO_CONSTRUCT(&info[1]);
        int secs = timeout_s_;
        bool yes = true;
        PMIx_Info_load(&info[0], PMIX_TIMEOUT, &secs, PMIX_INT);
        size_t ninfo = 1;
        if (collect) PMIx_Info_load(&info[ninfo++], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
        pmix_status_t st = PMIx_Fence(nullptr, 0, info, ninfo);
        PMIX_INFO_DESTRUCT(&info[0]);
        PMIX_INFO_DESTRUCT(&info[1]);
        if (st == PMIX_SUCCESS) return VIPL_BOOT_OK;
        if (st == PMIX_ERR_TIMEOUT)
            report(rank(),
                   std::string(what) + ": PMIx_Fence timed out after " + std::to_string(secs) +
                       " s (VIASTACK_BOOT_TIMEOUT); some rank did not arrive (PMIx does not say "
                       "which)");
        else
            report(rank(),
                   std::string(what) + ": PMIx_Fence failed (" + perr(st) + "): a peer died or aborted the job");
        return VIPL_BOOT_ERR_TIMEOUT;
    }

    // Puts this rank's blob, fences, and gets every rank's blob into *all.
    int exchange(bool ok, uint64_t len, int32_t root, const void *payload, size_t n,
                 std::vector<std::vector<unsigned char>> *all, const char *what) {
        const std::string key = "viastack.boot." + std::to_string(++round_);
        std::vector<unsigned char> blob(kHeader + n);
        blob[0] = ok ? 1 : 0;
        std::memcpy(&blob[1], &len, sizeof len);
        std::memcpy(&blob[1 + sizeof len], &root, sizeof root);
        if (n) std::memcpy(&blob[kHeader], payload, n);
        pmix_value_t v;
        PMIX_VALUE_CONSTRUCT(&v);
        v.type = PMIX_BYTE_OBJECT;
        v.data.bo.bytes = reinterpret_cast<char *>(blob.data());
        v.data.bo.size = blob.size();
        pmix_status_t st = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v); // copies the value
        if (st == PMIX_SUCCESS) st = PMIx_Commit();
        if (st != PMIX_SUCCESS) {
            report(rank(), std::string(what) + ": PMIx_Put/Commit failed: " + perr(st));
            return VIPL_BOOT_ERR_TIMEOUT;
        }
        if (int rc = fence(true, what); rc != VIPL_BOOT_OK) return rc;
        all->assign(size_t(size_), {});
        for (int r = 0; r < size_; ++r) {
            pmix_proc_t peer;
            PMIX_PROC_LOAD(&peer, me_.nspace, static_cast<pmix_rank_t>(r));
            pmix_value_t *got = nullptr;
            st = PMIx_Get(&peer, key.c_str(), nullptr, 0, &got);
            if (st != PMIX_SUCCESS || !got || got->type != PMIX_BYTE_OBJECT || got->data.bo.size < kHeader) {
                report(rank(),
                       std::string(what) + ": PMIx_Get from rank " + std::to_string(r) + " failed: " + perr(st));
                if (got) PMIX_VALUE_RELEASE(got);
                return VIPL_BOOT_ERR_TIMEOUT;
            }
            auto *b = reinterpret_cast<unsigned char *>(got->data.bo.bytes);
            (*all)[size_t(r)].assign(b, b + got->data.bo.size);
            PMIX_VALUE_RELEASE(got);
        }
        for (int r = 0; r < size_; ++r) {
            const auto &h = (*all)[size_t(r)];
            uint64_t their_len;
            int32_t their_root;
            std::memcpy(&their_len, &h[1], sizeof their_len);
            std::memcpy(&their_root, &h[1 + sizeof their_len], sizeof their_root);
            if (h[0] != 1) {
                report(rank(),
                       std::string(what) + ": rank " + std::to_string(r) +
                           " passed invalid arguments (see its message)");
                return VIPL_BOOT_ERR_ARG;
            }
            if (their_len != len || their_root != root) {
                report(rank(),
                       std::string(what) + ": ranks disagree on len/root (rank " + std::to_string(r) + " passed len " +
                           std::to_string(their_len) + " root " + std::to_string(their_root) +
                           "); every rank must pass the same");
                return VIPL_BOOT_ERR_ARG;
            }
        }
        return VIPL_BOOT_OK;
    }

    pmix_proc_t me_{};
    std::string job_;
    bool inited_ = false;
    int size_ = 1;
    int timeout_s_;
    uint64_t round_ = 0;
};

} // namespace

std::unique_ptr<Backend> make_pmix_backend(JobInfo *info, int *rc) {
    auto b = std::make_unique<PmixBackend>(info->timeout_s);
    if (!b->init(info, rc)) return nullptr;
    return b;
}

} // namespace viastack::boot
