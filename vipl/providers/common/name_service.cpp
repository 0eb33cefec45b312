// name_service.cpp - see name_service.hpp.
#include "name_service.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "viastack_shm.hpp"

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
    if (s.empty() || s.size() % 2) return false;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    out->clear();
    for (size_t i = 0; i < s.size(); i += 2) {
        const int hi = nibble(s[i]), lo = nibble(s[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out->push_back(uint8_t(hi << 4 | lo));
    }
    return true;
}
} // namespace

bool put_host_address(VIP_NET_ADDRESS *out, const std::vector<uint8_t> &bytes) {
    if (bytes.size() > VIP_MAX_HOST_ADDRESS_LEN) return false;
    out->HostAddressLen = uint16_t(bytes.size());
    out->DiscriminatorLen = 0;
    if (!bytes.empty()) std::memcpy(out->HostAddress, bytes.data(), bytes.size());
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
    if (a->HostAddressLen != 2) return -1;
    const int r = a->HostAddress[0] | a->HostAddress[1] << 8;
    return r < size ? r : -1;
}

VIP_RETURN autodiscovery(VIP_AUTODISCOVERY_LIST *l, int size,
                         const std::function<VIP_RETURN(int, VIP_NET_ADDRESS *)> &address_of) {
    if (l->NumAdAddrs && !l->ADAddrArray) return VIP_INVALID_PARAMETER;
    const VIP_ULONG room = l->NumAdAddrs;
    for (VIP_ULONG i = 0; i < room && i < VIP_ULONG(size); ++i) {
        if (!l->ADAddrArray[i]) return VIP_INVALID_PARAMETER;
        if (VIP_RETURN rc = address_of(int(i), l->ADAddrArray[i]); rc != VIP_SUCCESS) return rc;
    }
    l->NumAdAddrs = VIP_ULONG(size);
    l->NumberOfHops = 1;
    return VIP_SUCCESS;
}

RankDirectory::RankDirectory(std::string_view provider, std::string_view device, const Job &job)
    : prefix_("/dev/shm/viastack-" + std::string(provider) + "-" + job.id + "-" + std::string(device) + "-"),
      job_(job) {}

RankDirectory::~RankDirectory() {
    if (!published_.empty()) std::remove(published_.c_str());
}

std::string RankDirectory::path_of(int rank) const { return prefix_ + std::to_string(rank); }

// /dev/shm is writable by every user: the entry is written under a fresh
// private name (mkostemp: O_EXCL, mode 0600) and renamed over the real one,
// which replaces a directory entry and never follows it.  A name already there
// is replaced only if it is this user's own private file (a killed job's);
// anything else -- a symbolic link, another user's file, a file others may
// open -- is refused, as viastack::shm::open_job_file refuses such names.
bool RankDirectory::publish(const std::vector<uint8_t> &address, std::string *err) {
    mine_ = address;
    if (job_.id.empty()) return true; // a job of one: nobody else asks
    const std::string path = path_of(job_.rank);
    const std::string fix = " Remove it (rm -f " + path +
        ") if it is a stale file of yours, or give the job "
        "another id (vipl-run picks an unpredictable one unless --job is given).";
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            *err = path +
                " is a symbolic link: refused (a viastack job never makes one, so someone may be "
                "redirecting the job's name service)." +
                fix;
            return false;
        }
        const int old = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        const std::string why = old < 0 ? std::string(std::strerror(errno)) : viastack::shm::private_file_problem(old);
        if (old >= 0) ::close(old);
        if (!why.empty()) {
            *err = path + " refused: " + why + "." + fix;
            return false;
        }
    }
    std::string tmp = path + ".XXXXXX";
    const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) {
        *err = "cannot create " + tmp + ": " + std::strerror(errno) + " (is /dev/shm mounted and writable?)";
        return false;
    }
    const std::string text = to_hex(address);
    const bool written = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    const int werr = errno;
    ::close(fd);
    if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = written ? errno : werr;
        ::unlink(tmp.c_str());
        *err = "cannot publish this NIC's address as " + path + ": " + std::strerror(e) +
            (e == EPERM || e == EACCES ? " (the name belongs to another user)." + fix : std::string());
        return false;
    }
    published_ = path;
    return true;
}

bool RankDirectory::find(int rank, std::vector<uint8_t> *address, std::string *err) const {
    if (rank == job_.rank && !mine_.empty()) {
        *address = mine_;
        return true;
    }
    if (job_.id.empty() || rank < 0 || rank >= job_.size) return false;
    const std::string path = path_of(rank);
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT && err)
            *err = path +
                (errno == ELOOP ? std::string(" is a symbolic link: refused (a viastack job never makes one)")
                                : std::string(": ") + std::strerror(errno));
        return false; // ENOENT: not published (yet)
    }
    const std::string why = viastack::shm::private_file_problem(fd);
    char buf[2 * 64 + 2];
    const ssize_t n = why.empty() ? ::read(fd, buf, sizeof buf) : 0;
    ::close(fd);
    if (!why.empty()) {
        if (err)
            *err = path + " refused: " + why +
                ". Another user may be injecting addresses into the job's "
                "name service; remove it (rm -f " +
                path + ") if it is yours.";
        return false;
    }
    // A NIC's address is at most 64 bytes: anything longer is not an entry.
    if (n <= 0 || size_t(n) == sizeof buf) return false;
    return from_hex(std::string(buf, size_t(n)), address);
}

bool RankDirectory::wait_for(int rank, int wait_ms, std::vector<uint8_t> *address, std::string *err) const {
    const bool in_job = !job_.id.empty() && rank >= 0 && rank < job_.size;
    std::string why;
    for (int waited = 0; !find(rank, address, &why); waited += 10) {
        if (!why.empty()) { // refused: waiting would not change it
            if (err) *err = why;
            return false;
        }
        if (!in_job || waited >= wait_ms) return false; // no such rank, or it never opened its NIC
        usleep(10000);
    }
    return true;
}

int RankDirectory::rank_of(const std::vector<uint8_t> &address) const {
    if (!mine_.empty() && address == mine_) return job_.rank;
    std::vector<uint8_t> other;
    for (int r = 0; r < job_.size; r++) // a few small files: the name service is not the data path
        if (r != job_.rank && find(r, &other) && other == address) return r;
    return -1;
}

} // namespace vipl::common
