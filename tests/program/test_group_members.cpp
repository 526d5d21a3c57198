// tests/program/test_group_members.cpp — group membership on the (dp_replicate, dp_shard, cp, tp)
// mesh, checked by enumerating coordinates by hand.
#include <doctest/doctest.h>

#include <vector>

#include "program/group_members.h"

namespace fsdpx {
namespace {

// Mesh (dp_replicate 2, dp_shard 4, cp 1, tp 2): rank = (r * 4 + s) * 2 + t.
const Mesh kMesh{2, 4, 1, 2};

std::vector<int> members_of(GroupKind kind, int rank, int reshard_ranks = 0) {
  ProcessGroup g;
  g.kind = kind;
  g.reshard_ranks = reshard_ranks;
  std::vector<int> out;
  group_members(kMesh, g, rank, out);
  CHECK(static_cast<int>(out.size()) == group_size(kMesh, g));
  return out;
}

TEST_CASE("mesh coordinates are row-major, tp innermost") {
  const MeshCoord c = mesh_coord(kMesh, 13);  // 13 = (1 * 4 + 2) * 2 + 1
  CHECK(c.dp_replicate == 1);
  CHECK(c.dp_shard == 2);
  CHECK(c.cp == 0);
  CHECK(c.tp == 1);
  for (int r = 0; r < kMesh.size(); ++r) CHECK(mesh_rank(kMesh, mesh_coord(kMesh, r)) == r);
}

TEST_CASE("group members by kind") {
  // Rank 13: r 1, s 2, t 1.
  CHECK(members_of(GroupKind::dp_shard, 13) == std::vector<int>{9, 11, 13, 15});
  CHECK(members_of(GroupKind::dp_replicate, 13) == std::vector<int>{5, 13});
  CHECK(members_of(GroupKind::dp_all, 13) == std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15});
  CHECK(members_of(GroupKind::tp, 13) == std::vector<int>{12, 13});
  CHECK(members_of(GroupKind::cp, 13) == std::vector<int>{13});
  // reshard g = 2: dp_shard coordinates {2, 3} form the run of rank 13's coordinate 2.
  CHECK(members_of(GroupKind::reshard, 13, 2) == std::vector<int>{13, 15});
  CHECK(members_of(GroupKind::reshard, 3, 2) == std::vector<int>{1, 3});
}

TEST_CASE("every rank of a group instance sees the same members") {
  for (GroupKind kind : {GroupKind::dp_shard, GroupKind::dp_replicate, GroupKind::dp_all, GroupKind::tp}) {
    for (int rank = 0; rank < kMesh.size(); ++rank) {
      const std::vector<int> mine = members_of(kind, rank);
      for (int other : mine) CHECK(members_of(kind, other) == mine);
    }
  }
}

TEST_CASE("cp axis between dp_shard and tp") {
  const Mesh m{1, 2, 3, 2};  // rank = (s * 3 + c) * 2 + t
  ProcessGroup g;
  g.kind = GroupKind::cp;
  std::vector<int> out;
  group_members(m, g, 9, out);  // 9 = (1 * 3 + 1) * 2 + 1
  CHECK(out == std::vector<int>{7, 9, 11});
  g.kind = GroupKind::dp_shard;
  group_members(m, g, 9, out);
  CHECK(out == std::vector<int>{3, 9});
}

// FSDP's shard group when cp > 1 (torchtitan's dp_shard_cp): every dp_shard and cp coordinate of a
// (dp_replicate, tp) point, in the flat order dp_shard x cp + cp; reshard runs cut that order.
TEST_CASE("dp_shard_cp spans dp_shard and cp; reshard groups are runs of it") {
  const Mesh m{2, 2, 3, 2};  // rank = ((r * 2 + s) * 3 + c) * 2 + t
  CHECK(shard_group_kind(m) == GroupKind::dp_shard_cp);
  CHECK(shard_group_kind(Mesh{2, 2, 1, 2}) == GroupKind::dp_shard);
  ProcessGroup g;
  g.kind = GroupKind::dp_shard_cp;
  std::vector<int> out;
  group_members(m, g, 21, out);  // 21 = ((1 * 2 + 1) * 3 + 1) * 2 + 1: r 1, s 1, c 1, t 1
  CHECK(out == std::vector<int>{13, 15, 17, 19, 21, 23});
  CHECK(group_size(m, g) == 6);
  for (int rank = 0; rank < m.size(); ++rank) {
    std::vector<int> mine, theirs;
    group_members(m, g, rank, mine);
    for (int other : mine) {
      group_members(m, g, other, theirs);
      CHECK(theirs == mine);
    }
  }
  // g = 3 of the six: flat indices {3, 4, 5} hold rank 21 (flat 1 * 3 + 1 = 4); g = 2: {4, 5}.
  g.kind = GroupKind::reshard;
  g.reshard_ranks = 3;
  group_members(m, g, 21, out);
  CHECK(out == std::vector<int>{19, 21, 23});
  g.reshard_ranks = 2;
  group_members(m, g, 21, out);
  CHECK(out == std::vector<int>{21, 23});
  group_members(m, g, 17, out);  // 17: r 1, s 0, c 2 (flat 2): the run {2, 3} crosses into s 1
  CHECK(out == std::vector<int>{17, 19});
  CHECK(group_size(m, g) == 2);
}

}  // namespace
}  // namespace fsdpx
