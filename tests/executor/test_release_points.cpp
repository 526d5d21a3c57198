// tests/executor/test_release_points.cpp — one lowered program, two interpreters: the executor's
// RankRuntime (on a backend that records what it is asked to do) and the simulator's engine must
// release every unit's unsharded parameters after the same ops, and the executor must finish each
// gradient reduction at the op the program says (the all-reduce across replicas under HSDP, the
// reduce-scatter otherwise). The engine is run in issue order on a copy of the program whose only
// memory effects are the releases, so each of its memory samples is one release.
#include <doctest/doctest.h>

#include <mutex>
#include <utility>
#include <vector>

#include "executor/runtime/rank_runtime.h"
#include "program/lower.h"
#include "simulator/engine.h"
#include "simulator/op_timing.h"
#include "tests/executor/tiny_models.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx {
namespace {

struct Call {
  int op = -1, unit = -1;
  double kept_bytes = 0;
};

// A rank backend that computes nothing and records the releases and finished reductions it is asked for.
class RecordingBackend final : public RankBackend {
 public:
  explicit RecordingBackend(std::int64_t micro_batches) : micro_batches_(micro_batches) {}
  std::vector<Call> releases, reductions;

  int rank() const override { return 0; }
  void connect() override {}
  void init_params(std::uint64_t) override {}
  bool holds_unit(int) const override { return true; }
  UnitShardState unit_state(int) const override { return {}; }
  void load_unit_state(int, const UnitShardState&) override {}
  void copy_masters_to_replicas() override {}
  void begin_op(int id, const Op&) override { op_ = id; }
  void end_op(int, const Op&) override {}
  void gather(int, MeshGroup, bool) override {}
  void release(int unit, double kept_bytes) override { releases.push_back({op_, unit, kept_bytes}); }
  void set_micro_batch(int, const std::int32_t*, const std::int32_t*) override {}
  void forward(int, int) override {}
  void begin_backward(int, double) override {}
  void backward(int, int, int) override {}
  void backward_input(int, int) override {}
  void backward_weight(int, int, int) override {}
  void send(Payload, int, int, int, int) override {}
  void recv(Payload, int, int, int, int) override {}
  std::vector<double> take_losses() override { return std::vector<double>(std::size_t(micro_batches_), 1.0); }
  std::vector<IssuedCollective> take_model_collectives() override { return {}; }
  void reduce_scatter(int, MeshGroup) override {}
  void all_reduce_reduced(int, MeshGroup) override {}
  void all_reduce_full(int, MeshGroup) override {}
  void finish_reduction(int unit) override { reductions.push_back({op_, unit, 0}); }
  void all_reduce_tied(int) override {}
  int first_non_finite_unit() override { return -1; }
  bool unscale_grads(float) override { return false; }
  double grad_sq_sum() override { return 1.0; }
  void all_reduce_host(double*, int, MeshGroup) override {}
  void adamw(const OptimizerSettings&, const AdamWStep&) override {}
  void zero_grad_shards() override {}
  void synchronize() override {}
  void abort(const std::string&) override {}
  const MemoryTracker& memory() const override { return mem_; }

 private:
  std::int64_t micro_batches_;
  int op_ = -1;
  MemoryTracker mem_;
};

// The executor's reading: one step of RankRuntime on the program.
RecordingBackend executor_calls(const RuntimeProgram& rp) {
  auto backend = std::make_unique<RecordingBackend>(rp.grad_accum);
  RecordingBackend* rec = backend.get();
  RankRuntime runtime(rp, std::move(backend), TrainerOptions{});
  test::HashData data(rp.settings.model.vocab);
  std::mutex mu;
  runtime.run_step(0, DataPosition{}, data, mu);
  return *rec;
}

// The simulator's reading: the engine in issue order on the program with every memory effect removed
// but the releases (a resident pool they are taken from): (op, bytes) per release, in order.
std::vector<std::pair<int, double>> simulator_releases(const Plan& plan, StepProgram program) {
  double pool = 0;
  for (RoleProgram& role : program.roles) {
    for (Op& op : role.ops) {
      op.alloc_at_start.clear(), op.free_at_end.clear();
      pool += released_param_bytes(program, op);
    }
    role.resident = {{MemCategory::transient, pool}};
  }
  time_program(program, plan);
  EngineOptions o;
  o.overlap = false;
  o.record_ops = true;
  const EngineResult r = run_engine(program, o);
  std::vector<std::pair<int, double>> out;
  for (std::size_t k = 1; k < r.memory_samples.size(); ++k) {
    const auto& before = r.memory_samples[k - 1].by_category, &after = r.memory_samples[k].by_category;
    const double freed = before[std::size_t(MemCategory::transient)] - after[std::size_t(MemCategory::transient)];
    int op = -1;  // the op that ended then and released: in issue order, one op ends at a time
    for (const OpTiming& t : r.ops)
      if (t.end_ns == r.memory_samples[k].at_ns && program.roles[0].ops[std::size_t(t.op)].unit >= 0 &&
          released_param_bytes(program, program.roles[0].ops[std::size_t(t.op)]) == freed)
        op = t.op;
    out.push_back({op, freed});
  }
  return out;
}

void check_plan(const Plan& plan, int releases_per_unit_and_micro_batch) {
  const RuntimeProgram rp = make_runtime_program(plan);
  const RecordingBackend exec = executor_calls(rp);
  const auto sim = simulator_releases(plan, rp.program);
  const auto& ops = rp.program.roles[0].ops;
  const std::size_t units = rp.program.units.size();
  CHECK(exec.releases.size() == units * std::size_t(rp.grad_accum) * std::size_t(releases_per_unit_and_micro_batch));
  REQUIRE(sim.size() == exec.releases.size());
  for (std::size_t k = 0; k < sim.size(); ++k) {
    const Call& e = exec.releases[k];
    INFO("release " << k << ": executor after " << ops[std::size_t(e.op)].name << ", simulator after op " << sim[k].first);
    CHECK(sim[k].first == e.op);
    CHECK(ops[std::size_t(e.op)].unit == e.unit);
    CHECK(sim[k].second == doctest::Approx(rp.program.units[std::size_t(e.unit)].param_bytes));
    const int g = ops[std::size_t(e.op)].kept_shard_ranks;
    CHECK(e.kept_bytes == doctest::Approx(g > 1 ? double(rp.flats[std::size_t(e.unit)].padded_numel) * 4.0 / g : 0.0));
  }
  // Every unit's gradients are finished once per micro-batch (reduce_grads every_micro_batch), at the
  // collective that completes them: across replicas under HSDP.
  CHECK(exec.reductions.size() == units * std::size_t(rp.grad_accum));
  const OpKind completing = plan.parallelism.dp_replicate > 1 || plan.parallelism.data_parallel == DataParallel::ddp
                                ? OpKind::all_reduce
                                : OpKind::reduce_scatter;
  for (const Call& c : exec.reductions) CHECK(ops[std::size_t(c.op)].kind == completing);
}

TEST_CASE("release points: the executor and the simulator release after the same ops of one program") {
  for (const ModelSpec& model : {test::tiny_llama(), test::tiny_gpt()}) {
    test::PlanShape s;
    s.dp_shard = 4, s.accum = 2;
    SUBCASE("reshard after forward: released after forward and after backward") {
      check_plan(test::tiny_plan(model, s), 2);
    }
    SUBCASE("no reshard after forward: released after backward only") {
      s.reshard = false;
      check_plan(test::tiny_plan(model, s), 1);
    }
    SUBCASE("reshard to 2 ranks: the free op releases and keeps half") {
      Plan p = test::tiny_plan(model, s);
      for (PlanUnit& u : p.units) u.reshard_after_forward = 2;
      validate_plan(p, "test plan");
      check_plan(p, 2);
    }
    SUBCASE("HSDP 2x2: the all-reduce across replicas completes the reduction") {
      s.dp_shard = 2, s.dp_replicate = 2;
      check_plan(test::tiny_plan(model, s), 2);
    }
    SUBCASE("DDP: replicated parameters are never released") {
      s.reshard = false;
      Plan p = test::tiny_plan(model, s);
      p.parallelism.data_parallel = DataParallel::ddp;
      p.reduce_grads = ReduceGrads::every_micro_batch;
      validate_plan(p, "test plan");
      check_plan(p, 0);
    }
  }
}

}  // namespace
}  // namespace fsdpx
