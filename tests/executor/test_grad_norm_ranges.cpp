// tests/executor/test_grad_norm_ranges.cpp — the shard ranges the gradient norm counts
// (executor/runtime/grad_norm_ranges.h): the whole shard on tp rank 0; on another tp rank every element
// but those of tensors each tp rank holds whole, so that over the tp group those count exactly once.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "executor/runtime/grad_norm_ranges.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

// Elements of the unit (flat coordinates) that belong to tensors every tp rank holds whole.
std::vector<char> replicated_mask(const ParamLayout& layout, const FlatUnitLayout& f) {
  std::vector<char> mask(std::size_t(f.padded_numel), 0);
  for (std::size_t k = 0; k < f.modules.size(); ++k)
    for (const TensorSlot& t : layout.modules[std::size_t(f.modules[k])].tensors)
      if (t.tp_replicated)
        for (std::int64_t e = 0; e < t.numel(); ++e) mask[std::size_t(f.module_offsets[k] + t.offset + e)] = 1;
  return mask;
}

TEST_CASE("gradient norm ranges: tp rank 0 counts its whole shard, the others skip tp-replicated tensors") {
  for (ModelSpec model : {test::tiny_llama(), test::tiny_gpt()}) {
    CAPTURE(model.name);
    model.vocab = 14;  // tp 2 splits the vocabulary
    const ParamLayout layout = make_param_layout(model, TpSlice{2, 1});
    const std::vector<std::string> block{layout.modules[1].name};
    const FlatUnitLayout f = make_flat_unit(layout, block, 2);
    const std::vector<char> replicated = replicated_mask(layout, f);
    std::int64_t replicated_total = 0;
    for (char r : replicated) replicated_total += r;
    REQUIRE(replicated_total > 0);  // the block's norm weights

    std::int64_t counted_total = 0;
    for (int shard = 0; shard < 2; ++shard) {
      const ShardRanges whole = grad_norm_ranges(layout, f, shard, 0);
      REQUIRE(whole.size() == 1);
      CHECK(whole[0] == std::pair<std::int64_t, std::int64_t>{0, f.shard_numel});
      std::int64_t at = 0;
      for (const auto& [begin, end] : grad_norm_ranges(layout, f, shard, 1)) {
        CHECK(begin >= at);  // ascending and disjoint
        CHECK(begin < end);
        CHECK(end <= f.shard_numel);
        for (std::int64_t i = begin; i < end; ++i)
          CHECK_FALSE(replicated[std::size_t(shard * f.shard_numel + i)]);
        counted_total += end - begin;
        at = end;
      }
    }
    // Everything else (the split tensors and the padding) counts once over the two shards.
    CHECK(counted_total == f.padded_numel - replicated_total);
  }
}

}  // namespace
}  // namespace fsdpx
