// tests/simulator/test_engine.cpp — the engine against closed forms: serial execution sums durations,
// infinite bandwidth leaves the compute critical path, prefetch 0 serialises, memory peaks computed
// by hand, expanded ranks equal symmetry, runs are deterministic, and the records come in end order.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>

#include "core/errors.h"

#include "simulator/engine.h"
#include "tests/simulator/program_builder.h"
#include "tests/simulator/synthetic_program.h"

namespace fsdpx {
namespace {

using test::ProgramBuilder;

const OpTiming& timing_of(const EngineResult& r, int op, int rank = 0) {
  const auto it = std::find_if(r.ops.begin(), r.ops.end(),
                               [&](const OpTiming& t) { return t.op == op && t.rank == rank; });
  REQUIRE(it != r.ops.end());
  return *it;
}

// Ops of every kind, with no dependencies, so that overlap on runs them concurrently.
ProgramBuilder mixed_program() {
  ProgramBuilder b;
  b.collective("ag", OpKind::all_gather, 3.5e-6, 1e-6, false);
  b.compute("fwd", OpKind::forward, 10.25e-6);
  b.collective("rs", OpKind::reduce_scatter, 4.0004e-6, 1e-6, true);  // 4000.4 ns -> 4001
  b.collective("ar", OpKind::all_reduce, 2e-6, 0.5e-6, true);
  b.compute("bwd", OpKind::backward, 20e-6);
  b.free_op("reshard", StreamKind::compute);
  b.compute("opt", OpKind::optimizer, 1e-6);
  return b;
}

TEST_CASE("overlap off: step time is the sum of op durations rounded up to ns") {
  ProgramBuilder b = mixed_program();
  EngineOptions opt;
  opt.overlap = false;
  const EngineResult r = run_engine(b.program(), opt);
  const TimeNs sum_ns = 3500 + 10250 + 4001 + 2000 + 20000 + 0 + 1000;
  CHECK(r.step_time_ns == sum_ns);
  // Issue order: each op starts when the previous one ends.
  for (int op = 1; op < 7; ++op) CHECK(timing_of(r, op).start_ns == timing_of(r, op - 1).end_ns);
  CHECK(r.compute_busy_ns[0] == 10250 + 20000 + 1000);
  CHECK(r.compute_busy_ns_by_kind[0][static_cast<int>(OpKind::backward)] == 20000);

  opt.overlap = true;  // the other branch: concurrent streams finish sooner
  const EngineResult overlapped = run_engine(b.program(), opt);
  CHECK(overlapped.step_time_ns < sum_ns);
  CHECK(overlapped.step_time_ns >= 10250 + 20000 + 1000);
}

TEST_CASE("infinite bandwidth with overlap: step time is the compute-stream critical path") {
  ProgramBuilder b;
  int prev = -1;
  for (int u = 0; u < 3; ++u) {
    const int ag = b.collective("ag" + std::to_string(u), OpKind::all_gather, 100e-6, 5e-6, false);
    std::vector<int> deps{ag};
    if (prev >= 0) deps.push_back(prev);
    prev = b.compute("fwd" + std::to_string(u), OpKind::forward, 5e-6, deps);
    b.op(prev).serial_comm_time_s = 1e-6;  // TP traffic inside the op: free with infinite bandwidth
  }
  const int bwd = b.compute("bwd", OpKind::backward, 8e-6, {prev});
  b.op(bwd).serial_comm_time_s = 2e-6;
  b.collective("rs", OpKind::reduce_scatter, 50e-6, 5e-6, true, {bwd});
  EngineOptions opt;
  opt.infinite_bandwidth = true;
  const EngineResult r = run_engine(b.program(), opt);
  CHECK(r.step_time_ns == 3 * (5000 - 1000) + (8000 - 2000));
  CHECK(r.compute_busy_ns[0] == r.step_time_ns);

  opt.infinite_bandwidth = false;  // finite: the first all-gather alone is 100 us
  CHECK(run_engine(b.program(), opt).step_time_ns > 100000 + 3 * 5000 + 8000);
}

TEST_CASE("prefetch 0: all-gather and forward chained by dependencies serialise") {
  ProgramBuilder b;
  const int ag0 = b.collective("ag0", OpKind::all_gather, 4e-6, 1e-6, false);
  const int fwd0 = b.compute("fwd0", OpKind::forward, 6e-6, {ag0});
  const int ag1 = b.collective("ag1", OpKind::all_gather, 4e-6, 1e-6, false, {fwd0});
  const int fwd1 = b.compute("fwd1", OpKind::forward, 6e-6, {ag1});
  const EngineResult r = run_engine(b.program(), EngineOptions{});
  CHECK(r.step_time_ns == 4000 + 6000 + 4000 + 6000);
  CHECK(timing_of(r, ag1).start_ns == 10000);
  CHECK(timing_of(r, fwd1).end_ns == 20000);
  // Completion order, ties by op id.
  REQUIRE(r.ops.size() == 4);
  CHECK(r.ops[0].op == ag0);
  CHECK(r.ops[3].op == fwd1);
}

// Memory walk (bytes): resident 110; ag0 +50 params; fwd0 +30 act; reshard0 -50 params; ag1 +50;
// fwd1 +30 act; bwd1 +20 grads +5 transient (peak 245), frees 30 act + 5 transient; reshard1 -50.
TEST_CASE("memory: peak, its breakdown and the op that reached it, by hand") {
  ProgramBuilder b;
  b.role().resident = {{MemCategory::params, 100}, {MemCategory::other, 10}};
  const int ag0 = b.collective("ag0", OpKind::all_gather, 4e-6, 1e-6, false);
  const int fwd0 = b.compute("fwd0", OpKind::forward, 6e-6, {ag0});
  const int rs0 = b.free_op("reshard0", StreamKind::compute, {fwd0});
  const int ag1 = b.collective("ag1", OpKind::all_gather, 4e-6, 1e-6, false, {rs0});
  const int fwd1 = b.compute("fwd1", OpKind::forward, 6e-6, {ag1});
  const int bwd1 = b.compute("bwd1", OpKind::backward, 9e-6, {fwd1});
  const int rs1 = b.free_op("reshard1", StreamKind::compute, {bwd1});
  b.op(ag0).alloc_at_start = b.op(ag1).alloc_at_start = {{MemCategory::params, 50}};
  b.op(rs0).free_at_end = b.op(rs1).free_at_end = {{MemCategory::params, 50}};
  b.op(fwd0).alloc_at_start = b.op(fwd1).alloc_at_start = {{MemCategory::activations, 30}};
  b.op(bwd1).alloc_at_start = {{MemCategory::grads, 20}, {MemCategory::transient, 5}};
  b.op(bwd1).free_at_end = {{MemCategory::activations, 30}, {MemCategory::transient, 5}};

  const EngineResult r = run_engine(b.program(), EngineOptions{});
  REQUIRE(r.peak_by_role.size() == 1);
  const MemoryPeak& p = r.peak_by_role[0];
  CHECK(p.total_bytes == 245);
  CHECK(p.op == bwd1);
  CHECK(p.at_ns == 4000 + 6000 + 4000 + 6000);
  CHECK(p.by_category[static_cast<int>(MemCategory::params)] == 150);
  CHECK(p.by_category[static_cast<int>(MemCategory::activations)] == 60);
  CHECK(p.by_category[static_cast<int>(MemCategory::grads)] == 20);
  CHECK(p.by_category[static_cast<int>(MemCategory::transient)] == 5);
  CHECK(p.by_category[static_cast<int>(MemCategory::other)] == 10);
  // Samples: t = 0 plus one per op with effects (7 ops, bwd1 twice: start and end).
  REQUIRE(r.memory_samples.size() == 1 + 8);
  const auto& last = r.memory_samples.back().by_category;
  CHECK(last[static_cast<int>(MemCategory::params)] == 100);
  CHECK(last[static_cast<int>(MemCategory::activations)] == 30);
  CHECK(last[static_cast<int>(MemCategory::grads)] == 20);
  CHECK(last[static_cast<int>(MemCategory::transient)] == 0);

  EngineOptions quiet;
  quiet.record_ops = false;  // the other branch: no per-op records, same totals
  const EngineResult q = run_engine(b.program(), quiet);
  CHECK(q.ops.empty());
  CHECK(q.memory_samples.empty());
  CHECK(q.step_time_ns == r.step_time_ns);
  CHECK(q.peak_by_role[0].total_bytes == 245);
}

TEST_CASE("memory: a peak reached only by the resident state reports op -1") {
  ProgramBuilder b;
  b.role().resident = {{MemCategory::optimizer, 1000}};
  const int fwd = b.compute("fwd", OpKind::forward, 1e-6);
  b.op(fwd).free_at_end = {{MemCategory::optimizer, 400}};
  const EngineResult r = run_engine(b.program(), EngineOptions{});
  CHECK(r.peak_by_role[0].op == -1);
  CHECK(r.peak_by_role[0].total_bytes == 1000);
}

void check_same(const EngineResult& a, const EngineResult& b) {
  CHECK(a.step_time_ns == b.step_time_ns);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].op == b.ops[i].op);
    CHECK(a.ops[i].rank == b.ops[i].rank);
    CHECK(a.ops[i].start_ns == b.ops[i].start_ns);
    CHECK(a.ops[i].end_ns == b.ops[i].end_ns);
  }
  CHECK(a.memory_samples.size() == b.memory_samples.size());
  CHECK(a.peak_by_role[0].total_bytes == b.peak_by_role[0].total_bytes);
  CHECK(a.peak_by_role[0].op == b.peak_by_role[0].op);
  CHECK(a.compute_busy_ns == b.compute_busy_ns);
}

TEST_CASE("determinism: two runs give identical results") {
  const StepProgram p = test::synthetic_program({6, 3, true, false});
  check_same(run_engine(p, EngineOptions{}), run_engine(p, EngineOptions{}));
}

// 16 ranks: dp_replicate 2 x dp_shard 8; all-gathers on dp_shard (or a reshard group of 2), the HSDP
// all-reduce on dp_replicate. Identical programs reach every collective together, so every rank's
// timeline equals the symmetric one.
TEST_CASE("expanded mode with 16 ranks equals symmetric mode") {
  for (const bool reshard : {false, true}) {
    CAPTURE(reshard);
    StepProgram p = test::synthetic_program({5, 2, true, reshard}, 16);
    p.mesh = Mesh{2, 8, 1, 1};
    p.groups = {{GroupKind::dp_shard, GroupShape{8, 8}, 0},
                {GroupKind::dp_replicate, GroupShape{2, 1}, 0},
                {GroupKind::reshard, GroupShape{2, 2}, 2}};
    EngineOptions opt;
    const EngineResult sym = run_engine(p, opt);
    opt.expand_ranks = true;
    const EngineResult all = run_engine(p, opt);
    CHECK(all.step_time_ns == sym.step_time_ns);
    CHECK(all.ops.size() == 16 * sym.ops.size());
    CHECK(all.peak_by_role[0].total_bytes == sym.peak_by_role[0].total_bytes);
    CHECK(all.compute_busy_ns == sym.compute_busy_ns);
    for (int rank : {0, 7, 15})
      for (int op : {0, 10, static_cast<int>(p.roles[0].ops.size()) - 1}) {
        CHECK(timing_of(all, op, rank).start_ns == timing_of(sym, op).start_ns);
        CHECK(timing_of(all, op, rank).end_ns == timing_of(sym, op).end_ns);
      }
  }
}

// The records come in (end, role, rank, op) order, one per op per instance (engine.cpp sort_records: the
// records arrive in end order and each run of equal ends is sorted). Expanded ranks end their identical
// ops at the same times, so most runs here hold 16 records or more.
TEST_CASE("records: in (end, role, rank, op) order, one per op and instance") {
  StepProgram p = test::synthetic_program({5, 2, true, false}, 16);
  p.mesh = Mesh{2, 8, 1, 1};
  p.groups = {{GroupKind::dp_shard, GroupShape{8, 8}, 0},
              {GroupKind::dp_replicate, GroupShape{2, 1}, 0},
              {GroupKind::reshard, GroupShape{2, 2}, 2}};
  EngineOptions opt;
  opt.expand_ranks = true;
  const EngineResult r = run_engine(p, opt);
  auto key = [](const OpTiming& t) { return std::tuple(t.end_ns, t.role, t.rank, t.op); };
  REQUIRE(r.ops.size() == 16 * p.roles[0].ops.size());
  std::size_t ties = 0;
  for (std::size_t i = 1; i < r.ops.size(); ++i) {
    CHECK(key(r.ops[i - 1]) < key(r.ops[i]));
    ties += r.ops[i - 1].end_ns == r.ops[i].end_ns;
  }
  CHECK(ties >= r.ops.size() / 2);
}

TEST_CASE("overlap off with expanded ranks still sums durations") {
  StepProgram p = test::synthetic_program({3, 1, false, false}, 4);
  p.groups[0].shape = p.groups[1].shape = p.groups[2].shape = GroupShape{4, 4};
  EngineOptions opt;
  opt.overlap = false;
  TimeNs sum_ns = 0;
  for (const Op& op : p.roles[0].ops)
    if (op.kind != OpKind::free) sum_ns += static_cast<TimeNs>(op.duration_s * 1e9 + 0.5);
  CHECK(run_engine(p, opt).step_time_ns == sum_ns);
  opt.expand_ranks = true;
  CHECK(run_engine(p, opt).step_time_ns == sum_ns);
}

// Issue 15 items 2 and 3: a non-finite duration aborted, and one beyond 2^63 ns wrapped into "event in the
// past". Every duration and the step's bound must fit the clock, else a ConfigError naming the plan.
TEST_CASE("durations beyond the clock's range are input errors, never wrapped or non-finite") {
  for (double bad_s : {1e12, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    ProgramBuilder b;
    b.compute("fwd", OpKind::forward, 1e-3);
    b.compute("huge", OpKind::backward, bad_s, {0});
    std::string msg;
    try {
      run_engine(b.program(), EngineOptions{});
    } catch (const ConfigError& e) {
      msg = e.what();
    }
    INFO(msg);
    CHECK(msg.find("plan: /: op huge takes") == 0);
    ProgramBuilder c;
    c.collective("ag", OpKind::all_gather, bad_s, 1e-6, false);
    CHECK_THROWS_AS(run_engine(c.program(), EngineOptions{}), ConfigError);
  }
  // Each op fits, together they do not: 2^61 ns is 73 years; 40 ops of 6 years each, at the slowest rate.
  ProgramBuilder many;
  for (int i = 0; i < 40; ++i) many.compute("op", OpKind::forward, 6 * 365.25 * 86400.0);
  std::string msg;
  try {
    run_engine(many.program(), EngineOptions{});
  } catch (const ConfigError& e) {
    msg = e.what();
  }
  CHECK(msg.find("plan: /: the step's ops take up to") == 0);
  // A step near the bound runs without overflow: 5 years of compute (the bound assumes every op at the
  // slowest rate, 1/kStreamCount, so 73 / 8 years is the most one op can take).
  ProgramBuilder ok;
  ok.compute("lustrum", OpKind::forward, 5 * 365.25 * 86400.0);
  CHECK(run_engine(ok.program(), EngineOptions{}).step_time_ns == TimeNs(5 * 365.25 * 86400.0 * 1e9));
}

}  // namespace
}  // namespace fsdpx
