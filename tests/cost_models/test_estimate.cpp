// tests/cost_models/test_estimate.cpp — the analytic estimate: its memory categories are the memory
// model's terms, the step-time lower bound is max(compute, communication) (with fp16 loss scaling's
// unscale pass in compute), ZeRO modes order memory as the ZeRO paper says, and bad parallelism degrees
// are input errors naming the option.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "cost_models/estimate.h"
#include "cost_models/memory.h"
#include "cost_models/params.h"
#include "tests/support/specs.h"

namespace fsdpx {
namespace {

ClusterSpec dgx_h100(int nodes) {
  ClusterSpec c;
  c.name = "dgx-h100";
  c.gpu.name = "h100";
  c.gpu.peak_flops_per_s = {{DType::bf16, 989.4e12}, {DType::fp32, 66.9e12}};
  c.gpu.vector_flops_per_s = 66.9e12;
  c.gpu.hbm_bytes = 80.0 * (1ull << 30);
  c.gpu.hbm_bw_bytes_per_s = 3.35e12;
  c.gpu.matmul_efficiency.points = {{1e9, 0.5}, {1e11, 0.8}};
  c.gpu.memory_efficiency.points = {{1e6, 0.6}, {1e8, 0.9}};
  c.gpu.attention_efficiency.points = {{512, 0.3}, {8192, 0.37}};
  c.gpu.attention_backward_efficiency.points = {{512, 0.2}, {8192, 0.32}};
  c.gpu.matmul_half_efficiency_dim = 1024;
  c.gpus_per_node = 8;
  c.nodes = nodes;
  c.intra = {370e9, 3.4e-6, true};
  c.inter = {8, 48e9, 14e-6};
  return c;
}

TrainingShape fsdp8() {
  TrainingShape s;
  s.dp_shard = 8;
  s.seq = 8192;
  s.grad_accum = 2;
  return s;
}

}  // namespace

TEST_CASE("FSDP state per GPU is 16 bytes per parameter over dp_shard (fp32 master policy)") {
  const Estimate e = estimate(test::llama31_8b(), dgx_h100(1), fsdp8());
  const double p = double(count_params(test::llama31_8b()).total());
  CHECK(e.total_params == count_params(test::llama31_8b()).total());
  CHECK(e.memory.params + e.memory.grads + e.memory.optimizer == doctest::Approx(16 * p / 8).epsilon(1e-9));
  CHECK(e.memory.activations > 0);
  CHECK(e.memory.transient > 0);
  CHECK(e.memory.total() == doctest::Approx(e.memory.params + e.memory.grads + e.memory.optimizer +
                                            e.memory.activations + e.memory.transient + e.memory.other));
}

TEST_CASE("the step-time lower bound is max(compute, communication)") {
  const Estimate e = estimate(test::llama31_8b(), dgx_h100(1), fsdp8());
  CHECK(e.step_time_lower_bound_s == std::max(e.compute_time_s, e.dp_comm_time_s + e.tp_cp_comm_time_s));
  CHECK(e.tokens_per_step == doctest::Approx(1 * 8192 * 2 * 8));
  CHECK(e.mfu_upper_bound == doctest::Approx(e.tokens_per_s_per_gpu_upper_bound * e.model_flops_per_token / 989.4e12));
  // Across 16 nodes the same per-GPU work costs more communication, never less.
  TrainingShape wide = fsdp8();
  wide.dp_shard = 128;
  const Estimate w = estimate(test::llama31_8b(), dgx_h100(16), wide);
  CHECK(w.dp_comm_time_s > e.dp_comm_time_s);
}

TEST_CASE("fp16 loss scaling adds one memory-bound pass over the rank's fp32 gradient shard to compute") {
  ClusterSpec c = dgx_h100(1);
  c.gpu.peak_flops_per_s[DType::fp16] = 989.4e12;
  TrainingShape s = fsdp8();
  s.precision.param = DType::fp16;
  s.precision.reduce = DType::fp32;
  const Estimate plain = estimate(test::llama31_8b(), c, s);
  s.loss_scale = true;
  const Estimate scaled = estimate(test::llama31_8b(), c, s);
  CHECK(plain.unscale_time_s == 0);
  // Read and write 4 bytes per element of the 1/8 shard at 3.35 TB/s x 0.9 (the efficiency past 100 MB).
  const double shard = double(count_params(test::llama31_8b()).total()) / 8;
  CHECK(scaled.unscale_time_s == doctest::Approx(2 * 4 * shard / (3.35e12 * 0.9)).epsilon(1e-9));
  CHECK(scaled.compute_time_s == doctest::Approx(plain.compute_time_s + scaled.unscale_time_s).epsilon(1e-12));
  CHECK(scaled.hardware_flops_per_step == doctest::Approx(plain.hardware_flops_per_step + 2 * shard).epsilon(1e-12));
  CHECK(scaled.step_time_lower_bound_s >= plain.step_time_lower_bound_s);
}

TEST_CASE("model-state memory orders DDP > ZeRO-1 > ZeRO-2 > ZeRO-3 (Rajbhandari et al. SC20)") {
  double last = 1e300;
  for (ShardingMode mode : {ShardingMode::ddp, ShardingMode::zero1, ShardingMode::zero2, ShardingMode::zero3}) {
    TrainingShape s = fsdp8();
    s.mode = mode;
    const Estimate e = estimate(test::llama31_8b(), dgx_h100(1), s);
    const double state = e.memory.params + e.memory.grads + e.memory.optimizer;
    CHECK(state < last);
    last = state;
  }
}

TEST_CASE("full recompute keeps fewer activations and costs more compute") {
  TrainingShape none = fsdp8(), full = fsdp8();
  full.recompute = Recompute::full;
  const Estimate a = estimate(test::llama31_8b(), dgx_h100(1), none);
  const Estimate b = estimate(test::llama31_8b(), dgx_h100(1), full);
  // Only the saved block tensors depend on the mode: none keeps Korthikanti's 34sbh-class set per block,
  // full the block input (2sbh); the embedding, the loss buffers and the backward working set stay.
  ActivationShape shape;
  shape.micro_batch = none.micro_batch;
  shape.seq = none.seq;
  const double per_block = block_activation_bytes(test::llama31_8b(), shape, Recompute::none) -
                           block_activation_bytes(test::llama31_8b(), shape, Recompute::full);
  CHECK(a.memory.activations - b.memory.activations == doctest::Approx(32 * per_block));
  CHECK(per_block > 10 * block_activation_bytes(test::llama31_8b(), shape, Recompute::full));
  CHECK(b.compute_time_s > a.compute_time_s * 1.2);
}

TEST_CASE("bad degrees are input errors naming the option") {
  auto message = [](TrainingShape s, int nodes = 1) {
    try {
      estimate(test::llama31_8b(), dgx_h100(nodes), s);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TrainingShape s = fsdp8();
  s.dp_shard = 3;
  CHECK(message(s).find("--dp-shard") != std::string::npos);
  s = fsdp8();
  s.tp = 16;  // more than a node's 8 GPUs: TP stays inside a node
  s.dp_shard = 1;
  CHECK(message(s, 2).find("--tp") != std::string::npos);
  s = fsdp8();
  s.seq = 200000;
  CHECK(message(s).find("--seq") != std::string::npos);
}

}  // namespace fsdpx
