// executor/runtime/grad_norm_ranges.cpp — the gradient norm's counted shard ranges (see grad_norm_ranges.h).
#include "executor/runtime/grad_norm_ranges.h"

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {

namespace {

// The ranges of shard [first, first + count) (in shard coordinates) holding tensors every tp rank holds
// whole, in layout order.
ShardRanges replicated_ranges(const ParamLayout& layout, const FlatUnitLayout& f, std::int64_t first,
                              std::int64_t count) {
  ShardRanges out;
  for (std::size_t k = 0; k < f.modules.size(); ++k)
    for (const TensorSlot& t : layout.modules[std::size_t(f.modules[k])].tensors) {
      if (!t.tp_replicated) continue;
      const std::int64_t begin = std::max(first, f.module_offsets[k] + t.offset);
      const std::int64_t end = std::min(first + count, f.module_offsets[k] + t.offset + t.numel());
      if (begin < end) out.emplace_back(begin - first, end - first);
    }
  return out;
}

}  // namespace

ShardRanges grad_norm_ranges(const ParamLayout& layout, const FlatUnitLayout& flat, int shard_index, int tp_rank) {
  const std::int64_t n = flat.shard_numel;
  if (tp_rank == 0) return {{0, n}};
  ShardRanges out;
  std::int64_t at = 0;  // the complement of the replicated ranges
  for (const auto& [begin, end] : replicated_ranges(layout, flat, std::int64_t(shard_index) * n, n)) {
    FSDP_CHECK(begin >= at, "grad_norm_ranges: tensors out of layout order");
    if (begin > at) out.emplace_back(at, begin);
    at = end;
  }
  if (at < n) out.emplace_back(at, n);
  return out;
}

}  // namespace fsdpx
