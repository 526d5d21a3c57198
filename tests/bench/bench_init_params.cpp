// tests/bench/bench_init_params.cpp — the seeded host initialisation (executor/model/init.cpp) of one
// llama3.2-1b transformer block (60.8 M parameters) on a KernelPool of 1, 2 and 4 threads: what
// `fsdpx run` spends before the first step (issue 28: the whole model single-threaded took 40-60 s), and
// the whole host state of that block's FSDP unit as both backends' init_params build it, one unit after
// another into one reused state (rank_fsdp_units.h load_initial_states; issue 29's 16 s of start-up).
// Reports time per iteration; ns/parameter = time / params (60.8 M for a block, 243.3 M for four units).
// Leaves out the device upload.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/config_paths.h"
#include "executor/cpu/kernel_pool.h"
#include "executor/model/init.h"
#include "executor/model/initial_state.h"

namespace {

void BM_InitBlock(benchmark::State& state) {
  const fsdpx::ParamLayout layout = fsdpx::make_param_layout(fsdpx::load_model("llama3.2-1b"));
  const int module = 1;  // block 0 (module 0 is the embedding)
  const std::int64_t n = layout.modules[static_cast<std::size_t>(module)].numel;
  std::vector<float> out(static_cast<std::size_t>(n));
  fsdpx::cpu::KernelPool pool(static_cast<int>(state.range(0)));
  fsdpx::cpu::set_kernel_pool(&pool);
  for (auto _ : state) {
    fsdpx::init_module_range(layout, 1234, module, 0, n, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  fsdpx::cpu::set_kernel_pool(nullptr);
  state.counters["params"] = double(n);
}
BENCHMARK(BM_InitBlock)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// Four one-block units (blocks 0-3, 243 M parameters) one after another, as load_initial_states fills them.
void BM_InitialUnitStates(benchmark::State& state) {
  const fsdpx::ParamLayout layout = fsdpx::make_param_layout(fsdpx::load_model("llama3.2-1b"));
  std::vector<fsdpx::FlatUnitLayout> units;
  for (const char* name : {"block.0", "block.1", "block.2", "block.3"})
    units.push_back(fsdpx::make_flat_unit(layout, {name}, 1));
  fsdpx::cpu::KernelPool pool(static_cast<int>(state.range(0)));
  fsdpx::cpu::set_kernel_pool(&pool);
  double params = 0;
  for (auto _ : state) {
    fsdpx::UnitShardState s;
    params = 0;
    for (const fsdpx::FlatUnitLayout& unit : units) {
      fsdpx::fill_initial_unit_state(layout, unit, 0, 1234, s);
      benchmark::DoNotOptimize(s.params.data());
      params += double(unit.shard_numel);
    }
  }
  fsdpx::cpu::set_kernel_pool(nullptr);
  state.counters["params"] = params;
}
// The whole of llama3.2-1b as the plan fsdpx chooses for one H200 holds it (docs/performance.md, issue 29):
// 16 one-block units, then the root unit (embedding, final norm, tied head), 1.24 B parameters.
void BM_InitialStatesModel(benchmark::State& state) {
  const fsdpx::ParamLayout layout = fsdpx::make_param_layout(fsdpx::load_model("llama3.2-1b"));
  std::vector<fsdpx::FlatUnitLayout> units;
  for (int b = 0; b < 16; ++b) units.push_back(fsdpx::make_flat_unit(layout, {"block." + std::to_string(b)}, 1));
  units.push_back(fsdpx::make_flat_unit(layout, {"embedding", "final_norm", "head"}, 1));
  fsdpx::cpu::KernelPool pool(static_cast<int>(state.range(0)));
  fsdpx::cpu::set_kernel_pool(&pool);
  double params = 0;
  for (auto _ : state) {
    fsdpx::UnitShardState s;
    params = 0;
    for (const fsdpx::FlatUnitLayout& unit : units) {
      fsdpx::fill_initial_unit_state(layout, unit, 0, 1234, s);
      benchmark::DoNotOptimize(s.params.data());
      params += double(unit.shard_numel);
    }
  }
  fsdpx::cpu::set_kernel_pool(nullptr);
  state.counters["params"] = params;
}
BENCHMARK(BM_InitialStatesModel)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

BENCHMARK(BM_InitialUnitStates)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
