// tests/bench/bench_init_params.cpp — the seeded host initialisation (executor/model/init.cpp) of one
// llama3.2-1b transformer block (60.8 M parameters) on a KernelPool of 1, 2 and 4 threads: what
// `fsdpx run` spends before the first step (issue 28: the whole model single-threaded took 40-60 s).
// Reports time per iteration; ns/parameter = time / 60.8e6. Leaves out the device upload.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/config_paths.h"
#include "executor/cpu/kernel_pool.h"
#include "executor/model/init.h"

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

}  // namespace

BENCHMARK_MAIN();
