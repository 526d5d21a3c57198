// tools/cluster_size.h — applies --nodes / --world-size to a loaded cluster. A world size below one
// node's GPU count uses part of one node; on a host cluster (`cpu`: ranks are threads or processes of
// one machine) the world size is the rank count of its one node, whatever its default. Above one node
// and not a multiple, the last node is used in part (ClusterSpec::gpus). Both are range-checked against
// kMaxWorldSize and the node count against input_range::kNodes, the limits the plan and cluster readers
// apply, so that `plan` never writes a plan that `simulate` or `run` refuse.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "core/cluster_spec.h"
#include "core/errors.h"
#include "core/input_ranges.h"

namespace fsdpx {

inline ClusterSpec sized_cluster(ClusterSpec c, std::optional<int> nodes, std::optional<int> world_size) {
  if (nodes && world_size) throw ConfigError("command line: give --nodes or --world-size, not both");
  if (!nodes && !world_size) throw ConfigError("command line: --nodes or --world-size is required");
  if (world_size) {
    if (*world_size < 1 || *world_size > kMaxWorldSize)
      throw ConfigError(fmt::format("command line: --world-size: expected an integer from 1 to {}, got {}",
                                    kMaxWorldSize, *world_size));
    if (*world_size <= c.gpus_per_node || c.host_threads) {
      c.gpus_per_node = *world_size;
      c.nodes = 1;
    } else {
      c.nodes = (*world_size + c.gpus_per_node - 1) / c.gpus_per_node;
      c.gpus = *world_size % c.gpus_per_node == 0 ? 0 : *world_size;
      if (c.nodes > input_range::kNodes.max)
        throw ConfigError(fmt::format("command line: --world-size: {} ranks of {} GPUs per node need {} nodes, more "
                                      "than {}", *world_size, c.gpus_per_node, c.nodes, input_range::kNodes.max));
    }
  } else {
    const int max_nodes = int(std::min<std::int64_t>(kMaxWorldSize / c.gpus_per_node, input_range::kNodes.max));
    if (*nodes < 1 || *nodes > max_nodes)
      throw ConfigError(fmt::format("command line: --nodes: expected an integer from 1 to {} ({} ranks of {} GPUs per "
                                    "node, at most {} nodes), got {}", max_nodes, kMaxWorldSize, c.gpus_per_node, input_range::kNodes.max, *nodes));
    c.nodes = *nodes;
    c.gpus = 0;
  }
  if (c.nodes > 1 && c.inter.nics_per_node <= 0)
    throw ConfigError(fmt::format("command line: cluster {} has no inter-node fabric and holds one node only", c.name));
  return c;
}

}  // namespace fsdpx
