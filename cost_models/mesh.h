// cost_models/mesh.h — where a device-mesh axis's process groups lie on the cluster. The mesh is
// ordered (dp_replicate, dp_shard, cp, tp) with tp innermost, as torchtitan orders its mesh, so inner
// axes fill a node first. Leaves out custom rank orders and pipeline stages (pp joins outermost).
#pragma once

#include <algorithm>

#include "cost_models/communication.h"

namespace fsdpx {

// Group of an axis of `degree` ranks whose members are `inner_ranks` apart (the product of the inner
// axes' degrees) on nodes of `gpus_per_node` GPUs.
inline GroupShape mesh_axis_group(int degree, int inner_ranks, int gpus_per_node) {
  GroupShape g;
  g.ranks = degree;
  const int per_node = inner_ranks >= gpus_per_node ? 1 : gpus_per_node / inner_ranks;
  g.ranks_per_node = std::clamp(per_node, 1, std::max(1, degree));
  return g;
}

}  // namespace fsdpx
