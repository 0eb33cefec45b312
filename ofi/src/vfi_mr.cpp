// vfi_mr.cpp - memory registration over VipRegisterMem.
//
// The key is the VI memory handle (FI_MR_PROV_KEY), remote addresses are
// virtual addresses (FI_MR_VIRT_ADDR), FI_REMOTE_WRITE / FI_REMOTE_READ enable
// RDMA write / read on the region.  The descriptor (fi_mr_desc) is the Mr.
#include "vfi.hpp"

namespace vfi {

static int mr_close(struct fid *fid) {
    Mr *m = reinterpret_cast<Mr *>(fid);
    CtlGuard g;
    Nic *n = nic();
    VIP_RETURN rc = n ? VipDeregisterMem(n->handle, m->addr, m->handle) : VIP_INVALID_PARAMETER;
    if (rc != VIP_SUCCESS) warn("VipDeregisterMem: %s", VipxReturnString(rc));
    m->domain->refs--;
    delete m;
    return 0;
}

static struct fi_ops mr_fi_ops = {sizeof(struct fi_ops), mr_close, no_bind,   no_control,
                                  no_ops_open,           no_tostr, no_ops_set};

static int mr_register(Domain *d, const void *buf, size_t len, uint64_t access, uint64_t flags, void *context,
                       struct fid_mr **out) {
    constexpr uint64_t kAccess = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    // flags: none changes a VI registration (rxm passes its own internal
    // ones, e.g. "do not cache"), so they are accepted and ignored.
    (void)flags;
    if (!out || (access & ~kAccess) || (!buf && len)) return -FI_EINVAL;
    CtlGuard g;
    Nic *n = nic();
    if (!n) return -FI_ENODEV;
    VIP_MEM_ATTRIBUTES ma{};
    ma.Ptag = n->ptag;
    ma.EnableRdmaWrite = (access & FI_REMOTE_WRITE) ? VIP_TRUE : VIP_FALSE;
    ma.EnableRdmaRead = (access & FI_REMOTE_READ) ? VIP_TRUE : VIP_FALSE;
    // VipRegisterMem refuses a zero length; one byte of a zero-length buffer
    // gives the same descriptor semantics (segments of length 0 are not checked).
    size_t reg_len = len ? len : 1;
    static char zero_region;
    void *addr = buf ? const_cast<void *>(buf) : &zero_region;
    VIP_MEM_HANDLE h;
    VIP_RETURN rc = VipRegisterMem(n->handle, addr, reg_len, &ma, &h);
    if (rc != VIP_SUCCESS) return rc == VIP_ERROR_RESOURCE ? -FI_ENOMEM : -FI_EINVAL;
    Mr *m = new Mr;
    m->domain = d;
    m->addr = addr;
    m->len = len;
    m->handle = h;
    m->mr.fid.fclass = FI_CLASS_MR;
    m->mr.fid.context = context;
    m->mr.fid.ops = &mr_fi_ops;
    m->mr.mem_desc = m;
    m->mr.key = h;
    d->refs++;
    *out = &m->mr;
    return 0;
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
                  uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context) {
    if (fid->fclass != FI_CLASS_DOMAIN || offset) return -FI_EINVAL;
    (void)requested_key; // FI_MR_PROV_KEY: the provider chooses
    return mr_register(reinterpret_cast<Domain *>(fid), buf, len, access, flags, context, mr);
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
                   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context) {
    if (count != 1 || !iov) return -FI_EINVAL; // mr_iov_limit 1
    return mr_reg(fid, iov->iov_base, iov->iov_len, access, offset, requested_key, flags, mr, context);
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr) {
    if (!attr || attr->iov_count != 1 || !attr->mr_iov || attr->iface != FI_HMEM_SYSTEM) return -FI_EINVAL;
    return mr_reg(fid, attr->mr_iov->iov_base, attr->mr_iov->iov_len, attr->access, attr->offset, attr->requested_key,
                  flags, mr, attr->context);
}

struct fi_ops_mr mr_ops = {sizeof(struct fi_ops_mr), mr_reg, mr_regv, mr_regattr};

} // namespace vfi
