// The provider half of the name service (vipl/providers/common/name_service.hpp)
// and the job through vipl_boot (job.hpp).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "name_service.hpp"

namespace vc = vipl::common;

namespace {
// Room for an address with a few host bytes.
struct Addr {
    alignas(VIP_NET_ADDRESS) unsigned char mem[VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, 0)] = {};
    VIP_NET_ADDRESS *get() { return reinterpret_cast<VIP_NET_ADDRESS *>(mem); }
};

vc::Job job_of(int rank, int size, std::string id) {
    vc::Job j;
    j.rank = rank;
    j.size = size;
    j.id = std::move(id);
    return j;
}

std::string unique_job() { return "provtest" + std::to_string(getpid()); }
} // namespace

TEST(Job, AJobOfOneWithoutALauncher) {
    vc::Job j;
    j.rank = 5;
    ASSERT_TRUE(vc::discover_job(viastack::log::Layer::vipl, &j));
    EXPECT_EQ(j.rank, 0);
    EXPECT_EQ(j.size, 1);
    EXPECT_EQ(j.id, "");
}

TEST(RankNumbers, RoundTripAndRange) {
    Addr a;
    vc::put_rank_number(258, a.get());
    EXPECT_EQ(a.get()->HostAddressLen, 2);
    EXPECT_EQ(a.get()->DiscriminatorLen, 0);
    EXPECT_EQ(a.get()->HostAddress[0], 2);
    EXPECT_EQ(a.get()->HostAddress[1], 1);
    EXPECT_EQ(vc::rank_number_of(a.get(), 300), 258);
    EXPECT_EQ(vc::rank_number_of(a.get(), 258), -1); // not a rank of a job of 258
    a.get()->HostAddressLen = 3;
    EXPECT_EQ(vc::rank_number_of(a.get(), 300), -1);
}

TEST(HostAddress, PutAndRead) {
    Addr a;
    const std::vector<uint8_t> b{10, 0, 0, 1, 0x1f, 0x90};
    ASSERT_TRUE(vc::put_host_address(a.get(), b));
    EXPECT_EQ(vc::host_address_bytes(a.get()), b);
    EXPECT_FALSE(vc::put_host_address(a.get(), std::vector<uint8_t>(VIP_MAX_HOST_ADDRESS_LEN + 1)));
}

TEST(Autodiscovery, FillsWhatFitsAndCountsAll) {
    Addr a[2];
    VIP_NET_ADDRESS *arr[2] = {a[0].get(), a[1].get()};
    VIP_AUTODISCOVERY_LIST l{};
    l.ADAddrArray = arr;
    l.NumAdAddrs = 2;
    auto by_rank = [](int r, VIP_NET_ADDRESS *out) {
        vc::put_rank_number(r, out);
        return VIP_SUCCESS;
    };
    ASSERT_EQ(vc::autodiscovery(&l, 3, by_rank), VIP_SUCCESS);
    EXPECT_EQ(l.NumAdAddrs, 3u);
    EXPECT_EQ(l.NumberOfHops, 1u);
    EXPECT_EQ(vc::rank_number_of(a[1].get(), 3), 1);
    // No room: only the count.
    VIP_AUTODISCOVERY_LIST none{};
    ASSERT_EQ(vc::autodiscovery(&none, 3, by_rank), VIP_SUCCESS);
    EXPECT_EQ(none.NumAdAddrs, 3u);
    // Room claimed without an array, or a NULL entry.
    VIP_AUTODISCOVERY_LIST bad{};
    bad.NumAdAddrs = 1;
    EXPECT_EQ(vc::autodiscovery(&bad, 3, by_rank), VIP_INVALID_PARAMETER);
    arr[1] = nullptr;
    l.NumAdAddrs = 2;
    EXPECT_EQ(vc::autodiscovery(&l, 3, by_rank), VIP_INVALID_PARAMETER);
}

TEST(RankDirectory, RanksFindEachOther) {
    const std::string job = unique_job();
    const std::vector<uint8_t> a0{1, 2, 3}, a1{4, 5, 6, 7};
    std::vector<uint8_t> got;
    {
        vc::RankDirectory r0("test", "dev0", job_of(0, 3, job));
        vc::RankDirectory r1("test", "dev0", job_of(1, 3, job));
        EXPECT_FALSE(r1.find(0, &got)); // not published yet
        EXPECT_FALSE(r1.wait_for(0, 0, &got));
        std::string err;
        ASSERT_TRUE(r0.publish(a0, &err)) << err;
        ASSERT_TRUE(r1.publish(a1, &err)) << err;
        ASSERT_TRUE(r1.find(0, &got));
        EXPECT_EQ(got, a0);
        ASSERT_TRUE(r0.wait_for(1, 0, &got));
        EXPECT_EQ(got, a1);
        ASSERT_TRUE(r0.find(0, &got)); // its own
        EXPECT_EQ(got, a0);
        EXPECT_EQ(r0.rank_of(a1), 1);
        EXPECT_EQ(r1.rank_of(a1), 1);
        EXPECT_EQ(r0.rank_of({9, 9}), -1);
        EXPECT_FALSE(r0.wait_for(2, 0, &got));    // rank 2 never opened its NIC
        EXPECT_FALSE(r0.wait_for(3, 1000, &got)); // no such rank: no wait
        // Another device of the same job is another directory.
        vc::RankDirectory other("test", "dev1", job_of(2, 3, job));
        EXPECT_FALSE(other.find(0, &got));
    }
    // Gone with its NIC.
    vc::RankDirectory later("test", "dev0", job_of(2, 3, job));
    EXPECT_FALSE(later.find(0, &got));
    EXPECT_FALSE(later.find(1, &got));
}

TEST(RankDirectory, OutsideAJobOnlyItself) {
    vc::RankDirectory self("test", "dev0", job_of(0, 1, ""));
    std::vector<uint8_t> got;
    EXPECT_FALSE(self.find(0, &got)); // nothing published yet
    std::string err;
    ASSERT_TRUE(self.publish({7, 7}, &err)) << err;
    ASSERT_TRUE(self.find(0, &got));
    EXPECT_EQ(got, (std::vector<uint8_t>{7, 7}));
    EXPECT_EQ(self.rank_of({7, 7}), 0);
    EXPECT_FALSE(self.find(1, &got));
    // Nothing written for others.
    EXPECT_EQ(access("/dev/shm/viastack-test--dev0-0", F_OK), -1);
}
