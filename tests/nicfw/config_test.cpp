// config_test.cpp - Config::from_env (nicfw/src/config.cpp): every VIPL_NICFW_*
// variable's accepted values, and a std::runtime_error naming the variable (and
// the bad value) for anything else; the timing-profile parser.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "config.hpp"

using nicfw::Config;

namespace {

const char *const kVars[] = {"VIPL_NICFW_MODE",    "VIPL_NICFW_DOORBELL",    "VIPL_NICFW_RING_KB",
                             "VIPL_NICFW_CRC",     "VIPL_NICFW_PROGRESS",    "VIPL_NICFW_PROFILE",
                             "VIPL_NICFW_DMA_MIN", "VIPL_NICFW_DMA_MIN_SHM", "VIPL_NICFW_DIRECT_SEND"};

class ConfigEnv : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char *v : kVars) unsetenv(v);
    }
    void TearDown() override {
        for (const char *v : kVars) unsetenv(v);
    }
    static Config with(const char *var, const char *value) {
        setenv(var, value, 1);
        return Config::from_env();
    }
    // from_env must throw std::runtime_error whose message names the variable and
    // shows the offending text (the value, or the part of it that is wrong).
    static ::testing::AssertionResult refused(const char *var, const char *value, const char *shown = nullptr) {
        if (!shown) shown = value;
        setenv(var, value, 1);
        try {
            Config::from_env();
        } catch (const std::runtime_error &e) {
            unsetenv(var);
            const std::string msg = e.what();
            if (msg.find(var) == std::string::npos)
                return ::testing::AssertionFailure() << "message does not name " << var << ": " << msg;
            if (msg.find(std::string("'") + shown + "'") == std::string::npos)
                return ::testing::AssertionFailure() << "message does not show '" << shown << "': " << msg;
            return ::testing::AssertionSuccess() << msg;
        } catch (...) {
            unsetenv(var);
            return ::testing::AssertionFailure() << var << "=" << value << " threw something else";
        }
        unsetenv(var);
        return ::testing::AssertionFailure() << var << "=" << value << " was accepted";
    }
};

} // namespace

TEST_F(ConfigEnv, Defaults) {
    const Config c = Config::from_env();
    EXPECT_EQ(c.mode, nicfw::Mode::Inline);
    EXPECT_EQ(c.doorbell, nicfw::Doorbell::Fifo);
    EXPECT_EQ(c.ring_bytes, 1024u * 1024u);
    EXPECT_FALSE(c.crc); // off by default on the shared-memory wire
    EXPECT_FALSE(c.progress_thread);
    EXPECT_EQ(c.profile.name, "none");
    EXPECT_EQ(c.profile.send_ns + c.profile.recv_ns + c.profile.wire_ns + c.profile.gap_ns, 0u);
}

TEST_F(ConfigEnv, EmptyValueMeansDefault) {
    for (const char *v : kVars) setenv(v, "", 1);
    const Config c = Config::from_env();
    EXPECT_EQ(c.mode, nicfw::Mode::Inline);
    EXPECT_EQ(c.ring_bytes, 1024u * 1024u);
    EXPECT_FALSE(c.crc); // off by default on the shared-memory wire
}

TEST_F(ConfigEnv, Mode) {
    EXPECT_EQ(with("VIPL_NICFW_MODE", "inline").mode, nicfw::Mode::Inline);
    EXPECT_EQ(with("VIPL_NICFW_MODE", "thread").mode, nicfw::Mode::Thread);
    EXPECT_TRUE(refused("VIPL_NICFW_MODE", "threads"));
    EXPECT_TRUE(refused("VIPL_NICFW_MODE", "Inline"));
    EXPECT_TRUE(refused("VIPL_NICFW_MODE", "1"));
}

TEST_F(ConfigEnv, Doorbell) {
    EXPECT_EQ(with("VIPL_NICFW_DOORBELL", "fifo").doorbell, nicfw::Doorbell::Fifo);
    EXPECT_EQ(with("VIPL_NICFW_DOORBELL", "emulated").doorbell, nicfw::Doorbell::Emulated);
    EXPECT_TRUE(refused("VIPL_NICFW_DOORBELL", "lanai4"));
    EXPECT_TRUE(refused("VIPL_NICFW_DOORBELL", "FIFO"));
}

TEST_F(ConfigEnv, DirectSend) {
    EXPECT_TRUE(Config::from_env().direct_send); // on by default
    EXPECT_FALSE(with("VIPL_NICFW_DIRECT_SEND", "0").direct_send);
    EXPECT_TRUE(with("VIPL_NICFW_DIRECT_SEND", "1").direct_send);
    EXPECT_TRUE(refused("VIPL_NICFW_DIRECT_SEND", "yes"));
    EXPECT_TRUE(refused("VIPL_NICFW_DIRECT_SEND", "2"));
}

TEST_F(ConfigEnv, RingKb) {
    EXPECT_EQ(with("VIPL_NICFW_RING_KB", "1024").ring_bytes, 1024u * 1024u);
    EXPECT_EQ(with("VIPL_NICFW_RING_KB", "4096").ring_bytes, 4096u * 1024u);
    EXPECT_EQ(with("VIPL_NICFW_RING_KB", "1048576").ring_bytes, size_t(1) << 30);
    EXPECT_TRUE(refused("VIPL_NICFW_RING_KB", "1023"));
    EXPECT_TRUE(refused("VIPL_NICFW_RING_KB", "1048577"));
    EXPECT_TRUE(refused("VIPL_NICFW_RING_KB", "0"));
    EXPECT_TRUE(refused("VIPL_NICFW_RING_KB", "-1"));
    EXPECT_TRUE(refused("VIPL_NICFW_RING_KB", "2048k"));
    EXPECT_TRUE(refused("VIPL_NICFW_RING_KB", "lots"));
    EXPECT_TRUE(refused("VIPL_NICFW_RING_KB", "99999999999999999999999"));
}

TEST_F(ConfigEnv, Crc) {
    EXPECT_TRUE(with("VIPL_NICFW_CRC", "1").crc);
    EXPECT_FALSE(with("VIPL_NICFW_CRC", "0").crc);
    EXPECT_TRUE(refused("VIPL_NICFW_CRC", "2"));
    EXPECT_TRUE(refused("VIPL_NICFW_CRC", "yes"));
    EXPECT_TRUE(refused("VIPL_NICFW_CRC", "off"));
}

TEST_F(ConfigEnv, Progress) {
    EXPECT_TRUE(with("VIPL_NICFW_PROGRESS", "1").progress_thread);
    EXPECT_FALSE(with("VIPL_NICFW_PROGRESS", "0").progress_thread);
    EXPECT_TRUE(refused("VIPL_NICFW_PROGRESS", "true"));
    EXPECT_TRUE(refused("VIPL_NICFW_PROGRESS", "01"));
}

// lanai4 and lanai7 are the hardware-cost model (cost_model.hpp), not LogP
// delays: no synthetic delay, the model on, the board's doorbell by default.
TEST_F(ConfigEnv, ProfileNamedModels) {
    nicfw::Profile p = with("VIPL_NICFW_PROFILE", "none").profile;
    EXPECT_EQ(p.send_ns + p.recv_ns + p.wire_ns + p.gap_ns, 0u);
    EXPECT_FALSE(p.cost.enabled);
    Config c = with("VIPL_NICFW_PROFILE", "lanai7");
    p = c.profile;
    EXPECT_EQ(p.name, "lanai7");
    EXPECT_EQ(p.send_ns + p.recv_ns + p.wire_ns + p.gap_ns, 0u);
    EXPECT_TRUE(p.cost.enabled);
    EXPECT_EQ(p.cost.dma_setup_ns, 2500u); // [Begel01] section 8: a null DMA takes 2-3 us
    EXPECT_EQ(c.doorbell, nicfw::Doorbell::Fifo);
    c = with("VIPL_NICFW_PROFILE", "lanai4");
    EXPECT_TRUE(c.profile.cost.enabled);
    EXPECT_EQ(c.doorbell, nicfw::Doorbell::Emulated);    // the LANai 4 emulates its doorbells
    EXPECT_LT(c.profile.cost.dma_mb_s, p.cost.dma_mb_s); // 32-bit PCI
    // An explicit VIPL_NICFW_DOORBELL wins over the profile's.
    setenv("VIPL_NICFW_DOORBELL", "fifo", 1);
    EXPECT_EQ(with("VIPL_NICFW_PROFILE", "lanai4").doorbell, nicfw::Doorbell::Fifo);
    // synthetic: leaves the cost model off.
    EXPECT_FALSE(with("VIPL_NICFW_PROFILE", "synthetic:os=5").profile.cost.enabled);
}

TEST_F(ConfigEnv, ProfileSynthetic) {
    nicfw::Profile p = with("VIPL_NICFW_PROFILE", "synthetic:os=20000,or=1500,L=50000,g=30000").profile;
    EXPECT_EQ(p.send_ns, 20000u);
    EXPECT_EQ(p.recv_ns, 1500u);
    EXPECT_EQ(p.wire_ns, 50000u);
    EXPECT_EQ(p.gap_ns, 30000u);
    // Any subset, any order; the others are 0.
    p = with("VIPL_NICFW_PROFILE", "synthetic:g=7,os=5").profile;
    EXPECT_EQ(p.send_ns, 5u);
    EXPECT_EQ(p.gap_ns, 7u);
    EXPECT_EQ(p.recv_ns, 0u);
    EXPECT_EQ(p.wire_ns, 0u);
    p = with("VIPL_NICFW_PROFILE", "synthetic:L=100000000").profile; // the largest delay
    EXPECT_EQ(p.wire_ns, 100000000u);
    p = with("VIPL_NICFW_PROFILE", "synthetic:os=0,or=0,L=0,g=0").profile;
    EXPECT_EQ(p.send_ns + p.recv_ns + p.wire_ns + p.gap_ns, 0u);
}

TEST_F(ConfigEnv, ProfileRefusesBadValues) {
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "lanai5"));
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "LANAI4"));
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "os=20000"));           // missing "synthetic:"
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "synthetic:x=1", "x")); // unknown key
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "synthetic:l=1", "l")); // keys are case-sensitive
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "synthetic:os", "os")); // not key=ns
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "synthetic:os=", ""));  // no number
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "synthetic:os=1us", "1us"));
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "synthetic:os=-5", "-5"));
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "synthetic:L=100000001", "100000001")); // over 0.1 s
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "synthetic:os=1,,g=2", ""));
    EXPECT_TRUE(refused("VIPL_NICFW_PROFILE", "file:/nonexistent/profile.txt", "/nonexistent/profile.txt"));
}

// The bulk path's crossover: a byte count (K/M suffix) or off; MaxTransferSize follows.
TEST_F(ConfigEnv, DmaMin) {
    EXPECT_EQ(Config::from_env().dma_min, nicfw::kDefaultDmaMin);
    EXPECT_EQ(Config::from_env().max_transfer(), nicfw::kMaxTransfer);
    EXPECT_EQ(with("VIPL_NICFW_DMA_MIN", "4096").dma_min, 4096u);
    EXPECT_EQ(with("VIPL_NICFW_DMA_MIN", "32K").dma_min, 32768u);
    EXPECT_EQ(with("VIPL_NICFW_DMA_MIN", "1M").dma_min, 1u << 20);
    const Config off = with("VIPL_NICFW_DMA_MIN", "off");
    EXPECT_EQ(off.dma_min, 0u);
    EXPECT_EQ(off.max_transfer(), nicfw::kMaxStagedTransfer);
    EXPECT_TRUE(refused("VIPL_NICFW_DMA_MIN", "big"));
    EXPECT_TRUE(refused("VIPL_NICFW_DMA_MIN", "12Q"));
    EXPECT_TRUE(refused("VIPL_NICFW_DMA_MIN", "1025M"));
    EXPECT_TRUE(refused("VIPL_NICFW_DMA_MIN", "-5"));
}

// The shared-memory crossover: its own value, never above the general one, off
// with it, and "off" meaning "the same as for any memory".
TEST_F(ConfigEnv, DmaMinShm) {
    const Config d = Config::from_env();
    EXPECT_EQ(d.dma_min_shm, nicfw::kDefaultDmaMinShm);
    EXPECT_EQ(d.shm_crossover(), nicfw::kDefaultDmaMinShm);
    EXPECT_EQ(with("VIPL_NICFW_DMA_MIN_SHM", "4K").shm_crossover(), 4096u);
    EXPECT_EQ(with("VIPL_NICFW_DMA_MIN_SHM", "off").shm_crossover(), nicfw::kDefaultDmaMin);
    EXPECT_EQ(with("VIPL_NICFW_DMA_MIN_SHM", "1M").shm_crossover(), nicfw::kDefaultDmaMin); // capped by DMA_MIN
    setenv("VIPL_NICFW_DMA_MIN", "2048", 1);
    EXPECT_EQ(Config::from_env().shm_crossover(), 2048u);
    setenv("VIPL_NICFW_DMA_MIN", "off", 1);
    EXPECT_EQ(with("VIPL_NICFW_DMA_MIN_SHM", "4K").shm_crossover(), 0u); // the bulk path is off
    unsetenv("VIPL_NICFW_DMA_MIN");
    EXPECT_TRUE(refused("VIPL_NICFW_DMA_MIN_SHM", "big"));
    EXPECT_TRUE(refused("VIPL_NICFW_DMA_MIN_SHM", "1025M"));
}
