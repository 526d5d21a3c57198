// planner/ep_degrees.cpp — the ep values a shape admits (rules and sources in core/expert_parallel.h) and
// which targets train MoE blocks. Leaves out etp and pruning.
#include "planner/ep_degrees.h"

#include <fmt/format.h>

#include "core/backend_capabilities.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "core/model_spec_moe.h"
#include "cost_models/moe_params.h"

namespace fsdpx {

std::vector<int> ep_degrees(const ModelSpec& m, const Parallelism& par, int max_ep) {
  std::vector<int> out{1};
  if (!m.is_moe()) return out;
  const int folded = par.dp_shard * par.cp;  // the ranks ep folds onto (torchtitan, etp = tp)
  for (int ep = 2; ep <= folded && (max_ep <= 0 || ep <= max_ep); ++ep)
    if (folded % ep == 0 && ep % par.cp == 0 && m.moe.experts % ep == 0) out.push_back(ep);
  return out;
}

bool target_runs_expert_parallel(const Target& t, const ClusterSpec& cluster) {
  if (t.kind == TargetKind::torchtitan) return true;
  return backend_capabilities(cluster_device(cluster)).expert_parallel;
}

std::vector<int> searched_ep_degrees(const PlanRequest& r, const Parallelism& par) {
  if (!r.model.is_moe() || !target_runs_expert_parallel(r.target, r.cluster)) return {1};
  const int fixed = r.space.fixed.ep;
  std::vector<int> out = ep_degrees(r.model, par);
  std::erase_if(out, [&](int ep) { return fixed > 0 && ep != fixed; });
  return out;
}

void refuse_unplanned_request(const PlanRequest& r, const std::string& file, const std::string& path) {
  refuse_unplanned_model(r.model, file, path);
  if (!r.model.is_moe() || r.target.kind == TargetKind::torchtitan) return;
  const BackendCapabilities& caps = backend_capabilities(cluster_device(r.cluster));
  if (caps.moe && !untrained_moe_reason(r.model, caps)) return;  // at ep 1 unless the row runs expert parallelism
  throw_config_error(file, path,
                     fmt::format("model {}: target fsdpx: {}; plan for --target {} (expert_parallel_degree)", r.model.name,
                                 *untrained_moe_reason(r.model, caps), target_name(default_torchtitan_target())));
}

double moe_compute_floor_s(const Plan& p) {
  const ModelSpec& m = p.model;
  const double d_qk = m.is_mla() ? double(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim) : double(m.head_dim);
  const double d_v = m.is_mla() ? double(m.mla.v_head_dim) : double(m.head_dim);
  const double causal_half = 3.0 * double(m.layers) * double(m.heads) * (d_qk + d_v) * double(p.training.seq);
  const double per_token = moe_model_flops_per_token(m, p.training.seq) - causal_half;  // 6N + the causal half
  const double tokens = double(p.training.global_batch) * double(p.training.seq);
  return tokens * per_token / double(p.parallelism.world_size()) / p.cluster.gpu.peak(p.precision.param);
}

}  // namespace fsdpx
