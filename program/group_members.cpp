// program/group_members.cpp — group membership on the (dp_replicate, dp_shard, cp, tp) mesh: a group
// varies some coordinates of a rank and keeps the others (torchtitan's DeviceMesh sub-meshes; FSDP2's
// int reshard_after_forward = g groups runs of g consecutive ranks of the shard group, dp_shard or, when
// cp > 1, dp_shard_cp; the experts' efsdp group takes every (ep / cp)-th dp_shard coordinate). Leaves out custom
// rank orders and the pipeline groups, whose members are the same mesh point of several roles.
#include "program/group_members.h"

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {

MeshCoord mesh_coord(const Mesh& mesh, int rank) {
  FSDP_CHECK(rank >= 0 && rank < mesh.size(), "rank outside the mesh");
  MeshCoord c;
  c.tp = rank % mesh.tp;
  rank /= mesh.tp;
  c.cp = rank % mesh.cp;
  rank /= mesh.cp;
  c.dp_shard = rank % mesh.dp_shard;
  c.dp_replicate = rank / mesh.dp_shard;
  return c;
}

int mesh_rank(const Mesh& mesh, const MeshCoord& c) {
  return ((c.dp_replicate * mesh.dp_shard + c.dp_shard) * mesh.cp + c.cp) * mesh.tp + c.tp;
}

namespace {

// The half-open range [first, last) of each coordinate that members of the group span.
struct AxisRange {
  int first = 0, last = 1, step = 1;
};
struct GroupBox {
  AxisRange rep, shard, cp, tp;
};

GroupBox group_box(const Mesh& mesh, const ProcessGroup& group, const MeshCoord& c) {
  GroupBox b{{c.dp_replicate, c.dp_replicate + 1}, {c.dp_shard, c.dp_shard + 1},
             {c.cp, c.cp + 1}, {c.tp, c.tp + 1}};
  switch (group.kind) {
    case GroupKind::dp_shard: b.shard = {0, mesh.dp_shard}; break;
    case GroupKind::dp_replicate: b.rep = {0, mesh.dp_replicate}; break;
    case GroupKind::dp_all:
      b.rep = {0, mesh.dp_replicate};
      b.shard = {0, mesh.dp_shard};
      break;
    case GroupKind::dp_shard_cp:
      b.shard = {0, mesh.dp_shard};
      b.cp = {0, mesh.cp};
      break;
    case GroupKind::tp: b.tp = {0, mesh.tp}; break;
    case GroupKind::cp: b.cp = {0, mesh.cp}; break;
    case GroupKind::dp_cp:
      b.rep = {0, mesh.dp_replicate};
      b.shard = {0, mesh.dp_shard};
      b.cp = {0, mesh.cp};
      break;
    case GroupKind::mesh_all: b = GroupBox{{0, mesh.dp_replicate}, {0, mesh.dp_shard}, {0, mesh.cp}, {0, mesh.tp}}; break;
    case GroupKind::reshard:  // runs of the shard group: group_members cuts them from its box
      b.shard = {0, mesh.dp_shard};
      b.cp = {0, mesh.cp};
      break;
    case GroupKind::ep: {  // ep / cp consecutive dp_shard coordinates x every cp coordinate
      const int run = group.reshard_ranks / mesh.cp;
      FSDP_CHECK(run >= 1 && group.reshard_ranks % mesh.cp == 0 && mesh.dp_shard % run == 0,
                 "ep group: cp divides ep, ep / cp divides dp_shard");
      const int first = c.dp_shard / run * run;
      b.shard = {first, first + run};
      b.cp = {0, mesh.cp};
      break;
    }
    case GroupKind::efsdp: {  // the dp_shard coordinates ep / cp apart: one rank of each ep group
      const int run = group.reshard_ranks / mesh.cp;
      FSDP_CHECK(run >= 1 && group.reshard_ranks % mesh.cp == 0 && mesh.dp_shard % run == 0,
                 "efsdp group: cp divides ep, ep / cp divides dp_shard");
      b.shard = {c.dp_shard % run, mesh.dp_shard, run};
      break;
    }
    case GroupKind::pp_pair:
    case GroupKind::pp_ends:
    case GroupKind::pp_all: FSDP_CHECK(false, "pipeline groups span roles: their ops meet by rendezvous");
  }
  return b;
}

}  // namespace

void group_members(const Mesh& mesh, const ProcessGroup& group, int rank, std::vector<int>& members) {
  members.clear();
  const GroupBox b = group_box(mesh, group, mesh_coord(mesh, rank));
  // Nested loops outermost axis first give increasing row-major ranks.
  for (int r = b.rep.first; r < b.rep.last; ++r)
    for (int s = b.shard.first; s < b.shard.last; s += b.shard.step)
      for (int c = b.cp.first; c < b.cp.last; ++c)
        for (int t = b.tp.first; t < b.tp.last; ++t) members.push_back(mesh_rank(mesh, {r, s, c, t}));
  if (group.kind != GroupKind::reshard) return;
  // FSDP2's post-forward mesh: the run of g consecutive shard-group ranks (dp_shard x cp, in rank order:
  // the flat index dp_shard · cp + cp) that holds `rank`.
  const int g = group.reshard_ranks;
  FSDP_CHECK(g >= 1 && int(members.size()) % g == 0, "reshard group size must divide the shard group");
  const MeshCoord at = mesh_coord(mesh, rank);
  const int first = (at.dp_shard * mesh.cp + at.cp) / g * g;
  members.erase(members.begin() + first + g, members.end());
  members.erase(members.begin(), members.begin() + first);
}

int group_size(const Mesh& mesh, const ProcessGroup& group) {
  switch (group.kind) {
    case GroupKind::dp_shard: return mesh.dp_shard;
    case GroupKind::dp_replicate: return mesh.dp_replicate;
    case GroupKind::dp_all: return mesh.dp_replicate * mesh.dp_shard;
    case GroupKind::dp_shard_cp: return mesh.dp_shard * mesh.cp;
    case GroupKind::tp: return mesh.tp;
    case GroupKind::cp: return mesh.cp;
    case GroupKind::reshard: return group.reshard_ranks;
    case GroupKind::dp_cp: return mesh.dp_replicate * mesh.dp_shard * mesh.cp;
    case GroupKind::mesh_all: return mesh.size();
    case GroupKind::ep: return group.reshard_ranks;
    case GroupKind::efsdp: return mesh.dp_shard * mesh.cp / group.reshard_ranks;
    case GroupKind::pp_pair:
    case GroupKind::pp_ends:
    case GroupKind::pp_all: return group.shape.ranks;  // one rank per member role
  }
  FSDP_CHECK(false, "unknown GroupKind");
  return 0;
}

GroupShape group_shape(const Mesh& mesh, const ProcessGroup& group, int gpus_per_node) {
  std::vector<int> members;
  group_members(mesh, group, 0, members);
  GroupShape g;
  g.ranks = int(members.size());
  g.ranks_per_node = 0;
  for (int r : members) g.ranks_per_node += r / std::max(1, gpus_per_node) == 0 ? 1 : 0;
  return g;
}

}  // namespace fsdpx
