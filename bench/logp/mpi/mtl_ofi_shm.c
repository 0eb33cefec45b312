/* mtl_ofi_shm.c - lets Open MPI's mtl:ofi run over libfabric's own
 * shared-memory provider, `shm`, for logp's mpi layer: the floor of the route
 * MPI takes over viastack (pml cm, mtl ofi, a libfabric provider) when the
 * provider is a native, tuned FI_EP_RDM + FI_TAGGED one (docs/mpi.md, "The
 * floor of mtl:ofi").  Loaded with LD_PRELOAD into both ranks; not part of
 * the product.
 *
 * Why it is needed: Debian's Open MPI 4.1.4 asks fi_getinfo for
 * FI_LOCAL_COMM | FI_REMOTE_COMM on every provider, and libfabric 1.17's shm
 * advertises neither (it is local by nature), so the request finds nothing
 * and pml cm cannot be selected.  This fi_getinfo drops those two bits from
 * the hints when the process runs with FI_PROVIDER=shm, and changes nothing
 * else: the fi_info returned is shm's own, every other call goes to libfabric
 * untouched.  Without FI_PROVIDER=shm it passes every call through as it is.
 *
 * Open MPI calls fi_getinfo@FABRIC_1.3 (libfabric's default version of the
 * symbol since 1.3); this definition takes its place and forwards to it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <rdma/fabric.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *, struct fi_info **);

static int shm_selected(void) {
    const char *p = getenv("FI_PROVIDER");
    return p && strcmp(p, "shm") == 0;
}

int fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags, const struct fi_info *hints,
               struct fi_info **info) {
    static getinfo_fn real;
    if (!real) real = (getinfo_fn)dlvsym(RTLD_NEXT, "fi_getinfo", "FABRIC_1.3");
    if (!real) {
        fprintf(stderr, "mtl_ofi_shm: libfabric's fi_getinfo@FABRIC_1.3 not found (is libfabric1 >= 1.3 loaded?)\n");
        return -FI_ENOSYS;
    }
    const uint64_t where = FI_LOCAL_COMM | FI_REMOTE_COMM;
    if (!hints || !(hints->caps & where) || !shm_selected()) return real(version, node, service, flags, hints, info);
    struct fi_info *h = fi_dupinfo(hints);
    if (!h) return -FI_ENOMEM;
    h->caps &= ~where;
    const int ret = real(version, node, service, flags, h, info);
    fi_freeinfo(h);
    return ret;
}
