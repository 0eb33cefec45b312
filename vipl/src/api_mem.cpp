// api_mem.cpp - memory registration and attributes; VipxAllocMem/VipxFreeMem
// and the providers' default allocator for them.
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "handles.hpp"

using namespace vipl::api;

namespace {
// Which NIC handle registered which memory handle.  A provider's region table
// is per device, shared by every handle opened on it; a region is used,
// queried, changed and deregistered only through the handle that made it
// (docs/bad-input.md).  Control path only: the data path never looks here.
std::mutex g_regions_mu;
std::set<std::pair<const NicEntry *, VIP_MEM_HANDLE>> g_regions;

bool owns_region(const NicEntry *e, VIP_MEM_HANDLE mh) {
    std::lock_guard<std::mutex> g(g_regions_mu);
    return g_regions.count({e, mh}) != 0;
}

// Resolves the ptag handle inside memory attributes to the provider's object;
// a NULL Ptag is the NIC's default tag, as for VIs.
VIP_RETURN resolve(NicEntry *e, const VIP_MEM_ATTRIBUTES *a, vipl::prov::MemAttr *out) {
    NicEntry *owner = nullptr;
    vipl::prov::Ptag *p = nullptr;
    if (!a->Ptag) {
        if (VIP_RETURN rc = default_ptag(e, &p); rc != VIP_SUCCESS) return rc;
    } else {
        p = ptags().lookup(a->Ptag, &owner);
        if (!p || owner->nic != e->nic) return VIP_INVALID_PTAG;
    }
    out->ptag = p;
    out->rdma_write = a->EnableRdmaWrite != VIP_FALSE;
    out->rdma_read = a->EnableRdmaRead != VIP_FALSE;
    return VIP_SUCCESS;
}
// Live allocations of the default allocator (address -> length, and whether
// it is a fixed-address mapping): VipxFreeMem refuses anything else.  Not a
// hot path.
struct DefaultAlloc {
    size_t bytes;
    bool mapped; // mmap (VipxAllocMemAt) rather than posix_memalign
};
std::mutex g_alloc_mu;
std::unordered_map<void *, DefaultAlloc> &default_allocs() {
    static auto *m = new std::unordered_map<void *, DefaultAlloc>;
    return *m;
}
} // namespace

VIP_RETURN vipl::prov::Nic::alloc_mem(VIP_ULONG len, void *at, void **out) {
    void *p = nullptr;
    const size_t bytes = (size_t(len) + 4095) & ~size_t(4095);
    if (bytes < len) return VIP_ERROR_RESOURCE;
    if (at) {
        // Reserved, not committed: fresh anonymous pages read as zero.
        p = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE,
                 -1, 0);
        if (p == MAP_FAILED) return VIP_ERROR_RESOURCE;
        if (p != at) { // a kernel without MAP_FIXED_NOREPLACE took it as a hint
            munmap(p, bytes);
            return VIP_ERROR_RESOURCE;
        }
    } else {
        if (posix_memalign(&p, 4096, bytes) != 0) return VIP_ERROR_RESOURCE;
        std::memset(p, 0, bytes);
    }
    std::lock_guard<std::mutex> g(g_alloc_mu);
    default_allocs().emplace(p, DefaultAlloc{bytes, at != nullptr});
    *out = p;
    return VIP_SUCCESS;
}

VIP_RETURN vipl::prov::Nic::free_mem(void *p) {
    DefaultAlloc a;
    {
        std::lock_guard<std::mutex> g(g_alloc_mu);
        auto it = default_allocs().find(p);
        if (it == default_allocs().end()) return VIP_INVALID_PARAMETER;
        a = it->second;
        default_allocs().erase(it);
    }
    if (a.mapped) munmap(p, a.bytes);
    else std::free(p);
    return VIP_SUCCESS;
}

extern "C" {

VIP_RETURN VipRegisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_ULONG Length,
                          VIP_MEM_ATTRIBUTES *MemAttribs, VIP_MEM_HANDLE *MemoryHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !VirtualAddress || Length == 0 || !MemoryHandle) return VIP_INVALID_PARAMETER;
    // NULL attributes, as cLAN and M-VIA took them: the default tag, no RDMA
    // (what all-zero attributes mean).
    static const VIP_MEM_ATTRIBUTES kDefault = {nullptr, VIP_FALSE, VIP_FALSE};
    if (!MemAttribs) MemAttribs = const_cast<VIP_MEM_ATTRIBUTES *>(&kDefault);
    if (reinterpret_cast<uintptr_t>(VirtualAddress) + Length < reinterpret_cast<uintptr_t>(VirtualAddress))
        return VIP_INVALID_PARAMETER; // wraps the address space
    VIP_NIC_ATTRIBUTES na{};
    if (e->nic->query(&na) == VIP_SUCCESS && na.MaxRegisterBytes && Length > na.MaxRegisterBytes)
        return VIP_ERROR_RESOURCE; // more than the NIC registers in one region
    vipl::prov::MemAttr a;
    if (VIP_RETURN rc = resolve(e, MemAttribs, &a); rc != VIP_SUCCESS) return rc;
    VIP_RETURN rc = e->nic->register_mem(VirtualAddress, Length, a, MemoryHandle);
    if (rc == VIP_SUCCESS) {
        e->regions.fetch_add(1);
        std::lock_guard<std::mutex> g(g_regions_mu);
        g_regions.insert({e, *MemoryHandle});
    }
    return rc;
}

VIP_RETURN VipDeregisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_MEM_HANDLE MemoryHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !owns_region(e, MemoryHandle)) return VIP_INVALID_PARAMETER;
    VIP_RETURN rc = e->nic->deregister_mem(VirtualAddress, MemoryHandle);
    if (rc == VIP_SUCCESS) {
        e->regions.fetch_sub(1);
        std::lock_guard<std::mutex> g(g_regions_mu);
        g_regions.erase({e, MemoryHandle});
    }
    return rc;
}

VIP_RETURN VipQueryMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle,
                       VIP_MEM_ATTRIBUTES *MemAttribs) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !MemAttribs || !owns_region(e, MemHandle)) return VIP_INVALID_PARAMETER;
    vipl::prov::MemAttr a;
    if (VIP_RETURN rc = e->nic->query_mem(Address, MemHandle, &a); rc != VIP_SUCCESS) return rc;
    MemAttribs->Ptag = a.ptag ? a.ptag->api_handle : nullptr;
    MemAttribs->EnableRdmaWrite = a.rdma_write ? VIP_TRUE : VIP_FALSE;
    MemAttribs->EnableRdmaRead = a.rdma_read ? VIP_TRUE : VIP_FALSE;
    return VIP_SUCCESS;
}

VIP_RETURN VipSetMemAttributes(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle,
                               VIP_MEM_ATTRIBUTES *MemAttribs) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !MemAttribs || !owns_region(e, MemHandle)) return VIP_INVALID_PARAMETER;
    vipl::prov::MemAttr a;
    if (VIP_RETURN rc = resolve(e, MemAttribs, &a); rc != VIP_SUCCESS) return rc;
    return e->nic->set_mem_attributes(Address, MemHandle, a);
}

VIP_RETURN VipxAllocMem(VIP_NIC_HANDLE NicHandle, VIP_ULONG Length, VIP_PVOID *Address) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || Length == 0 || !Address) return VIP_INVALID_PARAMETER;
    return e->nic->alloc_mem(Length, nullptr, Address);
}

VIP_RETURN VipxAllocMemAt(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_ULONG Length) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || Length == 0 || !Address || (reinterpret_cast<uintptr_t>(Address) & 4095) != 0)
        return VIP_INVALID_PARAMETER;
    void *out = nullptr;
    return e->nic->alloc_mem(Length, Address, &out);
}

VIP_RETURN VipxFreeMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !Address) return VIP_INVALID_PARAMETER;
    return e->nic->free_mem(Address);
}

} // extern "C"
