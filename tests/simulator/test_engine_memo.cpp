// tests/simulator/test_engine_memo.cpp — the engine memo (simulator/engine_memo.h): a program shares an
// earlier result only where the engine cannot tell the two apart (equal but for waits on earlier ops of a
// stream whose later op it waits for too), and then the result equals its own run; programs that differ
// in a binding wait, a duration or the engine's options get their own.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/config_paths.h"
#include "core/plan.h"
#include "program/lower.h"
#include "simulator/engine_memo.h"
#include "simulator/op_timing.h"

namespace fsdpx {
namespace {

// The 8B example plan's step with the given prefetch depth and all-gather cap, timed.
StepProgram program_8b(int prefetch, int cap) {
  Plan p = load_plan(resolve_config("plans", "llama3.1-8b-dgx-h100-fsdp8"));
  p.prefetch.forward = p.prefetch.backward = prefetch;
  p.prefetch.max_all_gathers_in_flight = cap;
  StepProgram program = lower(p, LowerOptions{.op_names = false});
  time_program(program, p);
  return program;
}

void check_same(const EngineResult& a, const EngineResult& b) {
  CHECK(a.step_time_ns == b.step_time_ns);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].op == b.ops[i].op);
    CHECK(a.ops[i].start_ns == b.ops[i].start_ns);
    CHECK(a.ops[i].end_ns == b.ops[i].end_ns);
  }
  REQUIRE(a.peak_by_role.size() == b.peak_by_role.size());
  for (std::size_t r = 0; r < a.peak_by_role.size(); ++r) {
    CHECK(a.peak_by_role[r].total_bytes == b.peak_by_role[r].total_bytes);
    CHECK(a.peak_by_role[r].op == b.peak_by_role[r].op);
  }
  CHECK(a.compute_busy_ns == b.compute_busy_ns);
  CHECK(a.memory_samples.size() == b.memory_samples.size());
}

// The first all-gather of role 0 that waits for a compute op which is not the first of its stream.
int gather_waiting_on_compute(const StepProgram& p) {
  const RoleProgram& role = p.roles.front();
  const std::vector<int>& compute = role.streams[std::size_t(StreamKind::compute)];
  for (std::size_t i = 0; i < role.ops.size(); ++i) {
    const Op& op = role.ops[i];
    if (op.kind != OpKind::all_gather) continue;
    for (int d : op.deps)
      if (role.ops[std::size_t(d)].stream == StreamKind::compute && d != compute.front()) return int(i);
  }
  return -1;
}

}  // namespace

TEST_CASE("an engine memo gives each program its own run's result, shared only where the engine cannot tell") {
  EngineMemo memo;
  const EngineOptions with_memo{.memo = &memo};
  int distinct = 0;
  for (int prefetch : {0, 1, 2})
    for (int cap : {1, 2, 4}) {
      const StepProgram p = program_8b(prefetch, cap);
      const std::int64_t hits = memo.hits();
      const EngineResult remembered = run_engine(p, with_memo);
      distinct += memo.hits() == hits;
      check_same(remembered, run_engine(p, {}));
    }
  MESSAGE("9 configurations: " << memo.hits() << " shared, " << distinct << " run");
  CHECK(memo.hits() + memo.misses() == 9);
  // Prefetch 0 serialises each gather behind the compute op before its consumer: a binding wait, so those
  // programs and results differ from prefetch 1's (a memo blind to waits would give prefetch 1 theirs).
  CHECK(run_engine(program_8b(0, 2), {}).step_time_ns != run_engine(program_8b(1, 2), {}).step_time_ns);
  CHECK(engine_key(program_8b(0, 2), {}) != engine_key(program_8b(1, 2), {}));
  CHECK(memo.misses() >= 2);
}

TEST_CASE("an engine memo's key drops only waits on earlier ops of a stream whose later op is waited for") {
  const StepProgram a = program_8b(1, 2);
  const int g = gather_waiting_on_compute(a);
  REQUIRE(g >= 0);
  const RoleProgram& role = a.roles.front();
  const std::vector<int>& compute = role.streams[std::size_t(StreamKind::compute)];
  int waited = -1;
  for (int d : role.ops[std::size_t(g)].deps)
    if (role.ops[std::size_t(d)].stream == StreamKind::compute) waited = d;
  const auto pos = std::size_t(std::find(compute.begin(), compute.end(), waited) - compute.begin());
  REQUIRE(pos > 0);

  // A wait on the compute op before the one it waits for: the same start, the same key and result.
  StepProgram redundant = a;
  redundant.roles.front().ops[std::size_t(g)].deps.push_back(compute[pos - 1]);
  CHECK(engine_key(redundant, {}) == engine_key(a, {}));
  EngineMemo memo;
  run_engine(a, EngineOptions{.memo = &memo});
  check_same(run_engine(redundant, EngineOptions{.memo = &memo}), run_engine(redundant, {}));
  CHECK(memo.hits() == 1);

  // Without overlap the engine starts ops in issue order: waits are kept as they are.
  const EngineOptions serial{.overlap = false};
  CHECK(engine_key(redundant, serial) != engine_key(a, serial));

  // A longer compute op, or other options: another key, the program's own result.
  StepProgram slower = a;
  slower.roles.front().ops[std::size_t(waited)].duration_s *= 2;
  CHECK(engine_key(slower, {}) != engine_key(a, {}));
  const EngineResult own = run_engine(slower, EngineOptions{.memo = &memo});
  check_same(own, run_engine(slower, {}));
  CHECK(own.step_time_ns != run_engine(a, {}).step_time_ns);
  CHECK(engine_key(a, EngineOptions{.interference = false}) != engine_key(a, {}));
  CHECK(memo.hits() == 1);
}

}  // namespace fsdpx
