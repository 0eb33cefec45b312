// fuzz_descriptor - the descriptor checks every provider runs at post time
// (vipl/providers/common/descriptor_check.hpp) on arbitrary descriptors,
// region tables and rules.
//
// Input: the rules, up to four regions (a handle, a base given as an offset in
// the arena or as a raw 64-bit address, a length, whether it has the VI's
// ptag), the descriptor's offset in a 4 KiB "registered memory" arena and its
// memory handle; the rest of the input fills the arena (so it is the
// descriptor's bytes).  Data-segment addresses in the descriptor are taken as
// offsets into the arena, as a program would name its own buffers.
//
// What must hold:
//   - the checks read no byte of the arena outside the region the descriptor's
//     memory handle names (everything else is poisoned: ASan aborts on a read),
//     and nothing at all when the handle names no region;
//   - an accepted send or receive has: its whole descriptor inside that region;
//     legal control bits and SegCount; every non-empty data segment inside a
//     region of the VI's ptag (checked again here with 128-bit arithmetic);
//     Length equal to the sum of the segments and within the transfer limit;
//     the segment sink called once for each non-empty segment, with its region;
//   - a rejected one reports exactly one of PROTECTION, FORMAT, LENGTH;
//   - the provider path that checks a copy (nicfw: control segment, then data
//     segments) agrees with the one-call path.
#include <cstdlib>
#include <new>
#include <vector>

#include "descriptor_check.hpp"
#include "fuzz_support.hpp"

namespace {

using vipl::common::DescriptorRules;

constexpr size_t kArena = 4096;

struct Reg {
    uintptr_t base = 0;
    size_t len = 0;
    VIP_MEM_HANDLE handle = 0;
    bool our_ptag = false;
};

bool inside(uintptr_t base, size_t len, uintptr_t a, uint64_t n) {
    const unsigned __int128 lo = base, hi = (unsigned __int128)base + len;
    return a >= lo && (unsigned __int128)a + n <= hi;
}

struct Table {
    Reg regs[4];
    int n = 0;
    // The provider's lookup: only regions of the VI's protection tag.
    const Reg *find(VIP_MEM_HANDLE h) const {
        for (int i = 0; i < n; ++i)
            if (regs[i].handle == h) return regs[i].our_ptag ? &regs[i] : nullptr;
        return nullptr;
    }
};

bool one_error_bit(uint32_t e) {
    return e == VIP_STATUS_PROTECTION_ERROR || e == VIP_STATUS_FORMAT_ERROR || e == VIP_STATUS_LENGTH_ERROR;
}

void check_accepted(const VIP_DESCRIPTOR *d, const Reg *dr, const Table &t, const DescriptorRules &rules, bool send,
                    uint64_t total, const std::vector<const VIP_DATA_SEGMENT *> &sunk,
                    const std::vector<const Reg *> &sunk_regions) {
    FUZZ_ASSERT(dr != nullptr, "accepted a descriptor whose memory handle names no region");
    const uint16_t segs = d->CS.SegCount, ctl = d->CS.Control, op = ctl & VIP_CONTROL_OP_MASK;
    FUZZ_ASSERT(inside(dr->base, dr->len, uintptr_t(d), vipl::common::descriptor_bytes(segs)),
                "descriptor of %u segments not inside its region", segs);
    FUZZ_ASSERT(!(ctl & VIP_CONTROL_RESERVED), "reserved control bits 0x%x accepted", ctl);
    FUZZ_ASSERT(segs <= rules.max_seg_count, "SegCount %u > %u", segs, rules.max_seg_count);
    const uint32_t first = send ? vipl::common::first_data_segment(ctl) : 0;
    if (send) {
        FUZZ_ASSERT(op != VIP_CONTROL_OP_RESERVED, "reserved opcode accepted");
        FUZZ_ASSERT(segs >= first, "RDMA descriptor without its address segment");
        if (op == VIP_CONTROL_OP_RDMAREAD)
            FUZZ_ASSERT(rules.reliable && !(ctl & VIP_CONTROL_IMMEDIATE), "bad RDMA read accepted");
    }
    FUZZ_ASSERT(segs - first <= rules.max_data_segments, "%u data segments > %u", segs - first,
                rules.max_data_segments);
    uint64_t sum = 0;
    size_t nonempty = 0;
    const VIP_DESCRIPTOR_SEGMENT *ds = d->DS; // DS[2] is the declared minimum; descriptors extend past it
    for (uint32_t i = first; i < segs; ++i) {
        const VIP_DATA_SEGMENT &s = ds[i].Local;
        if (s.Length == 0) continue;
        const Reg *r = t.find(s.Handle);
        FUZZ_ASSERT(r != nullptr, "segment %u: handle 0x%x names no region of the VI's ptag", i, s.Handle);
        FUZZ_ASSERT(inside(r->base, r->len, uintptr_t(s.Data.AddressBits), s.Length),
                    "segment %u [0x%llx, +%u) outside its region", i, (unsigned long long)s.Data.AddressBits, s.Length);
        FUZZ_ASSERT(nonempty < sunk.size() && sunk[nonempty] == &s && sunk_regions[nonempty] == r,
                    "segment sink not called for segment %u with its region", i);
        ++nonempty;
        sum += s.Length;
    }
    FUZZ_ASSERT(nonempty == sunk.size(), "segment sink called %zu times for %zu segments", sunk.size(), nonempty);
    FUZZ_ASSERT(total == sum, "total %llu != sum %llu", (unsigned long long)total, (unsigned long long)sum);
    if (send) {
        FUZZ_ASSERT(sum == d->CS.Length, "Length %u != sum of segments %llu", d->CS.Length, (unsigned long long)sum);
        FUZZ_ASSERT(sum <= rules.max_transfer, "Length %llu over the limit", (unsigned long long)sum);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz::Input in{data, size};
    DescriptorRules rules;
    rules.max_seg_count = in.take<uint8_t>() % 300;
    rules.max_data_segments = in.take<uint8_t>() % 300;
    rules.max_transfer = in.take<uint32_t>();
    rules.reliable = in.take<uint8_t>() & 1;

    auto *arena = static_cast<unsigned char *>(::operator new(kArena, std::align_val_t(VIP_DESCRIPTOR_ALIGNMENT)));
    const uintptr_t abase = uintptr_t(arena);
    Table t;
    t.n = in.take<uint8_t>() % 5;
    for (int i = 0; i < t.n; ++i) {
        Reg &r = t.regs[i];
        const uint8_t kind = in.take<uint8_t>();
        r.handle = in.take<uint8_t>() % 8; // few handles: lookups hit
        r.our_ptag = !(kind & 1);
        if (kind & 2) { // anywhere in the address space (not readable: only data segments may point there)
            r.base = in.take<uint64_t>();
            r.len = in.take<uint64_t>();
            // A registered region is readable memory by definition: one that
            // overlaps the arena is cut to the overlap, or the checker's
            // legitimate reads past the arena's end would be reported as bugs.
            const unsigned __int128 lo = r.base, hi = lo + r.len;
            if (lo < abase + kArena && hi > abase) {
                const unsigned __int128 clo = lo > abase ? lo : abase;
                const unsigned __int128 chi = hi < abase + kArena ? hi : abase + kArena;
                r.base = uint64_t(clo);
                r.len = uint64_t(chi - clo);
            }
        } else { // inside the arena
            const size_t off = in.take<uint16_t>() % kArena;
            r.base = abase + off;
            r.len = in.take<uint16_t>() % (kArena - off + 1);
        }
    }
    const size_t doff = (in.take<uint16_t>() % kArena) & ~size_t(VIP_DESCRIPTOR_ALIGNMENT - 1);
    const VIP_MEM_HANDLE mh = in.take<uint8_t>() % 8;
    std::memset(arena, 0, kArena);
    std::memcpy(arena + doff, in.p, in.n < kArena - doff ? in.n : kArena - doff);
    auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(arena + doff);
    // Data segments name arena offsets (as far as the descriptor lies in the arena).
    for (size_t i = 0; doff + sizeof(VIP_CONTROL_SEGMENT) + (i + 1) * sizeof(VIP_DESCRIPTOR_SEGMENT) <= kArena; ++i) {
        auto *s = reinterpret_cast<VIP_DATA_SEGMENT *>(arena + doff + sizeof(VIP_CONTROL_SEGMENT) +
                                                       i * sizeof(VIP_DESCRIPTOR_SEGMENT));
        s->Data.AddressBits = abase + s->Data.AddressBits % (2 * kArena); // a little past the end too
    }

    // Only the descriptor's own region may be read.
    const Reg *dr = t.find(mh);
    FUZZ_POISON(arena, kArena);
    if (dr) { // unpoison the region's overlap with the arena
        const unsigned __int128 rlo = dr->base, rhi = rlo + dr->len;
        const unsigned __int128 lo = rlo > abase ? rlo : abase, hi = rhi < abase + kArena ? rhi : abase + kArena;
        if (lo < hi) FUZZ_UNPOISON(arena + size_t(lo - abase), size_t(hi - lo));
    }

    auto lookup = [&](VIP_MEM_HANDLE h) { return t.find(h); };
    for (bool send : {true, false}) {
        std::vector<const VIP_DATA_SEGMENT *> sunk;
        std::vector<const Reg *> sunk_regions;
        auto sink = [&](const Reg &r, const VIP_DATA_SEGMENT &s) {
            sunk.push_back(&s);
            sunk_regions.push_back(&r);
        };
        uint64_t total = ~0ull;
        const uint32_t e = send ? vipl::common::check_send(d, mh, rules, lookup, sink, &total)
                                : vipl::common::check_recv(d, mh, rules, lookup, sink, &total);
        if (e == 0) check_accepted(d, dr, t, rules, send, total, sunk, sunk_regions);
        else FUZZ_ASSERT(one_error_bit(e), "%s check returned 0x%x", send ? "send" : "receive", e);

        // nicfw's order on its SRAM copy: the descriptor registered, then the
        // control segment, then the data segments; it must reach the same verdict.
        uint32_t e2 = 0;
        uint64_t total2 = 0;
        if (!vipl::common::descriptor_registered(d, mh, sizeof(VIP_CONTROL_SEGMENT), lookup)) {
            e2 = VIP_STATUS_PROTECTION_ERROR;
        } else {
            const VIP_CONTROL_SEGMENT cs = d->CS;
            e2 = send ? vipl::common::check_send_control(cs, rules) : vipl::common::check_recv_control(cs, rules);
            if (!e2 && !vipl::common::descriptor_registered(d, mh, vipl::common::descriptor_bytes(cs.SegCount), lookup))
                e2 = VIP_STATUS_PROTECTION_ERROR;
            if (!e2) {
                const uint32_t first = send ? vipl::common::first_data_segment(cs.Control) : 0;
                e2 = vipl::common::check_data_segments(static_cast<const VIP_DESCRIPTOR_SEGMENT *>(d->DS) + first,
                                                       cs.SegCount - first, lookup, vipl::common::NoSegmentSink{},
                                                       &total2);
                if (!e2 && send)
                    e2 = total2 != cs.Length          ? VIP_STATUS_FORMAT_ERROR
                        : total2 > rules.max_transfer ? VIP_STATUS_LENGTH_ERROR
                                                      : 0;
            }
        }
        FUZZ_ASSERT(e2 == e, "%s: phase-by-phase check 0x%x, one-call check 0x%x", send ? "send" : "receive", e2, e);
    }
    FUZZ_UNPOISON(arena, kArena);
    ::operator delete(arena, std::align_val_t(VIP_DESCRIPTOR_ALIGNMENT));
    return 0;
}
