// Compile-time off: with VIASTACK_INSTR_COMPILED=0 the macros expand to
// nothing, so even with the runtime switch on no counter is ever registered.
#undef VIASTACK_INSTR_COMPILED
#define VIASTACK_INSTR_COMPILED 0
#include "vipl_instr.h"

#include <gtest/gtest.h>

namespace {

VIPL_INSTR_DEFINE(c_off, "off.defined", VIPL_INSTR_BASE_VI);

int timed_work(int x) {
    VIPL_INSTR_BEGIN(t);
    x *= 3;
    VIPL_INSTR_END(c_off, t);
    VIPL_INSTR_SCOPE("off.scope", VIPL_INSTR_EVENT);
    return x + 1;
}

TEST(InstrCompiledOff, MacrosRecordNothing) {
    vipl_instr_enable(1);
    int v = 0;
    for (int i = 0; i < 10; ++i) v += timed_work(i);
    EXPECT_EQ(v, 3 * 45 + 10); // the timed code itself still runs
    EXPECT_EQ(vipl_instr_find("off.defined", nullptr), -1);
    EXPECT_EQ(vipl_instr_find("off.scope", nullptr), -1);
    EXPECT_EQ(vipl_instr_snapshot(nullptr, 0), 0u);
    vipl_instr_enable(0);
}

} // namespace
