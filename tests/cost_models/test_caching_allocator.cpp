// tests/cost_models/test_caching_allocator.cpp — the caching allocator's rounding, pages and per-stream
// pools (cost_models/caching_allocator.h) and the eager loss's hole (memory.h).
#include <doctest/doctest.h>

#include "cost_models/caching_allocator.h"
#include "cost_models/memory.h"
#include "tests/support/specs.h"

namespace fsdpx {
namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}

TEST_CASE("block rounding follows c10's round_size and kRoundLarge") {
  CHECK(allocator_block_bytes(0) == 512);
  CHECK(allocator_block_bytes(1) == 512);
  CHECK(allocator_block_bytes(513) == 1024);
  CHECK(allocator_block_bytes(5 * kMiB + 1) == 5 * kMiB + 512);  // under 10 MiB: 512 B steps
  CHECK(allocator_block_bytes(10 * kMiB + 1) == 12 * kMiB);     // from 10 MiB: 2 MiB steps
  CHECK(allocator_block_bytes(64 * kMiB) == 64 * kMiB);
}

TEST_CASE("expandable segments map whole 20 MiB pages and pools add up") {
  CHECK(expandable_mapped_bytes(0) == 0);
  CHECK(expandable_mapped_bytes(1) == 20 * kMiB);
  CHECK(expandable_mapped_bytes(40 * kMiB) == 40 * kMiB);
  StreamPoolBytes p;
  p.compute_allocated = 100 * kMiB;
  CHECK(reserved_bytes(p) == 100 * kMiB);
  p.compute_holes = 30 * kMiB;  // 130 -> 140 MiB of pages
  p.all_gather = 1 * kMiB;      // its own 20 MiB page: pools never share
  p.reduce_scatter = 41 * kMiB;
  CHECK(reserved_bytes(p) == (140 + 20 + 60) * kMiB);
}

TEST_CASE("FSDP2's all-gather pool holds two consecutive units") {
  CHECK(fsdp2_all_gather_pool_bytes({}) == 0);
  CHECK(fsdp2_all_gather_pool_bytes({64 * kMiB}) == 64 * kMiB);
  // embedding, blocks, head: the largest adjacent pair, not the two largest units
  CHECK(fsdp2_all_gather_pool_bytes({1000 * kMiB, 400 * kMiB, 400 * kMiB, 1000 * kMiB}) == 1400 * kMiB);
  CHECK(fsdp2_all_gather_pool_bytes({1000 * kMiB, 400 * kMiB, 1000 * kMiB}) == 1400 * kMiB);
  CHECK(fsdp2_all_gather_pool_bytes({100 * kMiB, 900 * kMiB, 800 * kMiB}) == 1700 * kMiB);
}

TEST_CASE("the eager loss leaves the act-dtype logits as a hole; fused and fp32 logits leave none") {
  const ModelSpec m = test::llama31_8b();
  ActivationShape s;
  s.micro_batch = 2;
  s.seq = 8192;
  s.act_bytes = 2;
  CHECK(eager_loss_hole_bytes(m, s) == doctest::Approx(2.0 * 8192 * 128256 * 2));
  s.tp = 4;  // loss parallel: the vocabulary is split
  CHECK(eager_loss_hole_bytes(m, s) == doctest::Approx(2.0 * 8192 * 128256 * 2 / 4));
  s.fused_loss = true;
  CHECK(eager_loss_hole_bytes(m, s) == 0);
  s.fused_loss = false;
  s.act_bytes = 4;
  CHECK(eager_loss_hole_bytes(m, s) == 0);
}

}  // namespace fsdpx
