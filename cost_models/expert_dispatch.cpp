// cost_models/expert_dispatch.cpp — routed rows, dispatch bytes and all-to-all time of one MoE block
// (sources in cost_models/expert_dispatch.h). Leaves out DeepEP, token dropping and fp8 dispatch.
#include "cost_models/expert_dispatch.h"

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {

RoutedLoad routed_load(const ModelSpec& m, std::int64_t micro_batch, std::int64_t seq, const Parallelism& p,
                       const MoeRouting& r) {
  FSDP_CHECK(m.is_moe(), "routed_load: an MoE model");
  RoutedLoad l;
  l.tokens = double(micro_batch) * double(seq) / p.cp;
  l.mean_rows = l.tokens * double(m.moe.top_k);
  const double slowest_over_mean = p.ep > 1 ? std::min(r.token_imbalance, double(p.ep)) : 1.0;
  l.slowest_rows = l.mean_rows * slowest_over_mean;
  l.local_experts = local_experts(m, p);
  l.rows_per_expert = l.slowest_rows / double(l.local_experts);
  return l;
}

double dispatch_all_to_all_bytes(const ModelSpec& m, const RoutedLoad& l, DType dispatch) {
  return l.mean_rows * double(m.hidden) * dtype_bytes(dispatch);
}

double dispatch_bytes_per_peer(double all_to_all_bytes, int ep) {
  FSDP_CHECK(ep >= 1, "dispatch_bytes_per_peer: ep >= 1");
  return all_to_all_bytes / ep;
}

double dispatch_time_s(double all_to_all_bytes, double slowest_over_mean, const GroupShape& ep_group,
                       const ClusterSpec& cluster) {
  if (ep_group.ranks <= 1) return 0.0;  // ep 1: the rows stay on the rank (a local permutation)
  FSDP_CHECK(slowest_over_mean >= 1.0, "dispatch_time_s: the slowest rank carries at least the mean");
  return collective_time_s(Collective::all_to_all, all_to_all_bytes * slowest_over_mean, ep_group, cluster);
}

GroupShape ep_group_shape(const Parallelism& p, const ClusterSpec& cluster) {
  FSDP_CHECK(p.tp >= 1 && cluster.gpus_per_node % p.tp == 0, "ep_group_shape: tp divides gpus_per_node");
  return GroupShape{p.ep, std::min(p.ep, cluster.gpus_per_node / p.tp)};
}

}  // namespace fsdpx
