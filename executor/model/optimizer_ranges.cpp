// executor/model/optimizer_ranges.cpp — the state's elements the optimizer steps (see optimizer_ranges.h).
#include "executor/model/optimizer_ranges.h"

#include <algorithm>

namespace fsdpx {
namespace {

// The buffers' [begin, end) ranges of unit elements, ascending.
ShardRanges buffer_elements(const ParamLayout& layout, const FlatUnitLayout& flat) {
  ShardRanges out;
  for (std::size_t k = 0; k < flat.modules.size(); ++k)
    for (const TensorSlot& t : layout.modules[std::size_t(flat.modules[k])].tensors)
      if (t.buffer) out.emplace_back(flat.module_offsets[k] + t.offset, flat.module_offsets[k] + t.offset + t.numel());
  return out;
}

// [0, n) less the frozen ranges (state indices, ascending, clipped to [0, n)).
ShardRanges complement(const ShardRanges& frozen, std::int64_t n) {
  ShardRanges out;
  std::int64_t at = 0;
  for (auto [b, e] : frozen) {
    b = std::clamp<std::int64_t>(b, 0, n), e = std::clamp<std::int64_t>(e, 0, n);
    if (b >= e) continue;
    if (b > at) out.emplace_back(at, b);
    at = std::max(at, e);
  }
  if (at < n) out.emplace_back(at, n);
  return out;
}

}  // namespace

ShardRanges stepped_ranges(const ParamLayout& layout, const FlatUnitLayout& flat, std::int64_t shard_offset,
                           std::int64_t shard_numel) {
  ShardRanges frozen = buffer_elements(layout, flat);
  for (auto& [b, e] : frozen) b -= shard_offset, e -= shard_offset;
  return complement(frozen, shard_numel);
}

ShardRanges stepped_ranges(const ParamLayout& layout, const FlatUnitLayout& flat, const ExpertShards& parts) {
  ShardRanges frozen;
  const std::int64_t first = std::int64_t(parts.dense_index) * parts.dense_shard;
  for (const auto& [b, e] : buffer_elements(layout, flat)) {  // a buffer's elements are consecutive in `dense`
    const auto lo = std::lower_bound(parts.dense.begin(), parts.dense.end(), b) - parts.dense.begin();
    const auto hi = std::lower_bound(parts.dense.begin(), parts.dense.end(), e) - parts.dense.begin();
    frozen.emplace_back(std::min<std::int64_t>(lo - first, parts.dense_shard),
                        std::min<std::int64_t>(hi - first, parts.dense_shard));
  }
  return complement(frozen, parts.state_numel());
}

}  // namespace fsdpx
