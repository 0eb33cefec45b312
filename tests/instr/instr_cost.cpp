// instr_cost - what a timed scope costs, with the runtime switch off and on.
// Google Benchmark; the numbers are recorded in docs/instrumentation.md.
//   ./instr_cost --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include "vipl_instr.h"

#include <benchmark/benchmark.h>

namespace {

// The work being timed: one dependent add the compiler cannot drop.
inline void tiny_work(uint64_t &x) {
    x += 1;
    benchmark::DoNotOptimize(x);
}

void BM_NoInstrumentation(benchmark::State &state) {
    uint64_t x = 0;
    for (auto _ : state) tiny_work(x);
}

void BM_ScopeSwitchOff(benchmark::State &state) {
    vipl_instr_enable(0);
    uint64_t x = 0;
    for (auto _ : state) {
        VIPL_INSTR_SCOPE("bench.scope.off", VIPL_INSTR_OTHER);
        tiny_work(x);
    }
}

void BM_ScopeSwitchOn(benchmark::State &state) {
    vipl_instr_enable(1);
    uint64_t x = 0;
    for (auto _ : state) {
        VIPL_INSTR_SCOPE("bench.scope.on", VIPL_INSTR_OTHER);
        tiny_work(x);
    }
    vipl_instr_enable(0);
}

void BM_BeginEndSwitchOn(benchmark::State &state) {
    VIPL_INSTR_DEFINE(c, "bench.begin_end.on", VIPL_INSTR_OTHER);
    vipl_instr_enable(1);
    uint64_t x = 0;
    for (auto _ : state) {
        VIPL_INSTR_BEGIN(t);
        tiny_work(x);
        VIPL_INSTR_END(c, t);
    }
    vipl_instr_enable(0);
}

void BM_ReadTsc(benchmark::State &state) {
    for (auto _ : state) benchmark::DoNotOptimize(vipl_instr_now());
}

BENCHMARK(BM_NoInstrumentation);
BENCHMARK(BM_ScopeSwitchOff);
BENCHMARK(BM_ScopeSwitchOn);
BENCHMARK(BM_BeginEndSwitchOn);
BENCHMARK(BM_ReadTsc);

} // namespace

BENCHMARK_MAIN();
