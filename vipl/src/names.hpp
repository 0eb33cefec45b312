// names.hpp - the VIPL name service's rules, one place for every provider.
//
// A name resolves to ranks of the job; the provider turns a rank into its host
// address and back (vipl_provider.hpp: Nic::rank_address / address_rank).  Names
// outside the job (the verbs provider's "host:port") are the provider's own.
//
//   nodeN, N          rank N (0 <= N < size)
//   HOST#N            rank N, if it runs on HOST
//   HOST              the ranks on HOST, lowest first; NameIndex picks one
//   localhost, 127.0.0.1, ::1, this host's name
//                     the ranks on this rank's host
//
// HOST matches a host name of the hosts map case-insensitively, and also when one
// of the two is the other's first label ("alpha" ~ "alpha.example.org"), since
// programs strip or add domains (Global Arrays' ARMCI VIA port does).  The hosts
// map is $VIASTACK_HOSTS: one entry per rank in rank order, "name" or "name*k"
// for k ranks in a row, an empty name for ranks whose host is not known
// ("*2,beta*2": ranks 2 and 3 on beta).  vipl-run sets it; without it only this
// rank's host is known (gethostname()).
//
// Back from a rank: its host name when it is the only rank on that host,
// "HOST#N" when several share it, "nodeN" when its host is unknown; each
// resolves to the same rank again.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vipl::api::names {

struct Job {
    int rank = 0; // this process (0 outside a job)
    int size = 1;
    std::string self_host;          // gethostname()
    std::vector<std::string> hosts; // size entries; "" = unknown
};

// The job as this process sees it: rank and size from the provider, the hosts
// map from $VIASTACK_HOSTS, this rank's host from gethostname() when the map
// does not say.
Job current_job(int rank, int size);
// Parses a hosts map ("a*2,b,,c") into exactly `size` entries.
std::vector<std::string> parse_hosts(std::string_view map, int size);

// The NameIndex-th rank `name` names, or -1.
int resolve(const Job &job, std::string_view name, unsigned long index);
// The name of `rank` (see above).
std::string name_of(const Job &job, int rank);

} // namespace vipl::api::names
