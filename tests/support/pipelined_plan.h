// tests/support/pipelined_plan.h — the plans the steady-state tests build (with and without pipeline
// parallelism): default_plan for a model and cluster, with micro-batch 1 and `accum` micro-batches per
// step; llama-tiny gets 16 blocks (enough for 4 x 2 virtual stages); the cluster is cut to the world size.
#pragma once

#include <algorithm>
#include <string>

#include "core/config_paths.h"
#include "core/plan.h"

namespace fsdpx::test {

inline Plan pipelined_plan(const char* model, const char* cluster, Parallelism par, PipelineSchedule schedule, int vpp,
                           std::int64_t seq, std::int64_t accum, RecomputeMode rc) {
  ModelSpec m = load_model(model);
  if (m.name == "llama-tiny") m.layers = 16;
  ClusterSpec c = load_cluster(cluster);
  par.vpp = vpp;
  par.pp_schedule = schedule;
  c.gpus_per_node = std::string(cluster) == "cpu" ? par.world_size() : std::min(c.gpus_per_node, par.world_size());
  c.nodes = par.world_size() / c.gpus_per_node;
  TrainingSettings t;
  t.seq = seq;
  t.micro_batch = 1;
  t.global_batch = par.data_parallel_ranks() * accum;
  Plan p = default_plan(m, c, t, par, 1, rc);
  validate_plan(p, "test");
  return p;
}

}  // namespace fsdpx::test
