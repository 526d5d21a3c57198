// planner/wrapping_simplefsdp.cpp — SimpleFSDP's auto-wrapping: greedy bucketing of all-gathers by
// estimated compute vs communication time under a memory budget (arXiv 2411.00284; meta-pytorch/autoparallel
// autoparallel/graph_passes/autobucketing_inductor/bucket_plan.py get_simplefsdp_auto_plan). Costs come from fsdpx's cost models
// instead of benchmarks. Leaves out the reduce-scatter-only bucket rule (RS buckets close with AG
// buckets here), TP/CP collectives counted as compute, and reordering (the simulator's prefetch does it).
#include <fmt/format.h>

#include "cost_models/compute.h"
#include "cost_models/mesh.h"
#include "cost_models/params.h"
#include "core/errors.h"
#include "planner/wrapping.h"

namespace fsdpx {

std::vector<std::vector<int>> simplefsdp_buckets(const BucketingInputs& in) {
  const std::size_t n = in.compute_s.size();
  FSDP_CHECK(in.gathered_bytes.size() == n && in.grad_bytes.size() == n, "bucketing inputs of unequal length");
  std::vector<std::vector<int>> buckets;
  std::vector<int> cur;
  double cur_bytes = 0, cur_grad_bytes = 0, cur_compute_s = 0;
  double prev_compute_s = 0, prev_rs_s = 0;  // the step before the current bucket: nothing at first
  for (std::size_t i = 0; i < n; ++i) {
    if (!cur.empty()) {
      const double bytes = cur_bytes + in.gathered_bytes[i];
      // Rule 1 (overlap): the all-gather must hide behind the previous step's compute, which also
      // hides the previous step's reduce-scatter.
      const bool exposed = prev_compute_s * (1 + in.relax_ratio) < in.all_gather_time_s(bytes) + prev_rs_s;
      // Rule 2 (memory): the current and the prefetched bucket are alive together.
      const bool too_big = in.memory_budget_bytes > 0 && 2 * bytes > in.memory_budget_bytes;
      // Rule 3 (size): no calibration beyond the largest benchmarked all-gather.
      const bool too_large = in.max_bucket_bytes > 0 && bytes > in.max_bucket_bytes;
      if (exposed || too_big || too_large) {
        prev_compute_s = cur_compute_s;
        prev_rs_s = in.reduce_scatter_time_s(cur_grad_bytes);
        buckets.push_back(std::move(cur));
        cur.clear();
        cur_bytes = cur_grad_bytes = cur_compute_s = 0;
      }
    }
    cur.push_back(int(i));
    cur_bytes += in.gathered_bytes[i];
    cur_grad_bytes += in.grad_bytes[i];
    cur_compute_s += in.compute_s[i];
  }
  if (!cur.empty()) buckets.push_back(std::move(cur));
  return buckets;
}

namespace {

// Per-module inputs in forward order (embedding, blocks, final_norm, head); the head's kernels
// include the final norm and the loss, so final_norm carries no compute of its own.
BucketingInputs module_costs(const Plan& p) {
  const ModelSpec& m = p.model;
  const auto& par = p.parallelism;
  const ParamCounts pc = count_params(m);
  LayerShape s;
  s.micro_batch = p.training.micro_batch;
  s.seq = p.training.seq;
  s.tp = par.tp;
  s.cp = par.cp;
  s.sequence_parallel = par.sequence_parallel;
  s.act_dtype = p.precision.param;
  s.stack = stack_costs(p.framework, p.compiled, p.framework_version);
  const GpuSpec& gpu = p.cluster.gpu;
  const DType dt = p.precision.param;
  BucketingInputs in;
  auto add = [&](double compute_s, double params) {
    in.compute_s.push_back(compute_s);
    in.gathered_bytes.push_back(params / par.tp * dtype_bytes(p.precision.param));
    in.grad_bytes.push_back(params / par.tp * dtype_bytes(p.precision.reduce));
  };
  add(kernels_time_s(embedding_kernels(m, s, Pass::forward), gpu, dt), double(pc.embedding));
  const double block_s = kernels_time_s(block_kernels(m, s, Pass::forward), gpu, dt);
  for (std::int64_t b = 0; b < m.layers; ++b) add(block_s, double(pc.per_block));
  add(0, double(pc.final_norm));
  add(kernels_time_s(head_kernels(m, s, Pass::forward), gpu, dt), double(pc.head));
  const GroupShape shard = mesh_axis_group(par.dp_shard, par.tp * par.cp, p.cluster.gpus_per_node);
  const ClusterSpec cluster = p.cluster;
  in.all_gather_time_s = [shard, cluster](double b) { return collective_time_s(Collective::all_gather, b, shard, cluster); };
  in.reduce_scatter_time_s = [shard, cluster](double b) {
    return collective_time_s(Collective::reduce_scatter, b, shard, cluster);
  };
  return in;
}

}  // namespace

std::vector<PlanUnit> wrap_simplefsdp_auto(const Plan& tmpl, double memory_budget_bytes) {
  const ModelSpec& m = tmpl.model;
  BucketingInputs in = module_costs(tmpl);
  std::vector<std::string> names = module_names(m);
  if (m.tied_embeddings) {  // the shared weight is gathered with the head (its unit), not first
    names.erase(names.begin());
    in.compute_s.erase(in.compute_s.begin());
    in.gathered_bytes.erase(in.gathered_bytes.begin());
    in.grad_bytes.erase(in.grad_bytes.begin());
  }
  double total_bytes = 0;
  for (double b : in.gathered_bytes) total_bytes += b;
  // Largest calibrated all-gather: 0.2 x the sum of all-gather sizes (autoparallel estimation.py).
  in.max_bucket_bytes = 0.2 * total_bytes;
  in.memory_budget_bytes = memory_budget_bytes;
  std::vector<PlanUnit> units;
  for (const auto& bucket : simplefsdp_buckets(in)) {
    PlanUnit u{{}, 1};
    for (int i : bucket) u.modules.push_back(names[std::size_t(i)]);
    units.push_back(std::move(u));
  }
  if (m.tied_embeddings) units.back().modules.insert(units.back().modules.begin(), "embedding");
  units.back().reshard_after_forward = 0;
  return units;
}

}  // namespace fsdpx
