// isolation_test - another local user can neither read, join nor inject into a
// job's shared-memory files (the bootstrap segment, nicfw's wire), and a name
// pre-created in /dev/shm (a foreign file, a symlink, a file other users may
// open) is refused with a message naming the path and the fix, never followed.
// (vipl/log/viastack_shm.hpp; docs/security.md.)
//
// The cross-user tests need root: they create a throw-away system user
// (useradd), run isolation_probe as that user (setpriv) and delete the user
// again.  Without root they are skipped with a message; the same-user tests
// (symlink, loose mode, fresh files are 0600) run for everyone.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "boot_segment.hpp"
#include "name_service.hpp"
#include "wire.hpp"

namespace {

// A job id no other test (or run) uses.
std::string fresh_job(const char *what) {
    static int n = 0;
    return std::string("iso-") + what + "-" + std::to_string(getpid()) + "-" + std::to_string(++n);
}
std::string wire_path(const std::string &job) { return "/dev/shm/viastack-" + job + "-wire"; }
std::string boot_path(const std::string &job) { return "/dev/shm/viastack-" + job + "-boot"; }

// The message opening the job's wire fails with ("" if it opened).
std::string wire_error(const std::string &job) {
    try {
        nicfw::Wire w(job, 2, 64 * 1024);
        return "";
    } catch (const std::runtime_error &e) { return e.what(); }
}
std::string boot_error(const std::string &job) {
    viastack::boot::Segment s;
    std::string err;
    return s.open(job, 2, &err) ? "" : err;
}

// A file the attacker points a symlink at: it must stay as it is.
struct Victim {
    std::string path = "/tmp/viastack-iso-victim-" + std::to_string(getpid());
    Victim() { std::ofstream(path) << "untouched"; }
    ~Victim() { std::remove(path.c_str()); }
    std::string text() const {
        std::ifstream f(path);
        std::string s;
        std::getline(f, s);
        return s;
    }
    off_t size() const {
        struct stat st {};
        return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
    }
};

struct Cleanup {
    std::string job;
    ~Cleanup() { viastack::boot::unlink_job_files(job); }
};

TEST(Isolation, FreshFilesArePrivateToTheOwner) {
    const std::string job = fresh_job("fresh");
    Cleanup c{job};
    nicfw::Wire first(job, 2, 64 * 1024);
    nicfw::Wire second(job, 2, 64 * 1024); // a second rank joins the same wire
    viastack::boot::Segment seg;
    std::string err;
    ASSERT_TRUE(seg.open(job, 2, &err)) << err;
    for (const std::string &p : {wire_path(job), boot_path(job)}) {
        struct stat st {};
        ASSERT_EQ(lstat(p.c_str(), &st), 0) << p;
        EXPECT_TRUE(S_ISREG(st.st_mode)) << p;
        EXPECT_EQ(st.st_mode & 07777, 0600u) << p;
        EXPECT_EQ(st.st_uid, geteuid()) << p;
    }
}

TEST(Isolation, SymlinkIsRefusedNotFollowed) {
    Victim v;
    for (bool wire : {true, false}) {
        const std::string job = fresh_job("link");
        Cleanup c{job};
        const std::string p = wire ? wire_path(job) : boot_path(job);
        ASSERT_EQ(symlink(v.path.c_str(), p.c_str()), 0);
        const std::string e = wire ? wire_error(job) : boot_error(job);
        EXPECT_NE(e.find(p), std::string::npos) << e;
        EXPECT_NE(e.find("symbolic link"), std::string::npos) << e;
        EXPECT_NE(e.find("rm -f " + p), std::string::npos) << e; // says what to do
        EXPECT_EQ(v.text(), "untouched");
        EXPECT_EQ(v.size(), 9);
    }
}

TEST(Isolation, FileOthersMayOpenIsRefused) {
    for (bool wire : {true, false}) {
        const std::string job = fresh_job("mode");
        Cleanup c{job};
        const std::string p = wire ? wire_path(job) : boot_path(job);
        std::ofstream(p).flush();
        ASSERT_EQ(chmod(p.c_str(), 0644), 0);
        const std::string e = wire ? wire_error(job) : boot_error(job);
        EXPECT_NE(e.find(p), std::string::npos) << e;
        EXPECT_NE(e.find("mode is 0644"), std::string::npos) << e;
    }
}

TEST(Isolation, HardLinkedFileIsRefused) {
    const std::string job = fresh_job("hard");
    Cleanup c{job};
    const std::string p = boot_path(job), other = "/dev/shm/viastack-" + job + "-other";
    std::ofstream(p).flush();
    ASSERT_EQ(chmod(p.c_str(), 0600), 0);
    ASSERT_EQ(link(p.c_str(), other.c_str()), 0);
    const std::string e = boot_error(job);
    EXPECT_NE(e.find("hard links"), std::string::npos) << e;
}

// ---- the name service's rank directory (vipl/providers/common/name_service.cpp) --
// Entries /dev/shm/viastack-<provider>-<job>-<device>-<rank>: a rank's NIC
// address, which other ranks connect to.  A planted entry would redirect them.
vipl::common::Job ns_job(int rank, const std::string &id) {
    vipl::common::Job j;
    j.rank = rank;
    j.size = 2;
    j.id = id;
    return j;
}
std::string ns_path(const std::string &job, int rank) {
    return "/dev/shm/viastack-isotest-" + job + "-dev-" + std::to_string(rank);
}
struct NsCleanup {
    std::string job;
    ~NsCleanup() {
        for (int r = 0; r < 2; r++) std::remove(ns_path(job, r).c_str());
    }
};

TEST(Isolation, NameServiceEntryIsPrivateAndReplacesOnlyItsOwn) {
    const std::string job = fresh_job("ns");
    NsCleanup c{job};
    const std::string p = ns_path(job, 0);
    { // a stale private entry of this user (a killed job) is replaced
        std::ofstream(p) << "0000";
        ASSERT_EQ(chmod(p.c_str(), 0600), 0);
    }
    vipl::common::RankDirectory r0("isotest", "dev", ns_job(0, job)), r1("isotest", "dev", ns_job(1, job));
    std::string err;
    ASSERT_TRUE(r0.publish({1, 2, 3}, &err)) << err;
    struct stat st {};
    ASSERT_EQ(lstat(p.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(st.st_uid, geteuid());
    std::vector<uint8_t> got;
    ASSERT_TRUE(r1.find(0, &got, &err)) << err;
    EXPECT_EQ(got, (std::vector<uint8_t>{1, 2, 3}));
}

TEST(Isolation, NameServiceSymlinkIsRefusedNotFollowed) {
    Victim v;
    const std::string job = fresh_job("nslink");
    NsCleanup c{job};
    const std::string p0 = ns_path(job, 0), p1 = ns_path(job, 1);
    ASSERT_EQ(symlink(v.path.c_str(), p0.c_str()), 0);
    ASSERT_EQ(symlink(v.path.c_str(), p1.c_str()), 0);
    vipl::common::RankDirectory r0("isotest", "dev", ns_job(0, job));
    std::string err;
    EXPECT_FALSE(r0.publish({1, 2, 3}, &err)); // the writer refuses its own name
    EXPECT_NE(err.find(p0), std::string::npos) << err;
    EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
    EXPECT_NE(err.find("rm -f " + p0), std::string::npos) << err;
    std::vector<uint8_t> got;
    err.clear();
    EXPECT_FALSE(r0.wait_for(1, 5000, &got, &err)); // a reader refuses another rank's, at once
    EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
    EXPECT_EQ(v.text(), "untouched");
    struct stat st {};
    ASSERT_EQ(lstat(p0.c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the planted link was replaced, not refused";
}

TEST(Isolation, NameServiceEntryOthersMayWriteIsRefused) {
    const std::string job = fresh_job("nsmode");
    NsCleanup c{job};
    const std::string p0 = ns_path(job, 0), p1 = ns_path(job, 1);
    for (const std::string &p : {p0, p1}) {
        std::ofstream(p) << "0a0b0c"; // an address another user wants the job to use
        ASSERT_EQ(chmod(p.c_str(), 0666), 0);
    }
    vipl::common::RankDirectory r0("isotest", "dev", ns_job(0, job));
    std::string err;
    EXPECT_FALSE(r0.publish({1, 2, 3}, &err));
    EXPECT_NE(err.find(p0 + " refused"), std::string::npos) << err;
    EXPECT_NE(err.find("mode is 0666"), std::string::npos) << err;
    std::vector<uint8_t> got;
    err.clear();
    EXPECT_FALSE(r0.find(1, &got, &err));
    EXPECT_NE(err.find("mode is 0666"), std::string::npos) << err;
    EXPECT_EQ(r0.rank_of({0x0a, 0x0b, 0x0c}), -1) << "a planted entry named a rank";
    if (geteuid() == 0) { // another user's private file: as root, chown one
        ASSERT_EQ(chmod(p1.c_str(), 0600), 0);
        ASSERT_EQ(chown(p1.c_str(), 65534, 65534), 0);
        err.clear();
        EXPECT_FALSE(r0.find(1, &got, &err));
        EXPECT_NE(err.find("belongs to uid 65534"), std::string::npos) << err;
    }
}

// ---- a second local user (root only) ----------------------------------------

class OtherUser : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (geteuid() != 0) return;
        name_ = "vsiso" + std::to_string(getpid() % 1000000);
        const std::string add = "useradd --system --no-create-home --user-group --shell /usr/sbin/nologin " + name_;
        if (std::system(add.c_str()) != 0) {
            name_.clear();
            return;
        }
        if (const passwd *pw = getpwnam(name_.c_str())) {
            uid_ = pw->pw_uid;
            gid_ = pw->pw_gid;
        }
        // The probe goes where the other user can run it (the build tree may be private).
        char tmpl[] = "/tmp/viastack-iso-XXXXXX";
        if (const char *d = mkdtemp(tmpl)) {
            dir_ = d;
            chmod(d, 0755);
            probe_ = dir_ + "/isolation_probe";
            const std::string cp = "cp " PROBE_PATH " " + probe_ + " && chmod 0755 " + probe_;
            if (std::system(cp.c_str()) != 0) probe_.clear();
        }
    }
    static void TearDownTestSuite() {
        if (!name_.empty()) std::system(("userdel " + name_ + " 2>/dev/null").c_str());
        if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
    }
    void SetUp() override {
        if (geteuid() != 0)
            GTEST_SKIP() << "needs root (creates a throw-away user with useradd); run as root, as CI does";
        ASSERT_FALSE(name_.empty()) << "useradd failed";
        ASSERT_NE(uid_, 0u);
        ASSERT_FALSE(probe_.empty()) << "cannot copy isolation_probe to /tmp";
    }
    // Runs the probe as the other user; its exit code.
    static int as_other(const std::string &args) {
        const std::string cmd = "setpriv --reuid=" + std::to_string(uid_) + " --regid=" + std::to_string(gid_) +
            " --clear-groups -- " + probe_ + " " + args;
        const int st = std::system(cmd.c_str());
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    }
    static inline std::string name_, dir_, probe_;
    static inline uid_t uid_ = 0;
    static inline gid_t gid_ = 0;
};

TEST_F(OtherUser, CannotOpenOrMapAJobsFiles) {
    const std::string job = fresh_job("open");
    Cleanup c{job};
    nicfw::Wire w(job, 2, 64 * 1024);
    viastack::boot::Segment seg;
    std::string err;
    ASSERT_TRUE(seg.open(job, 2, &err)) << err;
    // The names are visible (ls /dev/shm), the contents are not.
    EXPECT_EQ(as_other("open " + wire_path(job) + " " + boot_path(job)), 0) << "the other user opened a job's segment";
}

TEST_F(OtherUser, PreCreatedNamesAreRefused) {
    Victim v;
    const std::string job = fresh_job("plant");
    Cleanup c{job};
    // The attacker prepares both names before the job starts: a file of its own
    // (to read what the job writes) and a symlink (to make the job write elsewhere).
    ASSERT_EQ(as_other("plant-file " + wire_path(job)), 0);
    ASSERT_EQ(chmod(v.path.c_str(), 0644), 0);
    ASSERT_EQ(as_other("plant-link " + boot_path(job) + " " + v.path), 0);
    const std::string we = wire_error(job);
    EXPECT_NE(we.find(wire_path(job)), std::string::npos) << we;
    EXPECT_NE(we.find("belongs to uid " + std::to_string(uid_)), std::string::npos) << we;
    const std::string be = boot_error(job);
    EXPECT_NE(be.find(boot_path(job)), std::string::npos) << be;
    EXPECT_NE(be.find("symbolic link"), std::string::npos) << be;
    EXPECT_EQ(v.text(), "untouched");
    EXPECT_EQ(v.size(), 9);
    // The planted file stayed empty: nothing of the job went into it.
    struct stat st {};
    ASSERT_EQ(stat(wire_path(job).c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 0);
}

} // namespace
