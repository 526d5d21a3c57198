// tests/core/test_pipeline.cpp — stage balancing against closed forms: torchtitan's split of
// layers + input_weight + output_weight effective layers (remainder to the first stages), Megatron-LM's
// even split (no weights), fractional planner weights, and the errors for splits that leave a stage empty.
#include <doctest/doctest.h>

#include <numeric>
#include <string>

#include "core/errors.h"
#include "core/pipeline.h"

namespace fsdpx {
namespace {

int total(const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); }

TEST_CASE("stage placement: virtual stage v runs on rank v mod pp as chunk v div pp") {
  CHECK(stage_rank(5, 4) == 1);
  CHECK(stage_chunk(5, 4) == 1);
  CHECK(chunk_stage(1, 1, 4) == 5);
  CHECK(virtual_stages(4, 3) == 12);
}

TEST_CASE("integer weights: torchtitan's split of effective layers, remainder to the first stages") {
  // 32 blocks + 1 + 1 = 34 effective over 4 stages: 9, 9, 8, 8 effective; minus the embedding on the
  // first and the head on the last.
  CHECK(balance_stage_blocks(32, 4, {1, 1}) == std::vector<int>{8, 9, 8, 7});
  // Megatron's default (no accounting): an even split.
  CHECK(balance_stage_blocks(126, 63, {0, 0}) == std::vector<int>(63, 2));
  // 16 stages of 126 blocks + 2: 8 each; first and last lose one.
  const auto b = balance_stage_blocks(126, 16, {1, 1});
  CHECK(b.front() == 7);
  CHECK(b.back() == 7);
  CHECK(total(b) == 126);
}

TEST_CASE("fractional weights round each boundary to the nearest block") {
  // 8 blocks + 0.5 + 1.5 = 10 effective over 2 stages of 5: stage 0 ends at 5 - 0.5 = 4.5 -> 5 blocks
  // (std::lround rounds half away from zero).
  const auto b = balance_stage_blocks(8, 2, {0.5, 1.5});
  CHECK(b == std::vector<int>{5, 3});
  const auto c = balance_stage_blocks(10, 3, {0.4, 2.2});
  CHECK(total(c) == 10);
  CHECK(c.back() < c.front());  // the heavy head leaves the last stage fewer blocks
}

TEST_CASE("splits that leave a middle stage without blocks are refused") {
  CHECK_THROWS_AS(balance_stage_blocks(2, 4, {0, 0}), ConfigError);
  CHECK_THROWS_AS(balance_stage_blocks(4, 2, {-1, 0}), ConfigError);
  // 2 + 1 + 1 = 4 effective over 3 stages (2, 1, 1): the last stage may hold the head alone.
  CHECK(balance_stage_blocks(2, 3, {1, 1}) == std::vector<int>{1, 1, 0});
}

}  // namespace
}  // namespace fsdpx
