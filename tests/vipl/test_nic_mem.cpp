// test_nic_mem.cpp - NIC open/query, handles, protection tags, memory registration.
#include <sys/mman.h>

#include <cstring>

#include "vipl_test_util.hpp"

using namespace vt;

namespace {

// A handle value no provider ever hands out; the header promises such handles are
// rejected with VIP_INVALID_PARAMETER and never dereferenced.
VIP_PVOID forged_handle() { return reinterpret_cast<VIP_PVOID>(uintptr_t(0x7ead0000dead0040ull)); }

TEST(Nic, QueryReportsSaneAttributes) {
    const VIP_NIC_ATTRIBUTES &a = nic_attr();
    EXPECT_NE(a.Name[0], '\0');
    EXPECT_GE(a.NicAddressLen, 1u);
    EXPECT_LE(a.NicAddressLen, VIP_MAX_HOST_ADDRESS_LEN);
    EXPECT_NE(a.LocalNicAddress, nullptr);
    EXPECT_GE(a.MaxDiscriminatorLen, 1u);
    EXPECT_LE(a.MaxDiscriminatorLen, VIP_MAX_DISCRIMINATOR_LEN);
    EXPECT_GE(a.MaxSegmentsPerDesc, 2u) << "an RDMA needs an address and a data segment";
    EXPECT_GE(a.MaxDescriptorsPerQueue, 1u);
    EXPECT_GE(a.MaxTransferSize, 1u);
    EXPECT_GE(a.MaxCQ, 1u);
    EXPECT_GE(a.MaxCQEntries, 1u);
    EXPECT_GE(a.MaxVI, 2u);
    EXPECT_GE(a.MaxPtags, 1u);
    EXPECT_GE(a.MaxRegisterRegions, 1u);
    const VIP_RELIABILITY_LEVEL all =
        VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
    EXPECT_NE(a.ReliabilityLevelSupport & all, 0) << "no reliability level supported";
    EXPECT_EQ(a.ReliabilityLevelSupport & ~all, 0) << "undefined reliability bits";
    EXPECT_EQ(a.RDMAReadSupport & ~a.ReliabilityLevelSupport, 0) << "RDMA read claimed for an unsupported level";
    EXPECT_EQ(a.RDMAReadSupport & VIP_SERVICE_UNRELIABLE, 0) << "the spec forbids RDMA read on unreliable VIs";
}

TEST(Nic, NicfwAddressIsRankAndDiscriminatorsAre64Bytes) {
    if (!provider_is_nicfw()) GTEST_SKIP() << "nicfw-specific addressing (provider is " << nic_attr().Name << ")";
    const VIP_NIC_ATTRIBUTES &a = nic_attr();
    ASSERT_EQ(a.NicAddressLen, 2u);
    int rank = a.LocalNicAddress[0] | (a.LocalNicAddress[1] << 8);
    EXPECT_EQ(rank, VipxNicRank(nic()));
    EXPECT_EQ(a.MaxDiscriminatorLen, 64u);
}

TEST(Nic, QueryTwiceIsStable) {
    VIP_NIC_ATTRIBUTES a;
    VT_ASSERT_OK(VipQueryNic(nic(), &a));
    EXPECT_STREQ(a.Name, nic_attr().Name);
    EXPECT_EQ(a.MaxTransferSize, nic_attr().MaxTransferSize);
}

TEST(Nic, UnknownDeviceNameIsRejected) {
    VIP_NIC_HANDLE h = nullptr;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipOpenNic("no-such-device-viastack", &h));
}

TEST(Handles, ForgedAndNullHandlesAreRejected) {
    VIP_NIC_ATTRIBUTES a;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryNic(forged_handle(), &a));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryNic(nullptr, &a));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryNic(nic(), nullptr));
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES va;
    VIP_BOOLEAN se, re;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryVi(forged_handle(), &st, &va, &se, &re));
    VIP_DESCRIPTOR *d = nullptr;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipSendDone(forged_handle(), &d));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipRecvDone(nullptr, &d));
    VIP_VI_HANDLE vi;
    VIP_BOOLEAN rq;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipCQDone(forged_handle(), &vi, &rq));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipDestroyCQ(forged_handle()));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipDestroyVi(forged_handle()));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectAccept(forged_handle(), forged_handle()));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectReject(forged_handle()));
}

TEST(Handles, StaleHandlesAreRejected) {
    VIP_CQ_HANDLE cq = nullptr;
    VT_ASSERT_OK(VipCreateCQ(nic(), 4, &cq));
    VT_ASSERT_OK(VipDestroyCQ(cq));
    VIP_VI_HANDLE vi;
    VIP_BOOLEAN rq;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipCQDone(cq, &vi, &rq));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipDestroyCQ(cq));

    Ptag tag;
    ASSERT_NE(tag.h(), nullptr);
    VIP_VI_HANDLE v = nullptr;
    VIP_VI_ATTRIBUTES a = vi_attr(supported_levels()[0], tag.h());
    VT_ASSERT_OK(VipCreateVi(nic(), &a, nullptr, nullptr, &v));
    VT_ASSERT_OK(VipDestroyVi(v));
    VIP_DESCRIPTOR *d;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipRecvDone(v, &d));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipDestroyVi(v));
}

TEST(Ptag, CreateDestroyAndInUse) {
    VIP_PROTECTION_HANDLE p = nullptr;
    VT_ASSERT_OK(VipCreatePtag(nic(), &p));
    ASSERT_NE(p, nullptr);
    {
        Mem m(4096, p);
        VT_ASSERT_OK(m.rc);
        VT_EXPECT_RC(VIP_INVALID_STATE, VipDestroyPtag(nic(), p)) << "a ptag with registered memory is in use";
    }
    {
        Vi v(vi_attr(supported_levels()[0], p));
        VT_ASSERT_OK(v.rc);
        VT_EXPECT_RC(VIP_INVALID_STATE, VipDestroyPtag(nic(), p)) << "a ptag with a VI is in use";
    }
    VT_EXPECT_OK(VipDestroyPtag(nic(), p));
    VIP_RETURN rc = VipDestroyPtag(nic(), p);
    EXPECT_TRUE(rc == VIP_INVALID_PTAG || rc == VIP_INVALID_PARAMETER)
        << "destroying a ptag twice returned " << rc_str(rc);
}

TEST(Ptag, DistinctTagsAreDistinct) {
    Ptag a, b;
    ASSERT_NE(a.h(), nullptr);
    ASSERT_NE(b.h(), nullptr);
    EXPECT_NE(a.h(), b.h());
}

TEST(Mem, RegisterQuerySetDeregister) {
    Ptag tag, other;
    Mem m(3 * 4096, tag.h(), true, false);
    VT_ASSERT_OK(m.rc);
    VIP_MEM_ATTRIBUTES q;
    VT_ASSERT_OK(VipQueryMem(nic(), m.p(), m.mh(), &q));
    EXPECT_EQ(q.Ptag, tag.h());
    EXPECT_EQ(q.EnableRdmaWrite, VIP_TRUE);
    EXPECT_EQ(q.EnableRdmaRead, VIP_FALSE);

    // One behaviour on every provider (docs/vipl.md, "A region's tag and its RDMA
    // rights"): a move to another tag with RDMA rights is refused and loses nothing.
    VIP_MEM_ATTRIBUTES s = {other.h(), VIP_FALSE, VIP_TRUE};
    VT_EXPECT_RC(VIP_ERROR_RESOURCE, VipSetMemAttributes(nic(), m.p(), m.mh(), &s));
    VT_ASSERT_OK(VipQueryMem(nic(), m.p(), m.mh(), &q));
    EXPECT_EQ(q.Ptag, tag.h());
    EXPECT_EQ(q.EnableRdmaWrite, VIP_TRUE);
    EXPECT_EQ(q.EnableRdmaRead, VIP_FALSE);

    // Rights change under the same tag.
    s = {tag.h(), VIP_FALSE, VIP_TRUE};
    VT_ASSERT_OK(VipSetMemAttributes(nic(), m.p(), m.mh(), &s));
    VT_ASSERT_OK(VipQueryMem(nic(), m.p(), m.mh(), &q));
    EXPECT_EQ(q.Ptag, tag.h());
    EXPECT_EQ(q.EnableRdmaWrite, VIP_FALSE);
    EXPECT_EQ(q.EnableRdmaRead, VIP_TRUE);

    // A move with the rights off is taken; the region is local-only from then on.
    s = {other.h(), VIP_FALSE, VIP_FALSE};
    VT_ASSERT_OK(VipSetMemAttributes(nic(), m.p(), m.mh(), &s));
    VT_ASSERT_OK(VipQueryMem(nic(), m.p(), m.mh(), &q));
    EXPECT_EQ(q.Ptag, other.h());
    EXPECT_EQ(q.EnableRdmaWrite, VIP_FALSE);
    EXPECT_EQ(q.EnableRdmaRead, VIP_FALSE);
    s = {other.h(), VIP_TRUE, VIP_FALSE};
    VT_EXPECT_RC(VIP_ERROR_RESOURCE, VipSetMemAttributes(nic(), m.p(), m.mh(), &s)) << "moved: local-only";
    VT_ASSERT_OK(VipQueryMem(nic(), m.p(), m.mh(), &q));
    EXPECT_EQ(q.Ptag, other.h());
    EXPECT_EQ(q.EnableRdmaWrite, VIP_FALSE);

    s = {tag.h(), VIP_FALSE, VIP_FALSE}; // give it back so `other` can be destroyed
    VT_ASSERT_OK(VipSetMemAttributes(nic(), m.p(), m.mh(), &s));
    s = {tag.h(), VIP_FALSE, VIP_TRUE};
    VT_EXPECT_RC(VIP_ERROR_RESOURCE, VipSetMemAttributes(nic(), m.p(), m.mh(), &s)) << "still moved";

    // A new registration starts unmoved.
    Mem m2(4096, other.h(), false, false);
    VT_ASSERT_OK(m2.rc);
    s = {other.h(), VIP_TRUE, VIP_TRUE};
    VT_ASSERT_OK(VipSetMemAttributes(nic(), m2.p(), m2.mh(), &s));
}

TEST(Mem, BadArgumentsAreRejected) {
    Ptag tag;
    Mem m(4096, tag.h());
    VT_ASSERT_OK(m.rc);
    VIP_MEM_ATTRIBUTES q;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryMem(nic(), m.p(), m.mh() + 7777, &q));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipDeregisterMem(nic(), m.p(), m.mh() + 7777));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipDeregisterMem(nic(), m.p() + 64, m.mh()))
        << "the address must be the registered start";

    uint8_t local[64];
    VIP_MEM_HANDLE mh;
    // (NULL attributes are not a bad argument: they mean the NIC's default tag, see
    // test_legacy.cpp.)
    VIP_MEM_ATTRIBUTES ma = {tag.h(), VIP_FALSE, VIP_FALSE};
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipRegisterMem(nic(), local, sizeof local, &ma, nullptr));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipRegisterMem(nic(), local, 0, &ma, &mh));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipRegisterMem(nic(), nullptr, 64, &ma, &mh));
}

TEST(Mem, DestroyedPtagIsInvalidPtag) {
    VIP_PROTECTION_HANDLE p = nullptr;
    VT_ASSERT_OK(VipCreatePtag(nic(), &p));
    VT_ASSERT_OK(VipDestroyPtag(nic(), p));
    alignas(64) static uint8_t buf[4096];
    VIP_MEM_ATTRIBUTES ma = {p, VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE mh;
    VT_EXPECT_RC(VIP_INVALID_PTAG, VipRegisterMem(nic(), buf, sizeof buf, &ma, &mh));

    Ptag tag;
    Mem m(4096, tag.h());
    VT_ASSERT_OK(m.rc);
    VT_EXPECT_RC(VIP_INVALID_PTAG, VipSetMemAttributes(nic(), m.p(), m.mh(), &ma));
}

TEST(Mem, DeregisterTwiceFails) {
    Ptag tag;
    Mem m(4096, tag.h());
    VT_ASSERT_OK(m.rc);
    VT_ASSERT_OK(VipDeregisterMem(nic(), m.p(), m.mh()));
    m.forget();
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipDeregisterMem(nic(), m.p(), m.mh()));
    VIP_MEM_ATTRIBUTES q;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryMem(nic(), m.p(), m.mh(), &q));
}

TEST(Mem, OverlappingRegistrationsHaveOwnHandles) {
    Ptag tag;
    Mem m(8192, tag.h(), true);
    VT_ASSERT_OK(m.rc);
    VIP_MEM_ATTRIBUTES ma = {tag.h(), VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE second;
    VT_ASSERT_OK(VipRegisterMem(nic(), m.p() + 4096, 4096, &ma, &second));
    EXPECT_NE(second, m.mh());
    VIP_MEM_ATTRIBUTES q;
    VT_ASSERT_OK(VipQueryMem(nic(), m.p() + 4096, second, &q));
    EXPECT_EQ(q.EnableRdmaWrite, VIP_FALSE);
    VT_ASSERT_OK(VipQueryMem(nic(), m.p(), m.mh(), &q));
    EXPECT_EQ(q.EnableRdmaWrite, VIP_TRUE);
    VT_EXPECT_OK(VipDeregisterMem(nic(), m.p() + 4096, second));
}

TEST(NameService, ResolveOwnNameAndRoundTrip) {
    VT_ASSERT_OK(VipNSInit(nic(), nullptr));
    int rank = VipxNicRank(nic());
    NetAddr addr;
    std::string name = "node" + std::to_string(rank < 0 ? 0 : rank);
    VIP_RETURN rc = VipNSGetHostByName(nic(), name.data(), addr.get(), 0);
    if (rc != VIP_SUCCESS && !provider_is_nicfw()) {
        VipNSShutdown(nic());
        GTEST_SKIP() << "provider " << nic_attr().Name << " does not resolve " << name << ": " << rc_str(rc);
    }
    VT_ASSERT_OK(rc);
    std::vector<uint8_t> mine(nic_attr().LocalNicAddress, nic_attr().LocalNicAddress + nic_attr().NicAddressLen);
    EXPECT_EQ(addr.host(), mine);

    char back[256] = {};
    VIP_ULONG len = sizeof back;
    VT_ASSERT_OK(VipNSGetHostByAddr(nic(), addr.get(), back, &len));
    NetAddr again;
    VT_ASSERT_OK(VipNSGetHostByName(nic(), back, again.get(), 0));
    EXPECT_EQ(again.host(), mine) << "name '" << back << "' does not map back";

    char unknown[] = "no-such-host.viastack.invalid";
    VT_EXPECT_RC(VIP_ERROR_NAMESERVICE, VipNSGetHostByName(nic(), unknown, again.get(), 0));
    VT_EXPECT_OK(VipNSShutdown(nic()));
}

} // namespace

namespace {

// VipxAllocMem/VipxFreeMem (every provider: nicfw's shared memory, the others'
// page-aligned heap): zeroed, page aligned, registrable, usable, refused when bad.
TEST(NicMem, VipxAllocMemIsZeroedAlignedAndRegistrable) {
    for (VIP_ULONG len : {VIP_ULONG(1), VIP_ULONG(4096), VIP_ULONG(3 << 20) + 5}) {
        VIP_PVOID p = nullptr;
        VT_ASSERT_OK(VipxAllocMem(nic(), len, &p));
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u) << "not page aligned";
        const auto *b = static_cast<const uint8_t *>(p);
        for (VIP_ULONG i = 0; i < len; i += 997) EXPECT_EQ(b[i], 0) << "byte " << i << " not zero";
        EXPECT_EQ(b[len - 1], 0);
        std::memset(p, 0x5a, len); // all of it is ours to write
        VIP_MEM_ATTRIBUTES a{nullptr, VIP_TRUE, VIP_TRUE};
        VIP_MEM_HANDLE mh;
        VT_EXPECT_OK(VipRegisterMem(nic(), p, len, &a, &mh));
        VT_EXPECT_OK(VipDeregisterMem(nic(), p, mh));
        VT_EXPECT_OK(VipxFreeMem(nic(), p));
    }
}

TEST(NicMem, VipxAllocMemRefusesBadArguments) {
    VIP_PVOID p = nullptr;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxAllocMem(nic(), 0, &p));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxAllocMem(nic(), 4096, nullptr));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxAllocMem(forged_handle(), 4096, &p));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxFreeMem(nic(), nullptr));
    int on_stack = 0;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxFreeMem(nic(), &on_stack)) << "not from VipxAllocMem";
    VT_ASSERT_OK(VipxAllocMem(nic(), 100, &p));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxFreeMem(forged_handle(), p));
    VT_EXPECT_OK(VipxFreeMem(nic(), p));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxFreeMem(nic(), p)) << "freed twice";
}

} // namespace

namespace {

// A free, page-aligned range of `len` bytes in this process (found by mapping
// it once and giving it back).
void *free_range(size_t len) {
    void *p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    munmap(p, len);
    return p;
}

// VipxAllocMemAt: memory exactly where asked (a Split-C heap sits at one
// address in every process), sparse, zeroed, registrable; never over a mapping.
TEST(NicMem, VipxAllocMemAtMapsExactlyThereAndSparsely) {
    const size_t big = size_t(1) << 30; // 1 GiB reserved; only what is touched costs memory
    void *want = free_range(big);
    ASSERT_NE(want, nullptr);
    VT_ASSERT_OK(VipxAllocMemAt(nic(), want, big));
    auto *b = static_cast<uint8_t *>(want);
    EXPECT_EQ(b[0], 0);
    EXPECT_EQ(b[big - 1], 0);
    b[0] = 1;
    b[big / 2] = 2;
    b[big - 1] = 3;
    VIP_MEM_ATTRIBUTES a{nullptr, VIP_TRUE, VIP_TRUE};
    VIP_MEM_HANDLE mh;
    VT_EXPECT_OK(VipRegisterMem(nic(), b + 4096, 1 << 20, &a, &mh));
    VT_EXPECT_OK(VipDeregisterMem(nic(), b + 4096, mh));
    // The range is taken now: a second allocation over any page of it is refused.
    VT_EXPECT_RC(VIP_ERROR_RESOURCE, VipxAllocMemAt(nic(), b + big / 2, 4096));
    VT_EXPECT_OK(VipxFreeMem(nic(), want));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxFreeMem(nic(), want)) << "freed twice";
}

TEST(NicMem, VipxAllocMemAtRefusesBadArguments) {
    void *want = free_range(1 << 16);
    ASSERT_NE(want, nullptr);
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxAllocMemAt(nic(), nullptr, 4096));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxAllocMemAt(nic(), static_cast<char *>(want) + 8, 4096)) << "unaligned";
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxAllocMemAt(nic(), want, 0));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxAllocMemAt(forged_handle(), want, 4096));
    // Over memory the program already has (its own stack page): refused, and the stack is untouched.
    int on_stack = 42;
    void *page = reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(&on_stack) & ~uintptr_t(4095));
    VT_EXPECT_RC(VIP_ERROR_RESOURCE, VipxAllocMemAt(nic(), page, 4096));
    EXPECT_EQ(on_stack, 42);
}

} // namespace
