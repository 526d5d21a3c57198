// planner/ep_degrees.cpp — the ep values a shape admits (rules and sources in core/expert_parallel.h).
// Leaves out etp and pruning.
#include "planner/ep_degrees.h"

namespace fsdpx {

std::vector<int> ep_degrees(const ModelSpec& m, const Parallelism& par, int max_ep) {
  std::vector<int> out{1};
  if (!m.is_moe()) return out;
  const int folded = par.dp_shard * par.cp;  // the ranks ep folds onto (torchtitan, etp = tp)
  for (int ep = 2; ep <= folded && (max_ep <= 0 || ep <= max_ep); ++ep)
    if (folded % ep == 0 && ep % par.cp == 0 && m.moe.experts % ep == 0) out.push_back(ep);
  return out;
}

}  // namespace fsdpx
