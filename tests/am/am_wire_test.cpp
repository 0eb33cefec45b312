// The receiver's check of a message against the bytes that arrived
// (msg_fits, am/src/am_internal.hpp): a malformed packet from a peer is
// refused before any handler runs or any table is indexed with its fields.
#include "am_internal.hpp"

#include <gtest/gtest.h>

namespace {

using amvia::MsgHeader;

MsgHeader header(uint8_t flags, unsigned nargs, uint32_t nbytes) {
    MsgHeader m{};
    m.flags = flags;
    m.nargs = uint8_t(nargs);
    m.nbytes = nbytes;
    return m;
}
constexpr uint8_t cat(amvia::Category c) { return uint8_t(c << 2); }
constexpr uint32_t kHead = sizeof(MsgHeader);

TEST(AmWire, ShortNeedsItsArguments) {
    for (unsigned n = 0; n <= AMVIA_MAX_SHORT; n++) {
        const MsgHeader m = header(amvia::kFlagRequest | cat(amvia::kShort), n, 0);
        const uint32_t need = kHead + amvia::args_bytes(n);
        EXPECT_TRUE(amvia::msg_fits(&m, need)) << n;
        if (need > kHead) { EXPECT_FALSE(amvia::msg_fits(&m, need - 1)) << n; }
    }
}

TEST(AmWire, TooManyArgumentsOrNoSuchCategory) {
    const MsgHeader many = header(amvia::kFlagRequest, AMVIA_MAX_SHORT + 1, 0);
    EXPECT_FALSE(amvia::msg_fits(&many, 4096));
    const MsgHeader most = header(amvia::kFlagRequest, 255, 0);
    EXPECT_FALSE(amvia::msg_fits(&most, 1 << 20));
    const MsgHeader cat3 = header(amvia::kFlagRequest | uint8_t(3 << 2), 0, 0);
    EXPECT_FALSE(amvia::msg_fits(&cat3, 4096));
}

TEST(AmWire, MediumNeedsItsPayloadOrItsBounceTrailer) {
    const MsgHeader m = header(amvia::kFlagRequest | cat(amvia::kMedium), 3, 100);
    const uint32_t need = kHead + amvia::args_bytes(3) + 100;
    EXPECT_TRUE(amvia::msg_fits(&m, need));
    EXPECT_FALSE(amvia::msg_fits(&m, need - 1));
    const MsgHeader huge = header(amvia::kFlagRequest | cat(amvia::kMedium), 0, 0xffffffffu);
    EXPECT_FALSE(amvia::msg_fits(&huge, 0xffffffffu)); // header + nbytes does not wrap
    const MsgHeader b = header(amvia::kFlagRequest | cat(amvia::kMedium) | amvia::kFlagBounce, 2, 60000);
    const uint32_t bneed = kHead + amvia::args_bytes(2) + sizeof(amvia::BounceTrailer);
    EXPECT_TRUE(amvia::msg_fits(&b, bneed));
    EXPECT_FALSE(amvia::msg_fits(&b, bneed - 1));
}

TEST(AmWire, LongNeedsItsTrailer) {
    const MsgHeader m = header(cat(amvia::kLong), 16, 1 << 20);
    const uint32_t need = kHead + amvia::args_bytes(16) + sizeof(amvia::LongTrailer);
    EXPECT_TRUE(amvia::msg_fits(&m, need));
    EXPECT_FALSE(amvia::msg_fits(&m, need - 1));
}

TEST(AmWire, SystemMessagesCountOnlyTheirArguments) {
    // kSysReturned keeps the refused request's category; nbytes is the status.
    const MsgHeader m = header(amvia::kFlagSystem | cat(amvia::kMedium), 4, 0x1234);
    EXPECT_TRUE(amvia::msg_fits(&m, kHead + amvia::args_bytes(4)));
    EXPECT_FALSE(amvia::msg_fits(&m, kHead + amvia::args_bytes(4) - 1));
}

} // namespace
