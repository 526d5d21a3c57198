// tools/cluster_size.h — applies --nodes / --world-size to a loaded cluster. A world size below one
// node's GPU count uses part of one node (and sets the thread count of the `cpu` cluster); above it and
// not a multiple, the last node is used in part (ClusterSpec::gpus).
#pragma once

#include <optional>

#include <fmt/format.h>

#include "core/cluster_spec.h"
#include "core/errors.h"

namespace fsdpx {

inline ClusterSpec sized_cluster(ClusterSpec c, std::optional<int> nodes, std::optional<int> world_size) {
  if (nodes && world_size) throw ConfigError("command line: give --nodes or --world-size, not both");
  if (!nodes && !world_size) throw ConfigError("command line: --nodes or --world-size is required");
  if (world_size) {
    if (*world_size < 1) throw ConfigError(fmt::format("command line: --world-size: expected a positive integer, got {}", *world_size));
    if (*world_size <= c.gpus_per_node) {
      c.gpus_per_node = *world_size;
      c.nodes = 1;
    } else {
      c.nodes = (*world_size + c.gpus_per_node - 1) / c.gpus_per_node;
      c.gpus = *world_size % c.gpus_per_node == 0 ? 0 : *world_size;
    }
  } else {
    if (*nodes < 1) throw ConfigError(fmt::format("command line: --nodes: expected a positive integer, got {}", *nodes));
    c.nodes = *nodes;
    c.gpus = 0;
  }
  if (c.nodes > 1 && c.inter.nics_per_node <= 0)
    throw ConfigError(fmt::format("command line: cluster {} has no inter-node fabric and holds one node only", c.name));
  return c;
}

}  // namespace fsdpx
