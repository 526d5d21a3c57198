// tests/simulator/plan_generator.h — seeded random plans for the simulator's property tests: small
// llama or gpt models on one of the shipped GPU clusters (1 to 4 nodes, or part of one node), FSDP,
// HSDP, ZeRO-2, DDP or ZeRO-1 with optional TP, micro-batches, gradient accumulation, recompute,
// prefetch depths, in-flight caps and reshard settings; and one fixed plan. Every plan passes validate_plan. Leaves out
// pipeline parallelism (the simulator rejects it) and context parallelism.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/config_paths.h"
#include "core/plan.h"

namespace fsdpx::test {

// Llama-3.1-8B on two DGX-H100 nodes, FSDP over 16 ranks, seq 8192, two micro-batches of 1: the fixed
// plan the property and certain-order tests start from.
inline Plan two_node_llama8b() {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = 2;
  TrainingSettings t;
  t.seq = 8192;
  t.micro_batch = 1;
  t.global_batch = 32;
  Parallelism par;
  par.dp_shard = 16;
  Plan p = default_plan(load_model("llama3.1-8b"), c, t, par, 1, RecomputeMode::none);
  validate_plan(p, "test plan");
  return p;
}

class PlanGenerator {
 public:
  explicit PlanGenerator(std::uint64_t seed) : rng_(seed) {}

  Plan next() {
    const ModelSpec m = model();
    ClusterSpec c = load_cluster(pick<std::string>({"dgx-a100-40gb", "dgx-a100-80gb", "dgx-h100", "dgx-h200", "hgx-b200"}));
    const int world = pick<int>({1, 2, 4, 8, 16, 32});
    if (world <= c.gpus_per_node) {
      c.gpus_per_node = world;
      c.nodes = 1;
    } else {
      c.nodes = world / c.gpus_per_node;
    }
    Parallelism par = parallelism(m, c, world);
    TrainingSettings t;
    t.seq = pick<std::int64_t>({256, 512, 1024, 2048});
    t.micro_batch = pick<std::int64_t>({1, 2, 4});
    t.global_batch = t.micro_batch * par.data_parallel_ranks() * pick<std::int64_t>({1, 2, 3});
    const int per_unit = pick<int>({1, 1, 2});
    const RecomputeMode r =
        pick<RecomputeMode>({RecomputeMode::none, RecomputeMode::selective, RecomputeMode::full, RecomputeMode::selective_op});
    Plan p = default_plan(m, c, t, par, per_unit, r);
    p.prefetch.forward = pick<int>({0, 1, 2});
    p.prefetch.backward = pick<int>({0, 1, 2});
    p.prefetch.max_all_gathers_in_flight = pick<int>({1, 2, 3});
    p.precision.reduce = pick<DType>({DType::bf16, DType::fp32});
    validate_plan(p, "generated plan");
    return p;
  }

 private:
  template <typename T>
  T pick(std::vector<T> choices) {
    std::uniform_int_distribution<std::size_t> d(0, choices.size() - 1);
    return choices[d(rng_)];
  }

  ModelSpec model() {
    ModelSpec m;
    m.name = "generated";
    m.arch = pick<Arch>({Arch::llama, Arch::gpt});
    m.layers = pick<std::int64_t>({1, 2, 4, 6});
    m.heads = pick<std::int64_t>({8, 16});
    m.head_dim = pick<std::int64_t>({64, 128});
    m.hidden = m.heads * m.head_dim;
    m.kv_heads = m.arch == Arch::llama ? pick<std::int64_t>({m.heads, 8, 4}) : m.heads;
    m.ffn_kind = m.arch == Arch::llama ? FfnKind::swiglu : FfnKind::gelu;
    m.ffn_hidden = m.arch == Arch::llama ? m.hidden * 8 / 3 / 64 * 64 : 4 * m.hidden;
    m.vocab = pick<std::int64_t>({8192, 32000, 50304});
    m.max_seq = 4096;
    m.tied_embeddings = m.arch == Arch::gpt;
    m.bias = m.arch == Arch::gpt ? LinearBias::all : LinearBias::none;
    return m;
  }

  Parallelism parallelism(const ModelSpec& m, const ClusterSpec& c, int world) {
    Parallelism par;
    par.tp = 1;
    for (int tp : {2, 4, 8})
      if (c.gpus_per_node % tp == 0 && m.heads % tp == 0 && world % tp == 0 && pick<int>({0, 1, 2}) == 0) par.tp = tp;
    par.sequence_parallel = par.tp > 1 && pick<int>({0, 1}) == 1;
    const int dp = world / par.tp;
    par.data_parallel = pick<DataParallel>({DataParallel::fsdp_full_shard, DataParallel::fsdp_full_shard,
                                            DataParallel::fsdp_shard_grad_op, DataParallel::hsdp, DataParallel::ddp,
                                            DataParallel::zero1});
    if (par.data_parallel == DataParallel::hsdp && dp % 2 == 0 && dp >= 4) {
      par.dp_replicate = 2;
      par.dp_shard = dp / 2;
    } else {
      if (par.data_parallel == DataParallel::hsdp) par.data_parallel = DataParallel::fsdp_full_shard;
      par.dp_shard = dp;
    }
    return par;
  }

  std::mt19937_64 rng_;
};

}  // namespace fsdpx::test
