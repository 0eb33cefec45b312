// name_service.cpp - see name_service.hpp.
#include "name_service.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace vipl::common {

namespace {
std::string to_hex(const std::vector<uint8_t> &b) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (uint8_t x : b) {
        s += digits[x >> 4];
        s += digits[x & 15];
    }
    return s;
}

bool from_hex(const std::string &s, std::vector<uint8_t> *out) {
    if (s.empty() || s.size() % 2)
        return false;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    out->clear();
    for (size_t i = 0; i < s.size(); i += 2) {
        const int hi = nibble(s[i]), lo = nibble(s[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out->push_back(uint8_t(hi << 4 | lo));
    }
    return true;
}
} // namespace

bool put_host_address(VIP_NET_ADDRESS *out, const std::vector<uint8_t> &bytes) {
    if (bytes.size() > VIP_MAX_HOST_ADDRESS_LEN)
        return false;
    out->HostAddressLen = uint16_t(bytes.size());
    out->DiscriminatorLen = 0;
    if (!bytes.empty())
        std::memcpy(out->HostAddress, bytes.data(), bytes.size());
    return true;
}

std::vector<uint8_t> host_address_bytes(const VIP_NET_ADDRESS *a) {
    return std::vector<uint8_t>(a->HostAddress, a->HostAddress + a->HostAddressLen);
}

void put_rank_number(int rank, VIP_NET_ADDRESS *out) {
    out->HostAddressLen = 2;
    out->DiscriminatorLen = 0;
    out->HostAddress[0] = VIP_UINT8(rank & 0xff);
    out->HostAddress[1] = VIP_UINT8((rank >> 8) & 0xff);
}

int rank_number_of(const VIP_NET_ADDRESS *a, int size) {
    if (a->HostAddressLen != 2)
        return -1;
    const int r = a->HostAddress[0] | a->HostAddress[1] << 8;
    return r < size ? r : -1;
}

VIP_RETURN autodiscovery(VIP_AUTODISCOVERY_LIST *l, int size,
                         const std::function<VIP_RETURN(int, VIP_NET_ADDRESS *)> &address_of) {
    if (l->NumAdAddrs && !l->ADAddrArray)
        return VIP_INVALID_PARAMETER;
    const VIP_ULONG room = l->NumAdAddrs;
    for (VIP_ULONG i = 0; i < room && i < VIP_ULONG(size); ++i) {
        if (!l->ADAddrArray[i])
            return VIP_INVALID_PARAMETER;
        if (VIP_RETURN rc = address_of(int(i), l->ADAddrArray[i]); rc != VIP_SUCCESS)
            return rc;
    }
    l->NumAdAddrs = VIP_ULONG(size);
    l->NumberOfHops = 1;
    return VIP_SUCCESS;
}

RankDirectory::RankDirectory(std::string_view provider, std::string_view device, const Job &job)
    : prefix_("/dev/shm/viastack-" + std::string(provider) + "-" + job.id + "-" + std::string(device) + "-"),
      job_(job) {}

RankDirectory::~RankDirectory() {
    if (!published_.empty())
        std::remove(published_.c_str());
}

std::string RankDirectory::path_of(int rank) const { return prefix_ + std::to_string(rank); }

void RankDirectory::publish(const std::vector<uint8_t> &address) {
    mine_ = address;
    if (job_.id.empty())
        return; // a job of one: nobody else asks
    const std::string path = path_of(job_.rank), tmp = path + ".tmp";
    // Written whole under another name, then renamed: a reader never sees half.
    if (FILE *f = std::fopen(tmp.c_str(), "w")) {
        std::fputs(to_hex(address).c_str(), f);
        std::fclose(f);
        if (std::rename(tmp.c_str(), path.c_str()) == 0)
            published_ = path;
    }
}

bool RankDirectory::find(int rank, std::vector<uint8_t> *address) const {
    if (rank == job_.rank && !mine_.empty()) {
        *address = mine_;
        return true;
    }
    if (job_.id.empty() || rank < 0 || rank >= job_.size)
        return false;
    std::ifstream f(path_of(rank));
    std::string text;
    return bool(f >> text) && from_hex(text, address);
}

bool RankDirectory::wait_for(int rank, int wait_ms, std::vector<uint8_t> *address) const {
    const bool in_job = !job_.id.empty() && rank >= 0 && rank < job_.size;
    for (int waited = 0; !find(rank, address); waited += 10) {
        if (!in_job || waited >= wait_ms)
            return false; // no such rank, or it never opened its NIC
        usleep(10000);
    }
    return true;
}

int RankDirectory::rank_of(const std::vector<uint8_t> &address) const {
    if (!mine_.empty() && address == mine_)
        return job_.rank;
    std::vector<uint8_t> other;
    for (int r = 0; r < job_.size; r++) // a few small files: the name service is not the data path
        if (r != job_.rank && find(r, &other) && other == address)
            return r;
    return -1;
}

} // namespace vipl::common
