// program/group_members.h — which ranks of the device mesh take part in one instance of a process
// group (the mesh axes of step_program.h's Mesh comment), for the engine's expanded mode, where a
// collective starts only when every member has reached it. Ranks are row-major indices of the mesh
// (dp_replicate, dp_shard, cp, tp); leaves out pipeline stages (each stage is a role with its own mesh).
#pragma once

#include <vector>

#include "program/step_program.h"

namespace fsdpx {

// Coordinates of a rank on the mesh, outermost axis first.
struct MeshCoord {
  int dp_replicate = 0, dp_shard = 0, cp = 0, tp = 0;
};

MeshCoord mesh_coord(const Mesh& mesh, int rank);
int mesh_rank(const Mesh& mesh, const MeshCoord& c);

// Members of the group instance that `rank` belongs to, in increasing rank order (so members[0] is a
// canonical id of the instance). Writes into `members` (cleared first) to avoid allocation per call.
void group_members(const Mesh& mesh, const ProcessGroup& group, int rank, std::vector<int>& members);

// The group FSDP shards a unit's parameters, gradients and optimizer state over (its all-gathers and
// reduce-scatters): dp_shard, or dp_shard_cp when cp > 1 (torchtitan's dp_shard_cp mesh).
inline GroupKind shard_group_kind(const Mesh& mesh) { return mesh.cp > 1 ? GroupKind::dp_shard_cp : GroupKind::dp_shard; }
// Its ranks, which a sharded state is cut over: dp_shard x cp, since context-parallel ranks hold the same
// parameters (torchtitan's dp_shard_cp, v0.2.2's "fsdp" = dp_shard * cp, distributed/parallel_dims.py;
// Megatron's distributed optimizer over the data x context parallel group).
inline int shard_group_ranks(const Parallelism& p) { return p.dp_shard * p.cp; }

// Number of members of every instance of `group` on `mesh` (the size of group_members's output).
int group_size(const Mesh& mesh, const ProcessGroup& group);

// How the instances of `group` lie on nodes of `gpus_per_node` ranks (rank r on node r / gpus_per_node):
// its size and the members of rank 0's instance on node 0 (groups are symmetric on the mesh).
GroupShape group_shape(const Mesh& mesh, const ProcessGroup& group, int gpus_per_node);

}  // namespace fsdpx
