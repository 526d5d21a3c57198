// tests/planner/test_shape_order.cpp — the lazy shape order (planner/shape_order.h) against bounding every
// shape and sorting: the same shapes in the same order, each shape's bound at most its speed limit, and a
// search that stops early bounds fewer shapes than it enumerates.
#include <doctest/doctest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "core/config_paths.h"
#include "planner/shape_bound.h"
#include "planner/shape_order.h"
#include "planner/shapes.h"
#include "planner/target.h"

namespace fsdpx {

namespace {

PlanRequest request(const char* model, int nodes, std::int64_t seq, std::int64_t batch, const char* target) {
  PlanRequest r;
  r.model = load_model(model);
  r.cluster = load_cluster("dgx-h100");
  r.cluster.nodes = nodes;
  r.seq = seq;
  r.global_batch = batch;
  r.target = parse_target(target, "test");
  return resolve_memory(r);
}

// Every shape bounded, in the order search.cpp used before the lazy order: a stable sort of the enumeration
// by throughput bound down, then least memory bound up.
std::vector<ShapeBound> eager_order(const PlanRequest& r, const Space& s) {
  std::vector<ShapeBound> out;
  PlanRequest narrowed = r;
  narrowed.space = s.knobs;
  for (const Parallelism& par : parallel_shapes(narrowed))
    for (std::int64_t mb : micro_batch_choices(narrowed, par)) {
      const Plan shape = shape_plan(r, par, mb, RecomputeMode::none);
      out.push_back(bound_shape(r, s, shape));
      CHECK(out.back().tps_bound <= shape_speed_limit(s, shape) * (1 + 1e-12));
    }
  std::stable_sort(out.begin(), out.end(), [](const ShapeBound& a, const ShapeBound& b) {
    if (a.tps_bound != b.tps_bound) return a.tps_bound > b.tps_bound;
    return a.least_memory_bound_bytes < b.least_memory_bound_bytes;
  });
  return out;
}

auto key(const ShapeBound& b) {
  const Parallelism& p = b.plan.parallelism;
  return std::make_tuple(p.dp_replicate, p.dp_shard, p.tp, p.cp, p.pp, p.vpp, int(p.pp_schedule),
                         b.plan.training.micro_batch, b.tps_bound, b.least_memory_bound_bytes);
}

}  // namespace

TEST_CASE("the lazy shape order is the eager order, and bounds only what it must") {
  const std::tuple<const char*, int, std::int64_t, std::int64_t, const char*> cases[] = {
      {"llama3.1-8b", 4, 8192, 64, "fsdpx"},
      {"llama3.1-8b", 4, 8192, 64, "torchtitan@0.2.2"},
      {"llama3.1-70b", 16, 8192, 256, "torchtitan@0.2.2"},
  };
  for (const auto& [model, nodes, seq, batch, target] : cases) {
    CAPTURE(model);
    CAPTURE(target);
    const PlanRequest r = request(model, nodes, seq, batch, target);
    const Space s = effective_space(r);
    const std::vector<ShapeBound> eager = eager_order(r, s);
    SearchCounts counts;
    ShapeOrder lazy(r, s, counts);
    REQUIRE(lazy.total() == eager.size());
    // The first few shapes need only part of the space bounded.
    REQUIRE(lazy.at(2) != nullptr);
    const std::size_t bounded_for_three = lazy.bounded();
    CHECK(bounded_for_three >= 3);
    const std::vector<ShapeBound>& all = lazy.all();
    REQUIRE(all.size() == eager.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      CAPTURE(i);
      CHECK(key(all[i]) == key(eager[i]));
    }
    CHECK(counts.considered == std::int64_t(eager.size() * eager.front().choices));
    if (std::string(target) != "fsdpx") CHECK(bounded_for_three < eager.size());
  }
}

// The memory bound's part shared between a search's shapes (memory_bound.h MemoryBoundPart, keyed by
// memory_bound_key): every shape bounded with one memo equals the shape bounded alone, option by option
// (the first member that could fit, its throughput and memory bounds), and the memo shares parts between
// data-parallel splits. A key that missed a field the part reads would give some shape another's bytes.
TEST_CASE("shapes bounded with one memory-bound memo equal the shapes bounded alone") {
  for (const char* target : {"fsdpx", "torchtitan@0.2.2"}) {
    CAPTURE(target);
    const PlanRequest r = request("llama3.1-70b", 16, 8192, 4096, target);
    const Space s = effective_space(r);
    PlanRequest narrowed = r;
    narrowed.space = s.knobs;
    MemoryBoundMemo memo;
    std::size_t shapes = 0, pipelined_options = 0;
    for (const Parallelism& par : parallel_shapes(narrowed))
      for (std::int64_t mb : micro_batch_choices(narrowed, par)) {
        const Plan shape = shape_plan(r, par, mb, RecomputeMode::none);
        const ShapeBound alone = bound_shape(r, s, shape), shared = bound_shape(r, s, shape, &memo);
        CAPTURE(par.dp_replicate);
        CAPTURE(par.dp_shard);
        CAPTURE(par.pp);
        ++shapes;
        CHECK(shared.least_memory_bound_bytes == alone.least_memory_bound_bytes);
        CHECK(shared.least_bound.total() == alone.least_bound.total());
        CHECK(shared.saved_per_full_block_bytes == alone.saved_per_full_block_bytes);
        CHECK(shared.tps_bound == alone.tps_bound);
        REQUIRE(shared.options.size() == alone.options.size());
        for (std::size_t i = 0; i < alone.options.size(); ++i) {
          CHECK(shared.options[i].member_index == alone.options[i].member_index);
          CHECK(shared.options[i].tps_bound == alone.options[i].tps_bound);
          CHECK(shared.options[i].memory_bound_bytes == alone.options[i].memory_bound_bytes);
          pipelined_options += par.pp > 1 && alone.options[i].member_index >= 0;
        }
      }
    CHECK(pipelined_options > 0);  // the every-n-th family under pp is among them
    CHECK(memo.size() < shapes);   // shared between splits
    MESSAGE(std::string(target) << ": " << shapes << " shapes, " << memo.size() << " memory-bound parts");
  }
}

TEST_CASE("the memory bound's key tells sharded parameters from replicated ones, not the data-parallel split") {
  const PlanRequest r = request("llama3.1-8b", 4, 8192, 64, "fsdpx");
  Parallelism par;
  par.dp_shard = 8;
  par.tp = 4;
  Plan a = shape_plan(r, par, 1, RecomputeMode::none);
  Plan b = a;
  b.parallelism.dp_shard = 2, b.parallelism.dp_replicate = 4, b.parallelism.data_parallel = DataParallel::hsdp;
  CHECK(memory_bound_key(a, true) == memory_bound_key(b, true));
  b.parallelism.data_parallel = DataParallel::ddp;
  CHECK(memory_bound_key(a, true) != memory_bound_key(b, true));
  b = a;
  b.training.micro_batch = 2;
  CHECK(memory_bound_key(a, true) != memory_bound_key(b, true));
  CHECK(memory_bound_key(a, true) != memory_bound_key(a, false));
}

}  // namespace fsdpx
