// tests/simulator/test_certain_order.cpp — simulator/certain_order.h against the engine's own timeline: on
// seeded random plans (plan_generator.h: FSDP, HSDP, ZeRO, DDP, tp, prefetch depths 0-2, in-flight caps
// 1-3, gradient accumulation) every pair of ops the order calls ended-before or started-by is so in the
// simulated run; on Llama-3.1-8B with one block per unit the next unit's backward all-gather is certainly
// live at a unit's backward with prefetch 1 and a cap of 2, and not with prefetch 0 or a cap of 1 (it then
// waits for that backward).
#include <doctest/doctest.h>

#include <vector>

#include "program/lower.h"
#include "simulator/certain_order.h"
#include "simulator/engine.h"
#include "simulator/op_timing.h"
#include "tests/simulator/plan_generator.h"

namespace fsdpx {
namespace {

Plan llama8b_fsdp16(int prefetch, int cap) {
  Plan p = test::two_node_llama8b();
  p.prefetch.backward = prefetch;
  p.prefetch.max_all_gathers_in_flight = cap;
  validate_plan(p, "test plan");
  return p;
}

// The op of `kind` on `unit` (first in issue order).
int find_op(const RoleProgram& role, OpKind kind, int unit) {
  for (int id = 0; id < int(role.ops.size()); ++id)
    if (role.ops[std::size_t(id)].kind == kind && role.ops[std::size_t(id)].unit == unit) return id;
  return -1;
}

// The first all-gather of `unit` issued after op `after` (in micro-batch 0's backward, the unit's backward one).
int gather_after(const RoleProgram& role, int unit, int after) {
  for (int id = after + 1; id < int(role.ops.size()); ++id)
    if (role.ops[std::size_t(id)].kind == OpKind::all_gather && role.ops[std::size_t(id)].unit == unit) return id;
  return -1;
}

}  // namespace

TEST_CASE("certain order: every fact holds in the engine's timeline of random plans") {
  test::PlanGenerator gen(20261130);
  int plans = 0;
  long ended = 0, started = 0;
  for (int k = 0; k < 60; ++k) {
    const Plan p = gen.next();
    StepProgram program = lower(p);
    time_program(program, p);
    const EngineResult run = run_engine(program, EngineOptions{});
    const RoleProgram& role = program.roles.front();
    const CertainOrder order(role);
    REQUIRE(order.valid());
    const int n = int(role.ops.size());
    std::vector<TimeNs> start(std::size_t(n), -1), end(std::size_t(n), -1);
    for (const OpTiming& t : run.ops)
      if (t.role == 0 && t.rank == 0) start[std::size_t(t.op)] = t.start_ns, end[std::size_t(t.op)] = t.end_ns;
    for (int b = 0; b < n; ++b)
      for (int a = 0; a < n; ++a) {
        INFO("plan " << k << " ops " << role.ops[std::size_t(a)].name << " and " << role.ops[std::size_t(b)].name);
        if (order.ended_before(a, b)) {
          CHECK(end[std::size_t(a)] <= start[std::size_t(b)]);
          ++ended;
        }
        if (order.started_by(a, b)) {
          CHECK(start[std::size_t(a)] <= start[std::size_t(b)]);
          started += !order.ended_before(a, b);
        }
      }
    ++plans;
  }
  MESSAGE(plans << " plans: " << ended << " ended-before pairs, " << started << " started-by pairs not ended");
  CHECK(started > 100);
}

TEST_CASE("certain order: the next unit's prefetched all-gather is live at a backward with prefetch 1 and cap 2") {
  for (const auto& [prefetch, cap, live] : {std::tuple{1, 2, true}, std::tuple{0, 2, false}, std::tuple{1, 1, false}}) {
    const Plan p = llama8b_fsdp16(prefetch, cap);
    const StepProgram program = lower(p);
    const RoleProgram& role = program.roles.front();
    const CertainOrder order(role);
    REQUIRE(order.valid());
    const int u = 10;  // a block unit (unit 0 holds the embedding)
    const int bwd = find_op(role, OpKind::backward, u);
    REQUIRE(bwd >= 0);
    const int next_gather = gather_after(role, u - 1, bwd);
    REQUIRE(next_gather > bwd);
    INFO("prefetch " << prefetch << " cap " << cap);
    CHECK(order.started_by(next_gather, bwd) == live);
    CHECK_FALSE(order.ended_before(next_gather, bwd));
    const std::vector<double> other = certain_other_gathers_bytes(program, 0, {bwd}, order);
    CHECK(other.front() == doctest::Approx(live ? program.units[std::size_t(u - 1)].param_bytes : 0.0));
  }
}

}  // namespace fsdpx
