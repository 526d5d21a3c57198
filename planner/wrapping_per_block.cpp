// planner/wrapping_per_block.cpp — per-block wrapping as FSDP2 / torchtitan apply_fsdp does it
// (pytorch/torchtitan: apply_fsdp in torchtitan/parallelisms/parallelize_llama.py, and SimpleFSDP's manual
// bucket plan [tok_embeddings], one entry per layers.<i>, [norm, output] in
// torchtitan/experiments/simple_fsdp/llama3/parallelize.py get_transformer_block_buckets),
// generalised to k blocks per unit and to merging the embedding / the head into their neighbours.
// Leaves out sub-block units.
#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "planner/wrapping.h"

namespace fsdpx {

std::vector<PlanUnit> wrap_per_block(const ModelSpec& m, const PerBlockWrapping& w) {
  FSDP_CHECK(w.blocks_per_unit >= 1 && m.layers >= 1, "per-block wrapping needs k >= 1 and a block");
  const bool merge_embedding = w.merge_embedding && !m.tied_embeddings;  // tied: lives with the head
  std::vector<PlanUnit> units;
  if (!m.tied_embeddings && !merge_embedding) units.push_back(PlanUnit{{"embedding"}, 1});
  for (std::int64_t first = 0; first < m.layers; first += w.blocks_per_unit) {
    PlanUnit u{{}, 1};
    if (first == 0 && merge_embedding) u.modules.emplace_back("embedding");
    for (std::int64_t b = first; b < std::min<std::int64_t>(first + w.blocks_per_unit, m.layers); ++b)
      u.modules.push_back(fmt::format("block.{}", b));
    units.push_back(std::move(u));
  }
  // A tied embedding shares its weight with the head: both must sit in one unit (plan-format.md).
  if (w.merge_head && !m.tied_embeddings) {
    units.back().modules.emplace_back("final_norm");
    units.back().modules.emplace_back("head");
  } else {
    PlanUnit last{{}, 1};
    if (m.tied_embeddings) last.modules.emplace_back("embedding");
    last.modules.emplace_back("final_norm");
    last.modules.emplace_back("head");
    units.push_back(std::move(last));
  }
  // Backward starts with the last unit: resharding it after forward would only re-gather it at once.
  units.back().reshard_after_forward = 0;
  return units;
}

}  // namespace fsdpx
