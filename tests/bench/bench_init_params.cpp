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

// The initial states of llama3.2-1b's units `names` (one unit per entry) filled one after another into one
// reused state, as load_initial_states fills them, on a pool of state.range(0) threads.
void fill_unit_states(benchmark::State& state, const std::vector<std::vector<std::string>>& names) {
  const fsdpx::ParamLayout layout = fsdpx::make_param_layout(fsdpx::load_model("llama3.2-1b"));
  std::vector<fsdpx::FlatUnitLayout> units;
  for (const auto& modules : names) units.push_back(fsdpx::make_flat_unit(layout, modules, 1));
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

// Four one-block units (blocks 0-3, 243 M parameters).
void BM_InitialUnitStates(benchmark::State& state) {
  fill_unit_states(state, {{"block.0"}, {"block.1"}, {"block.2"}, {"block.3"}});
}

// The whole of llama3.2-1b as the plan fsdpx chooses for one H200 holds it (docs/performance.md, issue 29):
// 16 one-block units, then the root unit (embedding, final norm, tied head), 1.24 B parameters.
void BM_InitialStatesModel(benchmark::State& state) {
  std::vector<std::vector<std::string>> names;
  for (int b = 0; b < 16; ++b) names.push_back({"block." + std::to_string(b)});
  names.push_back({"embedding", "final_norm", "head"});
  fill_unit_states(state, names);
}
BENCHMARK(BM_InitialStatesModel)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

BENCHMARK(BM_InitialUnitStates)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
