// names.cpp - see names.hpp.  Not on the data path: lookups parse the
// environment each time, so a launcher's (or a test's) map is always current.
#include "names.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace vipl::api::names {

namespace {
std::string lower(std::string_view s) {
    std::string o(s);
    for (char &c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return o;
}

// Same host: equal ignoring case, or one is the other's first label.
bool same_host(std::string_view a, std::string_view b) {
    if (a.empty() || b.empty()) return false;
    const std::string x = lower(a), y = lower(b);
    if (x == y) return true;
    const bool xd = x.find('.') != std::string::npos, yd = y.find('.') != std::string::npos;
    if (xd == yd) return false; // two different FQDNs, or two different short names
    const std::string &full = xd ? x : y, &brief = xd ? y : x;
    return full.compare(0, brief.size(), brief) == 0 && full[brief.size()] == '.';
}

bool is_loopback(std::string_view n) {
    const std::string l = lower(n);
    return l == "localhost" || l == "localhost.localdomain" || l == "127.0.0.1" || l == "::1" || l == "ip6-localhost";
}

// A decimal rank in [0, size), the whole of s.
bool parse_rank(std::string_view s, int size, int *out) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
    const int r = std::atoi(std::string(s).c_str());
    if (r >= size) return false;
    *out = r;
    return true;
}

std::string host_of(const Job &job, int r) {
    if (r < 0 || r >= job.size) return {};
    return job.hosts[static_cast<size_t>(r)];
}

// Ranks on the host named `host`, lowest first.
std::vector<int> ranks_on(const Job &job, std::string_view host) {
    std::vector<int> out;
    for (int r = 0; r < job.size; ++r)
        if (same_host(host_of(job, r), host)) out.push_back(r);
    return out;
}
} // namespace

std::vector<std::string> parse_hosts(std::string_view map, int size) {
    std::vector<std::string> out;
    while (!map.empty() && static_cast<int>(out.size()) < size) {
        const size_t comma = map.find(',');
        std::string_view item = map.substr(0, comma);
        map = comma == std::string_view::npos ? std::string_view{} : map.substr(comma + 1);
        long count = 1;
        if (const size_t star = item.rfind('*'); star != std::string_view::npos) {
            count = std::strtol(std::string(item.substr(star + 1)).c_str(), nullptr, 10);
            item = item.substr(0, star);
        }
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
        for (long i = 0; i < count && static_cast<int>(out.size()) < size; ++i) out.emplace_back(item);
        if (comma == std::string_view::npos) break;
    }
    out.resize(static_cast<size_t>(size));
    return out;
}

Job current_job(int rank, int size) {
    Job j;
    j.rank = rank < 0 ? 0 : rank; // outside a job: a job of one
    j.size = size < j.rank + 1 ? j.rank + 1 : size;
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) == 0) j.self_host = buf;
    const char *map = std::getenv("VIASTACK_HOSTS");
    j.hosts = parse_hosts(map ? map : "", j.size);
    std::string &mine = j.hosts[static_cast<size_t>(j.rank)];
    if (mine.empty()) mine = j.self_host;
    return j;
}

int resolve(const Job &job, std::string_view name, unsigned long index) {
    int r = -1;
    if (name.substr(0, 4) == "node" && parse_rank(name.substr(4), job.size, &r)) return index == 0 ? r : -1;
    if (parse_rank(name, job.size, &r)) return index == 0 ? r : -1;
    if (const size_t hash = name.rfind('#'); hash != std::string_view::npos) {
        std::string_view host = name.substr(0, hash);
        if (!parse_rank(name.substr(hash + 1), job.size, &r) || index != 0) return -1;
        const bool here = is_loopback(host) || same_host(host, job.self_host);
        const std::string rh = host_of(job, r);
        if (same_host(rh, host) || (here && same_host(rh, host_of(job, job.rank)))) return r;
        return -1;
    }
    // This host under any of its names: the ranks sharing this rank's host.
    std::string host(name);
    if (is_loopback(name) || same_host(name, job.self_host)) host = host_of(job, job.rank);
    const std::vector<int> rs = ranks_on(job, host);
    return index < rs.size() ? rs[index] : -1;
}

std::string name_of(const Job &job, int rank) {
    const std::string h = host_of(job, rank);
    if (h.empty()) return "node" + std::to_string(rank);
    if (ranks_on(job, h).size() == 1) return h;
    return h + "#" + std::to_string(rank);
}

} // namespace vipl::api::names
