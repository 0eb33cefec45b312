// name_service.hpp - a provider's half of the VIPL name service (the API
// layer's half, names <-> ranks, is vipl/src/names.hpp): a rank's host address
// and back, for both kinds of provider.
//
// How a provider uses it (Nic::rank_address, address_rank, query_system_management):
//
//   * A NIC whose address is its rank (nicfw: 2 bytes, little endian):
//       rank_address(r, out)  -> common::put_rank_number(r, out)
//       address_rank(a)       -> common::rank_number_of(a, job.size)
//   * A NIC whose address the device decides (verbs: IP and port): each rank
//     publishes its address in a RankDirectory when its NIC opens; other ranks
//     find it there, waiting a while for a rank that has not opened its NIC yet
//     (programs look up their server right after start-up, and the name
//     services of cLAN and M-VIA were static tables that always knew it):
//       common::RankDirectory dir("verbs", device, job);  dir.publish(my_bytes);
//       rank_address(r, out)  -> dir.wait_for(r, 10000, &bytes) then put_host_address(out, bytes)
//       address_rank(a)       -> dir.rank_of(host_address_bytes(a))
//   * VIP_SMI_AUTODISCOVERY over the job's ranks: common::autodiscovery().
//
// Not the data path: lookups read small files and may sleep.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "job.hpp"
#include "vipl.h"

namespace vipl::common {

// out's host address := bytes (DiscriminatorLen 0).  False if they do not fit.
bool put_host_address(VIP_NET_ADDRESS *out, const std::vector<uint8_t> &bytes);
std::vector<uint8_t> host_address_bytes(const VIP_NET_ADDRESS *a);

// Rank-numbered addresses: 2 bytes, little endian.
void put_rank_number(int rank, VIP_NET_ADDRESS *out);
// The rank a rank-numbered address names if it is in [0, size), else -1.
int rank_number_of(const VIP_NET_ADDRESS *a, int size);

// VipQuerySystemManagement(VIP_SMI_AUTODISCOVERY): on input l->NumAdAddrs is
// the room in l->ADAddrArray; on output it is the number of NICs of the job, of
// which min(room, size) were written by address_of(rank, entry).
VIP_RETURN autodiscovery(VIP_AUTODISCOVERY_LIST *l, int size,
                         const std::function<VIP_RETURN(int, VIP_NET_ADDRESS *)> &address_of);

// The host addresses the ranks of one job published for one device, as files
// /dev/shm/viastack-<provider>-<job>-<device>-<rank> (a job on one host),
// private to the job's user (docs/security.md).
// Outside a launched job (no job id) only this process's own address is known.
class RankDirectory {
public:
    RankDirectory(std::string_view provider, std::string_view device, const Job &job);
    ~RankDirectory(); // withdraws this rank's entry
    RankDirectory(const RankDirectory &) = delete;
    RankDirectory &operator=(const RankDirectory &) = delete;

    // This rank's address; written for the others inside a job, as a private
    // file (mode 0600, written under a fresh name and renamed).  False, with
    // *err naming the path and the fix, if the name is a symbolic link or a file
    // that is not this user's own private one: such a name is never followed.
    bool publish(const std::vector<uint8_t> &address, std::string *err);
    // The address `rank` published (this rank's own from memory).  An entry
    // that is a symbolic link or not this user's private file is refused:
    // false, with *err (when given) saying why; a missing one leaves *err alone.
    bool find(int rank, std::vector<uint8_t> *address, std::string *err = nullptr) const;
    // As find, waiting up to wait_ms for a rank of the job not published yet
    // (not for a refused entry).
    bool wait_for(int rank, int wait_ms, std::vector<uint8_t> *address, std::string *err = nullptr) const;
    // The rank that published `address`, or -1.
    int rank_of(const std::vector<uint8_t> &address) const;

    const Job &job() const { return job_; }

private:
    std::string path_of(int rank) const;
    std::string prefix_;
    Job job_;
    std::vector<uint8_t> mine_;
    std::string published_;
};

} // namespace vipl::common
