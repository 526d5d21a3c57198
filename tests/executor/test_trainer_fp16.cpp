// tests/executor/test_trainer_fp16.cpp — fp16 mixed precision with dynamic loss scaling on the CPU backend.
// The scale trajectory is computed here by hand: with the parameters unchanged while steps are skipped, a
// step overflows when scale · G reaches 65520 (fp16's largest value 65504 rounds up to infinity from there),
// G being the largest |gradient| of one micro-batch on the fp16-rounded parameters, computed by the
// reference model outside the runtime; the scale then follows GradScaler's rule as torch/amp/grad_scaler.py
// documents it. Also: the gathered parameters are fp16 values, 1 rank and 4 FSDP ranks agree, the model
// trains after the skipped steps, and the scaler state survives a checkpoint.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "executor/checkpoint/checkpoint.h"
#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "executor/session/checkpoint_plan.h"
#include "tests/executor/pipeline_fixtures.h"
#include "tests/executor/tiny_models.h"
#include "tests/executor/trainer_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

using test::HashData;

constexpr double kFp16Overflow = 65520;  // (2 − 2^−11) · 2^15: from here round-to-nearest gives infinity

// The batch of position 0 at every step: a few sequences to memorise, with the same gradients while
// the parameters stay.
class FixedData : public DataSource {
 public:
  explicit FixedData(std::int64_t vocab) : hash_(vocab) {}
  void global_batch(const DataPosition&, std::int64_t global_batch, std::int64_t seq,
                    std::vector<std::int32_t>& tokens) override {
    hash_.global_batch(DataPosition{0}, global_batch, seq, tokens);
  }
  std::string describe() const override { return "fixed hash tokens"; }

 private:
  HashData hash_;
};

// tiny llama, 4 sequences per step on `ranks` FSDP ranks (micro-batch 1), fp16, a constant lr.
Plan fp16_plan(int ranks, double lr, std::optional<LossScaleSettings> ls) {
  test::PlanShape shape;
  shape.dp_shard = ranks;
  shape.accum = 4 / ranks;
  Plan p = test::tiny_plan(test::tiny_llama(), shape);
  p.precision.param = DType::fp16;
  p.loss_scale = ls;
  p.optimizer.lr = lr;
  p.optimizer.warmup_steps = 0;
  p.optimizer.min_lr_ratio = 1.0;
  p.optimizer.weight_decay = 0;
  p.optimizer.total_steps = 1000;
  validate_plan(p, "fp16 test plan");
  return p;
}

LossScaleSettings scaler(double init, std::int64_t interval) {
  LossScaleSettings s;
  s.initial_scale = init;
  s.growth_interval = interval;
  return s;
}

std::vector<float> fp16_init_params(const Plan& plan) {
  std::vector<float> p(std::size_t(make_param_layout(plan.model).total));
  init_all(make_param_layout(plan.model), plan.training.seed, p.data());
  for (float& x : p) x = float(static_cast<_Float16>(x));
  return p;
}

struct Reference {
  double max_grad = 0;  // G: the largest |gradient| of one micro-batch, dloss = 1/4
  double loss = 0;      // mean over the 4 sequences
};

// The first step's loss and G on the fp16-rounded initial parameters and the fixed batch.
Reference reference_step(const Plan& plan) {
  const TrainingSettings& t = plan.training;
  Transformer<float> model(plan.model, 1, t.seq);
  const std::vector<float> p = fp16_init_params(plan);
  std::vector<float> g(p.size());
  std::vector<std::int32_t> batch;
  FixedData(plan.model.vocab).global_batch({}, t.global_batch, t.seq, batch);
  Reference r;
  for (std::int64_t s = 0; s < t.global_batch; ++s) {
    std::vector<std::int32_t> tokens, targets;
    for (std::int64_t i = 0; i < t.seq; ++i)
      tokens.push_back(batch[std::size_t(s * (t.seq + 1) + i)]),
          targets.push_back(batch[std::size_t(s * (t.seq + 1) + i + 1)]);
    r.loss += model.forward(p.data(), tokens.data(), targets.data()) / double(t.global_batch);
    std::fill(g.begin(), g.end(), 0.0f);
    model.backward(p.data(), g.data(), float(1.0 / double(t.global_batch)));
    for (float x : g) r.max_grad = ::fsdpx::test::nan_max(r.max_grad, double(std::abs(x)));
  }
  return r;
}

struct ScaleStep {
  double scale = 0;
  bool skipped = false;
  bool operator==(const ScaleStep&) const = default;
};

// GradScaler's rule: an overflowing step is skipped and the scale multiplied by backoff_factor; a clean
// step counts, and the growth_interval-th clean step in a row multiplies it by growth_factor.
std::vector<ScaleStep> hand_trajectory(const LossScaleSettings& s, double max_grad, int steps) {
  std::vector<ScaleStep> out;
  double scale = s.initial_scale;
  std::int64_t clean = 0;
  for (int i = 0; i < steps; ++i) {
    const bool overflow = scale * max_grad >= kFp16Overflow;
    out.push_back({scale, overflow});
    if (overflow) {
      scale *= s.backoff_factor, clean = 0;
    } else if (++clean == s.growth_interval) {
      scale *= s.growth_factor, clean = 0;
    }
  }
  return out;
}

std::vector<ScaleStep> run(Trainer& trainer, int steps, std::vector<double>* losses = nullptr) {
  std::vector<ScaleStep> out;
  for (int i = 0; i < steps; ++i) {
    const StepMetrics m = trainer.step();
    out.push_back({m.loss_scale, m.skipped});
    if (losses) losses->push_back(m.loss);
  }
  return out;
}

int skipped_prefix(const std::vector<ScaleStep>& t) {
  int k = 0;
  while (k < int(t.size()) && t[std::size_t(k)].skipped) ++k;
  return k;
}

TEST_CASE("fp16: the gathered parameters are fp16 values (1 and 4 ranks)") {
  for (int ranks : {1, 4}) {
    const Plan plan = fp16_plan(ranks, 3e-3, std::nullopt);
    Trainer trainer(plan, std::make_shared<FixedData>(plan.model.vocab));
    const double loss = trainer.step().loss;
    const Reference ref = reference_step(plan);
    CAPTURE(ranks);
    CHECK(std::abs(loss - ref.loss) <= 1e-9);  // measured: equal
    Plan fp32 = plan;
    fp32.precision.param = DType::fp32;
    Trainer full(fp32, std::make_shared<FixedData>(plan.model.vocab));
    const double full_loss = full.step().loss;
    MESSAGE(fmt::format("fp16 - reference {:.3e}, fp16 - fp32 {:.3e}", loss - ref.loss, loss - full_loss));
    CHECK(std::abs(full_loss - loss) > 1e-7);  // the rounding shows (measured 1.07e-6 at init)
  }
}

TEST_CASE("fp16: from 2^40 the scale halves until the gradients fit fp16, then grows every growth_interval") {
  // lr 1e-12: the parameters stay (below fp32's resolution), so G and the trajectory stay exact.
  const LossScaleSettings ls = scaler(std::ldexp(1.0, 40), 3);
  const Plan plan = fp16_plan(1, 1e-12, ls);
  const Reference ref = reference_step(plan);
  const std::vector<ScaleStep> want = hand_trajectory(ls, ref.max_grad, 36);
  const int k = skipped_prefix(want);
  INFO("G = " << ref.max_grad << ", steps skipped before the first clean one: " << k);
  REQUIRE(k >= 10);  // 2^40 · G overflows fp16 by a wide margin
  REQUIRE(k < 30);
  Trainer trainer(plan, std::make_shared<FixedData>(plan.model.vocab));
  const std::vector<ScaleStep> got = run(trainer, 36);
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].scale == want[i].scale);
    CHECK(got[i].skipped == want[i].skipped);
  }
  CHECK(got[std::size_t(k)].scale == std::ldexp(1.0, 40 - k));
  // After the first clean step: growth_interval clean steps, a growth that overflows again, a back-off.
  CHECK(want[std::size_t(k + 3)].scale == std::ldexp(1.0, 41 - k));
  CHECK(want[std::size_t(k + 3)].skipped);
}

TEST_CASE("fp16: the skipped steps leave no trace, then it trains; 1 rank and 4 FSDP ranks agree") {
  const LossScaleSettings ls = scaler(std::ldexp(1.0, 40), 4);
  const Plan one = fp16_plan(1, 1e-2, ls), four = fp16_plan(4, 1e-2, ls);
  const Reference ref = reference_step(one);
  const int k = skipped_prefix(hand_trajectory(ls, ref.max_grad, 40));
  const int steps = k + 30;
  std::vector<double> loss1, loss4;
  Trainer t1(one, std::make_shared<FixedData>(one.model.vocab));
  Trainer t4(four, std::make_shared<FixedData>(four.model.vocab));
  const std::vector<float> init = t1.gather_full_params();
  const std::vector<ScaleStep> a = run(t1, k, &loss1);
  CHECK(t1.gather_full_params() == init);  // skipped steps change no parameter
  const std::vector<ScaleStep> rest = run(t1, steps - k, &loss1);
  const std::vector<ScaleStep> b = run(t4, steps, &loss4);
  CHECK(skipped_prefix(a) == k);
  CHECK_FALSE(rest.front().skipped);
  for (int i = 0; i < steps; ++i) {
    const ScaleStep& x = i < k ? a[std::size_t(i)] : rest[std::size_t(i - k)];
    CAPTURE(i);
    CHECK(x == b[std::size_t(i)]);
    CHECK(std::abs(loss1[std::size_t(i)] - loss4[std::size_t(i)]) < 1e-5);
  }
  CHECK(std::abs(loss1[std::size_t(k)] - ref.loss) < 1e-6);  // the first clean step starts from the init
  CHECK(loss1.back() < loss1[std::size_t(k)] - 0.5);         // memorising 4 sequences
}

TEST_CASE("fp16: the scaler's state survives a checkpoint and the resumed run continues it exactly") {
  const LossScaleSettings ls = scaler(std::ldexp(1.0, 40), 3);
  const Plan plan = fp16_plan(2, 1e-2, ls);
  const int k = skipped_prefix(hand_trajectory(ls, reference_step(plan).max_grad, 40));
  std::vector<double> whole_loss, resumed_loss;
  Trainer whole(plan, std::make_shared<FixedData>(plan.model.vocab));
  const std::vector<ScaleStep> want = run(whole, k + 8, &whole_loss);

  const auto root = std::filesystem::temp_directory_path() / fmt::format("fsdpx-fp16-ckpt-{}", ::getpid());
  std::filesystem::remove_all(root);
  Trainer first(plan, std::make_shared<FixedData>(plan.model.vocab));
  std::vector<ScaleStep> got = run(first, k + 2, &resumed_loss);
  const std::string dir = save_checkpoint(root.string(), first.state(), plan_fingerprint(plan));
  const TrainerState saved = read_checkpoint(dir, plan_fingerprint(plan));
  REQUIRE(saved.loss_scaler.has_value());
  CHECK(*saved.loss_scaler == *first.state().loss_scaler);
  CHECK(saved.loss_scaler->skipped_steps == k);
  CHECK(saved.loss_scaler->scale == float(std::ldexp(1.0, 40 - k)));
  Trainer second(plan, std::make_shared<FixedData>(plan.model.vocab));
  second.load_state(saved);
  for (const ScaleStep& s : run(second, 6, &resumed_loss)) got.push_back(s);
  std::filesystem::remove_all(root);
  CHECK(got == want);
  CHECK(resumed_loss == whole_loss);
}

TEST_CASE("fp16: a static scale keeps its value and still skips overflowing steps") {
  LossScaleSettings ls = scaler(std::ldexp(1.0, 40), 2);
  ls.dynamic = false;
  const Plan plan = fp16_plan(1, 1e-2, ls);
  Trainer trainer(plan, std::make_shared<FixedData>(plan.model.vocab));
  for (const ScaleStep& s : run(trainer, 4)) CHECK(s == ScaleStep{std::ldexp(1.0, 40), true});
  ls.initial_scale = 256;
  const Plan small = fp16_plan(1, 1e-2, ls);
  Trainer scaled(small, std::make_shared<FixedData>(plan.model.vocab));
  Trainer unscaled(fp16_plan(1, 1e-2, std::nullopt), std::make_shared<FixedData>(plan.model.vocab));
  for (int i = 0; i < 4; ++i) {
    const StepMetrics a = scaled.step(), b = unscaled.step();
    CHECK(a.loss_scale == 256);
    CHECK_FALSE(a.skipped);
    CHECK(b.loss_scale == 0);
    CHECK(std::abs(a.loss - b.loss) < 1e-5);
  }
}

TEST_CASE("fp16: pipeline stages (1F1B, with and without clipping) skip and scale as 1 rank does") {
  for (double clip : {1.0, 0.0}) {
    CAPTURE(clip);
    auto fp16 = [clip](int pp) {
      test::PipePlan s;
      s.pp = pp;
      s.schedule = pp > 1 ? PipelineSchedule::one_f_one_b : PipelineSchedule::none;
      s.clip = clip;
      Plan p = test::pipe_plan(s);
      p.precision.param = DType::fp16;
      p.loss_scale = scaler(std::ldexp(1.0, 40), 3);
      validate_plan(p, "fp16 pipeline plan");
      return p;
    };
    // Under pp the gradients accumulate unsharded over the micro-batches and are rounded to fp16 once
    // (reduce_grads last_micro_batch), which overflows earlier than per micro-batch: the 1-rank plan too.
    const Plan two = fp16(2);
    Plan one = fp16(1);
    one.reduce_grads = two.reduce_grads;
    Trainer a(one, test::shipped_text(one)), b(two, test::shipped_text(two));
    std::vector<double> la, lb;
    const std::vector<ScaleStep> ta = run(a, 30, &la), tb = run(b, 30, &lb);
    CHECK(skipped_prefix(ta) >= 10);
    CHECK(ta == tb);
    for (std::size_t i = 0; i < la.size(); ++i) CHECK(std::abs(la[i] - lb[i]) < 1e-5);
  }
}

}  // namespace
}  // namespace fsdpx
