// executor/runtime/runtime_program.cpp — where a rank sits in the runtime program's mesh (see runtime_program.h).
#include "executor/runtime/runtime_program.h"

#include <algorithm>

#include "core/errors.h"
#include "program/group_members.h"

namespace fsdpx {

PipelinePlace pipeline_place(const RuntimeProgram& rp, int rank) {
  const int mesh = rp.program.mesh.size();
  FSDP_CHECK(rank >= 0 && rank < mesh * rp.program.pp, "runtime: rank outside the world");
  return PipelinePlace{rank / mesh, rank % mesh};
}

int global_rank(const RuntimeProgram& rp, int role, int mesh_rank) { return role * rp.program.mesh.size() + mesh_rank; }

// The shard group (dp_shard x cp, program/group_members.h) orders its ranks dp_shard outer, cp inner.
RankShard rank_shard(const RuntimeProgram& rp, int rank) {
  const MeshCoord at = mesh_coord(rp.program.mesh, pipeline_place(rp, rank).mesh_rank);
  const int shard = at.dp_shard * rp.program.mesh.cp + at.cp;
  return {shard, at.dp_replicate, rp.shard_count > 1 ? shard : 0};
}

int shard_owner_mesh_rank(const RuntimeProgram& rp, int shard, int tp) {
  const int s = rp.shard_count > 1 ? shard : 0, cp = rp.program.mesh.cp;
  return mesh_rank(rp.program.mesh, MeshCoord{0, s / cp, s % cp, tp});
}

ExpertGroupPlace expert_group_place(const RuntimeProgram& rp, int rank) {
  const int ep = rp.settings.parallelism.ep;
  if (ep == 1) return {};
  std::vector<int> members;
  const int me = pipeline_place(rp, rank).mesh_rank;
  group_members(rp.program.mesh, ProcessGroup{GroupKind::efsdp, {}, ep}, me, members);
  return {int(members.size()), int(std::find(members.begin(), members.end(), me) - members.begin())};
}

bool replicated_params(const RuntimeProgram& rp, int unit) {
  return !is_sharded(rp.program.units[std::size_t(unit)].placement.params);
}

bool master_is_replica(const RuntimeProgram& rp, int unit) {
  return replicated_params(rp, unit) && !is_sharded(rp.program.units[std::size_t(unit)].placement.optimizer);
}

ModelParallel model_parallel(const RuntimeProgram& rp, int rank) {
  const MeshCoord at = mesh_coord(rp.program.mesh, pipeline_place(rp, rank).mesh_rank);
  const Mesh& mesh = rp.program.mesh;
  ModelParallel par;
  par.tp = mesh.tp, par.tp_rank = at.tp, par.cp = mesh.cp, par.cp_rank = at.cp;
  par.sequence_parallel = rp.settings.parallelism.sequence_parallel;
  par.ep = rp.settings.parallelism.ep;
  if (par.ep > 1) {  // the rank's place in the program's ep group (group_members: the one definition)
    std::vector<int> members;
    const int me = pipeline_place(rp, rank).mesh_rank;
    group_members(mesh, ProcessGroup{GroupKind::ep, {}, par.ep}, me, members);
    par.ep_rank = int(std::find(members.begin(), members.end(), me) - members.begin());
    FSDP_CHECK(int(members.size()) == par.ep && par.ep_rank < par.ep, "model_parallel: the ep group");
  }
  return par;
}

int data_parallel_index(const RuntimeProgram& rp, int rank) {
  const MeshCoord at = mesh_coord(rp.program.mesh, pipeline_place(rp, rank).mesh_rank);
  return at.dp_replicate * rp.program.mesh.dp_shard + at.dp_shard;
}

}  // namespace fsdpx
