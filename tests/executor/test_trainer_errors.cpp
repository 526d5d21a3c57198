// tests/executor/test_trainer_errors.cpp — failures of the runtime: a rank whose data source throws
// brings every rank down with its message within 2 s (no hang); a non-finite loss stops the run naming
// the step, or skips the update by option; plans the CPU runtime cannot run are ConfigErrors naming the
// JSON path; the state round-trips, lists each unit's modules and reshards to another unit grouping of
// a tied model; the learning rate follows warm-up and cosine decay; profiles and traces name every op.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/errors.h"
#include "core/lora.h"
#include "executor/checkpoint/reshard.h"
#include "executor/runtime/adamw.h"
#include "executor/runtime/lr_schedule.h"
#include "executor/runtime/runtime_program.h"
#include "tests/executor/tiny_models.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx {
namespace {

// Throws on rank 2's first call (Trainer::current_rank() tells which rank thread calls).
class FailOnRank2 : public test::HashData {
 public:
  using test::HashData::HashData;
  void global_batch(const DataPosition& pos, std::int64_t global_batch, std::int64_t seq,
                    std::vector<std::int32_t>& tokens) override {
    if (Trainer::current_rank() == 2) throw std::runtime_error("disk on fire");
    test::HashData::global_batch(pos, global_batch, seq, tokens);
  }
};

TEST_CASE("trainer: a rank that throws brings the others down with its message") {
  test::PlanShape s;
  s.dp_shard = 4;
  const Plan plan = test::tiny_plan(test::tiny_llama(), s);
  Trainer trainer(plan, std::make_shared<FailOnRank2>(plan.model.vocab));
  const auto start = std::chrono::steady_clock::now();
  std::string msg;
  try {
    trainer.step();
  } catch (const std::exception& e) {
    msg = e.what();
  }
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - start;
  CHECK(msg == "rank 2: disk on fire");
  INFO("took " << dt.count() << " s");
  CHECK(dt.count() < 2.0);
  CHECK_THROWS_WITH_AS(trainer.step(), doctest::Contains("rank 2: disk on fire"), std::runtime_error);
}

Plan nan_plan(TrainerState& state, std::unique_ptr<Trainer>& trainer, TrainerOptions o) {
  test::PlanShape s;
  s.dp_shard = 2;
  const Plan plan = test::tiny_plan(test::tiny_gpt(), s);
  trainer = std::make_unique<Trainer>(plan, std::make_shared<test::HashData>(plan.model.vocab), o);
  state = trainer->state();
  state.ranks[1].units.back().params[0] = std::numeric_limits<float>::quiet_NaN();  // the head's unit
  trainer->load_state(state);
  return plan;
}

TEST_CASE("trainer: a non-finite loss stops the run with the step, or skips the update") {
  TrainerState state;
  std::unique_ptr<Trainer> trainer;
  nan_plan(state, trainer, TrainerOptions{});
  CHECK_THROWS_WITH(trainer->step(), doctest::Contains("step 1, micro-batch 0: non-finite loss"));

  nan_plan(state, trainer, TrainerOptions{NonFinitePolicy::skip_step, false});
  const StepMetrics m = trainer->step();
  CHECK(m.skipped);
  const TrainerState after = trainer->state();
  CHECK(after.step == 1);
  for (std::size_t r = 0; r < state.ranks.size(); ++r)
    for (std::size_t u = 0; u < state.ranks[r].units.size(); ++u)
      for (std::size_t i = 0; i < state.ranks[r].units[u].params.size(); ++i) {
        const float a = state.ranks[r].units[u].params[i], b = after.ranks[r].units[u].params[i];
        CHECK((a == b || (std::isnan(a) && std::isnan(b))));  // no update, moments untouched
      }
}

TEST_CASE("trainer: state round-trips into a fresh trainer and training continues identically") {
  test::PlanShape s;
  s.dp_shard = 3, s.accum = 3;
  const Plan plan = test::tiny_plan(test::tiny_llama(), s);
  auto data = std::make_shared<test::HashData>(plan.model.vocab);
  Trainer a(plan, data);
  a.step(), a.step();
  Trainer b(plan, data);
  b.load_state(a.state());
  const StepMetrics ma = a.step(), mb = b.step();
  CHECK(ma.loss == mb.loss);
  CHECK(a.gather_full_params() == b.gather_full_params());
  test::PlanShape other = s;
  other.dp_shard = 2;
  Trainer c(test::tiny_plan(test::tiny_llama(), other), data);
  CHECK_THROWS_AS(c.load_state(a.state()), ConfigError);
}

// gpt's tied embedding sits in the last unit with 2 ranks and first in the 1-rank unit: resharding by
// module copies every parameter to its place, so the full parameters are identical.
TEST_CASE("trainer: state lists each unit's modules; a tied model's state moves to another unit grouping") {
  test::PlanShape s;
  s.dp_shard = 2;
  const Plan plan = test::tiny_plan(test::tiny_gpt(), s);
  auto data = std::make_shared<test::HashData>(plan.model.vocab);
  Trainer a(plan, data);
  a.step();
  const TrainerState sa = a.state();
  for (const RankState& r : sa.ranks)
    for (std::size_t u = 0; u < plan.units.size(); ++u) {
      std::vector<std::string> names;
      for (const UnitModule& m : r.units[u].modules) names.push_back(m.name);
      CHECK(names == plan.units[u].modules);
    }
  Plan single = test::tiny_plan(test::tiny_gpt(), test::PlanShape{});
  single.units = {PlanUnit{module_names(single.model), 1}};
  validate_plan(single, "test plan");
  Trainer b(single, data);
  b.load_state(reshard_state(sa, b.state(), "test"));
  CHECK(b.gather_full_params() == a.gather_full_params());
  TrainerState renamed = b.state();
  renamed.ranks[0].units[0].modules[1].name = "block.7";
  CHECK_THROWS_WITH_AS(b.load_state(renamed), doctest::Contains("/ranks/0/units/0/modules: another unit grouping"),
                       ConfigError);
}

TEST_CASE("trainer: plans the CPU runtime cannot run are ConfigErrors naming the path") {
  test::PlanShape s;
  s.dp_shard = 2;
  Plan tp = test::tiny_plan(test::tiny_llama(), s);
  tp.parallelism.dp_shard = 1, tp.parallelism.tp = 2;
  auto data = std::make_shared<test::HashData>(13);
  CHECK_THROWS_WITH_AS(Trainer(tp, data), doctest::Contains("/parallelism/tp"), ConfigError);
  Plan split = test::tiny_plan(test::tiny_gpt(), s);  // tied head: embedding and head in one unit
  split.units.insert(split.units.begin(), PlanUnit{{"embedding"}, 1});
  auto& last = split.units.back().modules;
  last.erase(std::find(last.begin(), last.end(), "embedding"));
  CHECK_THROWS_WITH_AS(Trainer(split, data), doctest::Contains("must be in one unit"), ConfigError);
  // The CPU model runs fp32, unfused attention and no dropout; plans saying otherwise would be
  // simulated for another program.
  Plan bf16 = test::tiny_plan(test::tiny_llama(), s);
  bf16.precision.param = DType::bf16;
  CHECK_THROWS_WITH_AS(Trainer(bf16, data), doctest::Contains("/mixed_precision/param_dtype"), ConfigError);
  Plan flash = test::tiny_plan(test::tiny_llama(), s);
  flash.attention_kernel = AttentionKernel::flash2;
  CHECK_THROWS_WITH_AS(Trainer(flash, data), doctest::Contains("/attention_kernel"), ConfigError);
  Plan dropout = test::tiny_plan(test::tiny_llama(), s);
  dropout.training.dropout = 0.1;
  CHECK_THROWS_WITH_AS(Trainer(dropout, data), doctest::Contains("/training/dropout"), ConfigError);
  Plan reduce_bf16 = test::tiny_plan(test::tiny_llama(), s);
  reduce_bf16.precision.reduce = DType::bf16;
  CHECK_THROWS_WITH_AS(Trainer(reduce_bf16, data), doctest::Contains("/mixed_precision/reduce_dtype"), ConfigError);
}

TEST_CASE("runtime program: the CUDA runtime takes bf16 and fp16 cuda_core plans with supported head dims, the CPU fp32 ones") {
  test::PlanShape s;
  s.dp_shard = 2;
  ModelSpec m = test::tiny_llama();
  m.hidden = 64, m.heads = 2, m.kv_heads = 1, m.head_dim = 32, m.ffn_hidden = 96;
  const Plan fp32 = test::tiny_plan(m, s);
  Plan cuda = fp32;
  cuda.precision.param = DType::bf16;
  cuda.attention_kernel = AttentionKernel::cuda_core;
  CHECK_NOTHROW(make_runtime_program(fp32, ExecutorDevice::cpu));
  CHECK_NOTHROW(make_runtime_program(cuda, ExecutorDevice::cuda));
  Plan cuda_bf16_reduce = cuda;
  cuda_bf16_reduce.precision.reduce = DType::bf16;
  CHECK_NOTHROW(make_runtime_program(cuda_bf16_reduce, ExecutorDevice::cuda));
  Plan cuda_fp16 = cuda;  // fp16 compute (CudaModelT<f16>), with or without loss scaling
  cuda_fp16.precision.param = DType::fp16;
  CHECK_NOTHROW(make_runtime_program(cuda_fp16, ExecutorDevice::cuda));
  CHECK_THROWS_WITH_AS(make_runtime_program(cuda, ExecutorDevice::cpu), doctest::Contains("/mixed_precision/param_dtype"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(make_runtime_program(fp32, ExecutorDevice::cuda),
                       doctest::Contains("the CUDA runtime computes in bf16"), ConfigError);
  Plan unfused = cuda;
  unfused.attention_kernel = AttentionKernel::unfused;
  CHECK_THROWS_WITH_AS(make_runtime_program(unfused, ExecutorDevice::cuda), doctest::Contains("/attention_kernel"),
                       ConfigError);
  // A flash2 plan would be costed for a kernel the CUDA block does not run (it runs its own tensor-core
  // and CUDA-core kernels).
  Plan flash2 = cuda;
  flash2.attention_kernel = AttentionKernel::flash2;
  CHECK_THROWS_WITH_AS(make_runtime_program(flash2, ExecutorDevice::cuda),
                       doctest::Contains("/attention_kernel: the CUDA runtime runs its tensor-core or CUDA-core attention "
                                         "kernel (executor/cuda/attention_tc.cu, attention.cu), so the plan must say "
                                         "\"tensor_core\" or \"cuda_core\" (got \"flash2\")"),
                       ConfigError);
  // The tensor-core kernel takes heads of 64 and 128, and has no context-parallel variant.
  Plan tc = cuda;
  tc.attention_kernel = AttentionKernel::tensor_core;
  CHECK_THROWS_WITH_AS(make_runtime_program(tc, ExecutorDevice::cuda),
                       doctest::Contains("/model/head_dim: the CUDA attention kernel \"tensor_core\" takes 64 or 128 (got 32)"),
                       ConfigError);
  ModelSpec m64 = m;
  m64.hidden = 128, m64.head_dim = 64;
  Plan tc64 = test::tiny_plan(m64, s);
  tc64.precision.param = DType::bf16;
  tc64.attention_kernel = AttentionKernel::tensor_core;
  CHECK_NOTHROW(make_runtime_program(tc64, ExecutorDevice::cuda));
  Plan small_heads = test::tiny_plan(test::tiny_llama(), s);  // head_dim 4
  small_heads.precision.param = DType::bf16;
  small_heads.attention_kernel = AttentionKernel::cuda_core;
  CHECK_THROWS_WITH_AS(make_runtime_program(small_heads, ExecutorDevice::cuda),
                       doctest::Contains("/model/head_dim: the CUDA attention kernel \"cuda_core\" takes 32, 64, 96 or 128 (got 4)"),
                       ConfigError);
  // LoRA runs on CUDA (docs/lora.md), without adapter dropout.
  Plan lora = cuda;
  lora.lora = LoraSettings{};
  CHECK_NOTHROW(make_runtime_program(lora, ExecutorDevice::cuda));
  lora.lora->dropout = 0.1;
  CHECK_THROWS_WITH_AS(make_runtime_program(lora, ExecutorDevice::cuda),
                       doctest::Contains("/lora/dropout: the CUDA runtime implements no adapter dropout"), ConfigError);
}

TEST_CASE("trainer: the profile names every op of the step program and the model's kernels") {
  test::PlanShape s;
  s.dp_shard = 2, s.accum = 2;
  const Plan plan = test::tiny_plan(test::tiny_llama(), s);
  Trainer trainer(plan, std::make_shared<test::HashData>(plan.model.vocab), TrainerOptions{NonFinitePolicy::stop, true});
  trainer.step(), trainer.step();
  const OpProfile p = trainer.profile();
  CHECK(p.steps == 2);
  for (const char* op : {"ag.u0.mb0.fwd", "fwd.s0.mb1", "bwd.s1.mb0", "rs.u0.mb1", "clip.ar", "opt"}) {
    INFO(op);
    CHECK(p.op_time_s.count(op) == 1);
  }
  // 2 steps × 2 micro-batches × 2 blocks.
  CHECK(p.kernel_calls.at("mlp_up") == 8);
  CHECK(p.kernel_calls.at("lm_head") == 4);
}

TEST_CASE("trainer: a trace holds every op of every rank in issue order, with live memory after each") {
  test::PlanShape s;
  s.dp_shard = 2, s.accum = 2;
  const Plan plan = test::tiny_plan(test::tiny_llama(), s);
  TrainerOptions o;
  o.trace = true, o.trace_steps = 2;
  Trainer trainer(plan, std::make_shared<test::HashData>(plan.model.vocab), o);
  trainer.step(), trainer.step(), trainer.step();
  const std::vector<RankTimeline> ranks = trainer.timelines();
  const std::size_t ops = make_runtime_program(plan, ExecutorDevice::cpu).program.roles[0].ops.size();
  REQUIRE(ranks.size() == 2);
  for (const RankTimeline& r : ranks) {
    CAPTURE(r.rank);
    REQUIRE(r.ops.size() == 2 * ops);  // steps 1 and 2 (0-based): the first was trimmed
    CHECK(r.memory.size() == 2 * (ops + 1));  // one sample before each step's first op, one after each op
    for (std::size_t i = 0; i < r.ops.size(); ++i) {
      CHECK(r.ops[i].op == int(i % ops));
      CHECK(r.ops[i].step == 1 + std::int64_t(i / ops));
      CHECK(r.ops[i].end_ns >= r.ops[i].start_ns);
      if (i > 0) CHECK(r.ops[i].start_ns >= r.ops[i - 1].end_ns);
    }
    double params = 0;
    for (const MeasuredMemory& m : r.memory) params = std::max(params, m.bytes[std::size_t(MemCategory::params)]);
    CHECK(params > 0);
  }
  Trainer untraced(plan, std::make_shared<test::HashData>(plan.model.vocab));
  untraced.step();
  CHECK(untraced.timelines()[0].ops.empty());
}

TEST_CASE("lr schedule: linear warm-up, cosine to min_lr_ratio, flat after") {
  OptimizerSettings o;
  o.lr = 1.0, o.warmup_steps = 4, o.total_steps = 14, o.min_lr_ratio = 0.1;
  CHECK(learning_rate(o, 0) == doctest::Approx(0.25));
  CHECK(learning_rate(o, 3) == doctest::Approx(1.0));
  CHECK(learning_rate(o, 9) == doctest::Approx(0.55));  // half way: (1 + 0.1) / 2
  CHECK(learning_rate(o, 14) == doctest::Approx(0.1));
  CHECK(learning_rate(o, 100) == doctest::Approx(0.1));
}

TEST_CASE("adamw: the first update moves every weight by lr (sign of the gradient) after decay") {
  OptimizerSettings o;
  o.weight_decay = 0.5;
  float p[3] = {1.0f, -2.0f, 0.5f}, m[3] = {}, v[3] = {};
  const float g[3] = {0.3f, -4.0f, 1e-3f};
  adamw_update(o, AdamWStep{0.01, 1, 1.0}, p, m, v, g, 3);
  // Step 1: m̂ = g, v̂ = g², so the update is lr·g/(|g| + eps) ≈ lr·sign(g) (Kingma & Ba 2015 §2.1).
  CHECK(p[0] == doctest::Approx(1.0 * (1 - 0.005) - 0.01).epsilon(1e-6));
  CHECK(p[1] == doctest::Approx(-2.0 * (1 - 0.005) + 0.01).epsilon(1e-6));
  CHECK(p[2] == doctest::Approx(0.5 * (1 - 0.005) - 0.01 * 1e-3 / (1e-3 + 1e-8)).epsilon(1e-6));
  CHECK(clip_scale(2.0, 1.0) == doctest::Approx(1.0 / (2.0 + 1e-6)));
  CHECK(clip_scale(0.5, 1.0) == 1.0);
  CHECK(clip_scale(5.0, 0.0) == 1.0);
}

}  // namespace
}  // namespace fsdpx
