// fuzz_bulk_request - nicfw's single-copy bulk path: the target NIC parsing a
// bulk request's segment list (nicfw/src/packet_check.hpp:
// parse_bulk_request, called by rx.cpp for Send|Bulk, RdmaWrite|Bulk and
// ReadReq|Bulk), then moving the bytes through the copy engine
// (nicfw/src/dma.cpp: DmaEngine::move) as it does for its own process.
//
// Input: one byte of options (bit 0: RDMA request, with its RdmaExt; bits 1-7:
// where the local side is split in two), then the payload bytes as they sit
// in the SRAM copy (an exact-size allocation: the parser must not read past
// the packet's length).
//
// What must hold:
//   - the parser reads nothing outside the payload (ASan) and accepts exactly
//     the requests an independent check of every field accepts: size = header
//     + nseg segments, nseg <= kMaxSegments + 1, pid != 0, padding zero,
//     length <= kMaxTransfer and = the sum of the segment lengths, no segment
//     wrapping the address space or its shared-memory offset, plain-memory
//     segments naming no shared-memory segment;
//   - an accepted request's segment list lies inside the payload;
//   - for an accepted request small enough to stand in for (segments moved
//     into a 64 KiB arena, the request's own process), the copy engine moves
//     exactly `length` bytes, in segment order, never reading or writing past
//     a segment or the local buffer (exact-size allocations, ASan), and a
//     segment list holding fewer bytes than announced is refused (EINVAL).
#include <sys/uio.h>

#include <cerrno>

#include <memory>
#include <vector>

#include "dma.hpp"
#include "fuzz_support.hpp"
#include "packet_check.hpp"

using namespace nicfw;

namespace {

// The independent check: every field, as the header comment lists them.
bool expect_accepted(const unsigned char *p, size_t n, bool rdma) {
    const size_t head = (rdma ? 16 : 0) + 16;
    if (n < head) return false;
    uint32_t f[4];
    std::memcpy(f, p + head - 16, sizeof f); // pid, nseg, length, pad
    if (f[1] > 253 || n != head + 32ull * f[1]) return false;
    if (f[0] == 0 || f[3] != 0 || f[2] > (1u << 30)) return false;
    unsigned __int128 sum = 0;
    for (uint32_t i = 0; i < f[1]; ++i) {
        const unsigned char *s = p + head + 32ull * i;
        uint64_t addr, off;
        uint32_t len, id, pad;
        int32_t fd;
        std::memcpy(&addr, s, 8);
        std::memcpy(&off, s + 8, 8);
        std::memcpy(&len, s + 16, 4);
        std::memcpy(&id, s + 20, 4);
        std::memcpy(&fd, s + 24, 4);
        std::memcpy(&pad, s + 28, 4);
        if (pad) return false;
        if ((unsigned __int128)addr + len > UINT64_MAX) return false;
        if (id ? (fd < 0 || (unsigned __int128)off + len > UINT64_MAX) : (off != 0 || fd != -1)) return false;
        sum += len;
    }
    return sum == f[2];
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static DmaEngine engine(0);
    constexpr size_t kArena = 64 * 1024;
    static std::unique_ptr<unsigned char[]> arena(new unsigned char[kArena]);

    fuzz::Input in{data, size};
    const uint8_t opt = in.take<uint8_t>();
    const bool rdma = opt & 1;
    // The payload in an exact-size buffer (the SRAM copy's readable bytes).
    const size_t n = in.n;
    std::unique_ptr<unsigned char[]> buf(new unsigned char[n ? n : 1]);
    if (n) std::memcpy(buf.get(), in.p, n);

    BulkRequest q;
    const bool ok = parse_bulk_request(n, buf.get(), rdma, &q);
    const bool want = expect_accepted(buf.get(), n, rdma);
    FUZZ_ASSERT(ok == want, "parse_bulk_request %s a request the field check %s (%zu bytes, rdma %d)",
                ok ? "accepted" : "refused", want ? "accepts" : "refuses", n, int(rdma));
    if (!ok) return 0;
    const auto *first = reinterpret_cast<const unsigned char *>(q.segs);
    FUZZ_ASSERT(first >= buf.get() && first + size_t(q.b.nseg) * sizeof(BulkSeg) == buf.get() + n,
                "segment list outside the payload");
    if (q.b.length > kArena) return 0;

    // Stand-in segments in the arena (the request's own process: no attach),
    // each an exact-size allocation so a read past a segment is caught.
    std::vector<std::unique_ptr<unsigned char[]>> pieces;
    std::vector<BulkSeg> segs(q.b.nseg);
    std::vector<unsigned char> expect;
    for (uint32_t i = 0; i < q.b.nseg; ++i) {
        std::memcpy(&segs[i], first + size_t(i) * sizeof(BulkSeg), sizeof(BulkSeg));
        pieces.emplace_back(new unsigned char[segs[i].len ? segs[i].len : 1]);
        for (uint32_t k = 0; k < segs[i].len; ++k) pieces.back()[k] = uint8_t(i * 31 + k);
        segs[i].addr = reinterpret_cast<uintptr_t>(pieces.back().get());
        expect.insert(expect.end(), pieces.back().get(), pieces.back().get() + segs[i].len);
    }
    const uint32_t total = q.b.length;
    std::unique_ptr<unsigned char[]> dst(new unsigned char[total ? total : 1]);
    const size_t cut = total ? (size_t(opt >> 1) * total) / 128 : 0;
    const iovec local[2] = {{dst.get(), cut}, {dst.get() + cut, total - cut}};
    int rc = engine.move(true, 0, engine.pid(), segs.data(), q.b.nseg, local, 2, total);
    FUZZ_ASSERT(rc == 0, "move (pull) of %u bytes in %u segments failed: %d", total, q.b.nseg, rc);
    FUZZ_ASSERT(total == 0 || std::memcmp(dst.get(), expect.data(), total) == 0, "pulled bytes differ");
    // The other way (RDMA read): the local bytes land in the segments, in order.
    for (uint32_t k = 0; k < total; ++k) dst[k] = uint8_t(~dst[k]);
    rc = engine.move(false, 0, engine.pid(), segs.data(), q.b.nseg, local, 2, total);
    FUZZ_ASSERT(rc == 0, "move (push) failed: %d", rc);
    size_t at = 0;
    for (uint32_t i = 0; i < q.b.nseg; ++i) {
        FUZZ_ASSERT(segs[i].len == 0 || std::memcmp(pieces[i].get(), dst.get() + at, segs[i].len) == 0,
                    "pushed bytes differ in segment %u", i);
        at += segs[i].len;
    }
    // Announcing one byte more than the segments hold is refused, not overrun.
    std::unique_ptr<unsigned char[]> more(new unsigned char[total + 1]);
    const iovec one{more.get(), size_t(total) + 1};
    rc = engine.move(true, 0, engine.pid(), segs.data(), q.b.nseg, &one, 1, size_t(total) + 1);
    FUZZ_ASSERT(rc == EINVAL, "a list one byte short was not refused: %d", rc);
    return 0;
}
