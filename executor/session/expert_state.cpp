// executor/session/expert_state.cpp — a rank's expert-parallel state in the full model (see expert_state.h).
#include "executor/session/expert_state.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/model/expert_shards.h"

namespace fsdpx {
namespace {

// Elements [first, first + count) of a part (`part`: the unit element of each), as full-unit elements.
void map_part(const RuntimeProgram& rp, std::size_t u, const ParamLayout& local, const std::vector<std::int64_t>& part,
              std::int64_t first, std::int64_t count, std::vector<std::int64_t>& out) {
  const FlatUnitLayout& f = rp.flats[u];
  for (std::int64_t i = first; i < first + count; ++i) {
    if (i >= std::int64_t(part.size())) {
      out.push_back(-1);
      continue;
    }
    const std::int64_t e = part[std::size_t(i)];
    const auto k = std::size_t(std::upper_bound(f.module_offsets.begin(), f.module_offsets.end(), e) -
                               f.module_offsets.begin()) - 1;
    const ModuleLayout& m = local.modules[std::size_t(f.modules[k])];
    out.push_back(rp.full_flats[u].module_offsets[k] + m.full_element(e - f.module_offsets[k]));
  }
}

}  // namespace

std::vector<std::int64_t> expert_state_full_elements(const RuntimeProgram& rp, std::size_t u, int rank) {
  const ModelParallel par = model_parallel(rp, rank);
  FSDP_CHECK(par.ep > 1, "expert_state_full_elements: an expert-parallel run");
  const ParamLayout& local = rank_layout(rp, par);
  const ExpertGroupPlace place = expert_group_place(rp, rank);
  const ExpertShards s = make_expert_shards(local, rp.flats[u], rp.shard_count, rank_shard(rp, rank).unit_shard,
                                            place.efsdp_ranks, place.efsdp_index);
  std::vector<std::int64_t> out;
  map_part(rp, u, local, s.dense, s.dense_index * s.dense_shard, s.dense_shard, out);
  map_part(rp, u, local, s.expert, s.expert_index * s.expert_shard, s.expert_shard, out);
  return out;
}

}  // namespace fsdpx
