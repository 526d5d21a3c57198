// executor/model/expert_shards.cpp — the dense and expert parts of an FSDP unit (see expert_shards.h).
#include "executor/model/expert_shards.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/model/init.h"

namespace fsdpx {

ExpertShards make_expert_shards(const ParamLayout& local, const FlatUnitLayout& f, int dense_ranks, int dense_index,
                                int expert_ranks, int expert_index) {
  FSDP_CHECK(dense_ranks >= 1 && expert_ranks >= 1, "make_expert_shards: group sizes");
  ExpertShards s;
  for (std::size_t k = 0; k < f.modules.size(); ++k)
    for (const TensorSlot& t : local.modules[std::size_t(f.modules[k])].tensors)
      for (std::int64_t e = 0; e < t.numel(); ++e)
        (t.expert ? s.expert : s.dense).push_back(f.module_offsets[k] + t.offset + e);
  std::sort(s.dense.begin(), s.dense.end());  // tensors tile each module in order already; keep unit order
  s.dense_ranks = dense_ranks, s.dense_index = dense_index;
  s.expert_ranks = expert_ranks, s.expert_index = expert_index;
  s.dense_shard = (std::int64_t(s.dense.size()) + dense_ranks - 1) / dense_ranks;
  s.expert_shard = (std::int64_t(s.expert.size()) + expert_ranks - 1) / expert_ranks;
  return s;
}

FlatUnitLayout expert_dense_view(FlatUnitLayout f, const ExpertShards& p) {
  f.shard_numel = p.dense_shard;
  f.padded_numel = p.dense_shard * p.dense_ranks;
  return f;
}

FlatUnitLayout expert_state_view(FlatUnitLayout f, const ExpertShards& p) {
  f.shard_numel = p.state_numel();
  f.padded_numel = f.numel;
  return f;
}

std::vector<PartRun> part_runs(const std::vector<std::int64_t>& part) {
  std::vector<PartRun> runs;
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (!runs.empty() && runs.back().unit_at + runs.back().count == part[i]) {
      ++runs.back().count;
      continue;
    }
    runs.push_back({std::int64_t(i), part[i], 1});
  }
  return runs;
}

namespace {

// The module (index into f.modules) holding unit element `e`.
std::size_t module_at(const FlatUnitLayout& f, std::int64_t e) {
  const auto it = std::upper_bound(f.module_offsets.begin(), f.module_offsets.end(), e);
  return std::size_t(it - f.module_offsets.begin()) - 1;
}

void init_part(const ParamLayout& local, const FlatUnitLayout& f, const std::vector<std::int64_t>& part,
               std::int64_t first, std::int64_t count, std::uint64_t seed, float* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t at = first + i;
    if (at >= std::int64_t(part.size())) {
      out[i] = 0.0f;  // padding
      continue;
    }
    const std::int64_t e = part[std::size_t(at)];
    const std::size_t k = module_at(f, e);
    out[i] = float(init_value(local, seed, f.modules[k], e - f.module_offsets[k]));
  }
}

}  // namespace

void init_expert_shards(const ParamLayout& local, const FlatUnitLayout& f, const ExpertShards& s, std::uint64_t seed,
                        float* out) {
  init_part(local, f, s.dense, s.dense_index * s.dense_shard, s.dense_shard, seed, out);
  init_part(local, f, s.expert, s.expert_index * s.expert_shard, s.expert_shard, seed, out + s.dense_shard);
}

}  // namespace fsdpx
