// tests/executor/trainer_fixtures.h — shared pieces of the Trainer tests: a deterministic token source,
// plans for the tiny models on the `cpu` cluster, and an independent single-rank reference trainer
// (Transformer::forward/backward on one full fp32 buffer, a plain AdamW and cosine schedule written
// here from torch.optim.AdamW and llm.c's schedulers.h, not from the runtime's code).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config_paths.h"
#include "core/plan.h"
#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "executor/session/trainer.h"
#include "tests/nan_max.h"

namespace fsdpx::test {

// Token t of sequence i: a hash of (i, t) modulo the vocabulary; the same for every caller.
class HashData : public DataSource {
 public:
  explicit HashData(std::int64_t vocab) : vocab_(vocab) {}
  void global_batch(const DataPosition& pos, std::int64_t global_batch, std::int64_t seq,
                    std::vector<std::int32_t>& tokens) override {
    tokens.resize(std::size_t(global_batch * (seq + 1)));
    for (std::int64_t s = 0; s < global_batch; ++s)
      for (std::int64_t t = 0; t <= seq; ++t) {
        std::uint64_t x = (pos.next_sample + std::uint64_t(s)) * 1000003ull + std::uint64_t(t) * 7919ull + 17;
        x ^= x >> 13, x *= 0x9E3779B97F4A7C15ull, x ^= x >> 29;
        tokens[std::size_t(s * (seq + 1) + t)] = std::int32_t(x % std::uint64_t(vocab_));
      }
  }
  std::string describe() const override { return "hash tokens"; }

 private:
  std::int64_t vocab_;
};

struct PlanShape {
  int dp_shard = 1, dp_replicate = 1;
  int tp = 1, cp = 1;
  bool sequence_parallel = true;
  int blocks_per_unit = 1;
  bool reshard = true;
  int prefetch = 1;
  std::int64_t accum = 1;
  RecomputeMode recompute = RecomputeMode::none;
};

inline Plan tiny_plan(const ModelSpec& model, const PlanShape& s, std::int64_t seq = 8) {
  ClusterSpec c = load_cluster("cpu");
  c.gpus_per_node = s.dp_shard * s.dp_replicate * s.tp * s.cp;
  c.nodes = 1;
  TrainingSettings t;
  t.seq = seq;
  t.micro_batch = 1;
  t.global_batch = s.accum * s.dp_shard * s.dp_replicate;
  t.seed = 7;
  Parallelism par;
  par.dp_shard = s.dp_shard;
  par.dp_replicate = s.dp_replicate;
  par.tp = s.tp;
  par.cp = s.cp;
  par.sequence_parallel = s.tp > 1 && s.sequence_parallel;
  if (s.dp_replicate > 1) par.data_parallel = DataParallel::hsdp;
  Plan p = default_plan(model, c, t, par, s.blocks_per_unit, s.recompute);
  for (PlanUnit& u : p.units) u.reshard_after_forward = s.reshard ? 1 : 0;
  p.prefetch.forward = p.prefetch.backward = s.prefetch;
  p.optimizer.lr = 3e-3;
  p.optimizer.warmup_steps = 2;
  p.optimizer.total_steps = 5;
  p.optimizer.min_lr_ratio = 0.1;
  p.optimizer.weight_decay = 0.1;
  p.optimizer.grad_clip_norm = 1.0;
  validate_plan(p, "test plan");
  return p;
}

struct Trajectory {
  std::vector<double> losses;
  std::vector<float> params;
};

// Single-rank unsharded training on the whole global batch: micro-batches of micro_batch sequences in
// batch order, gradients summed with dloss = micro_batch / global_batch, global-norm clipping, AdamW.
inline Trajectory reference_training(const Plan& plan, int steps) {
  const TrainingSettings& t = plan.training;
  const OptimizerSettings& o = plan.optimizer;
  Transformer<float> model(plan.model, t.micro_batch, t.seq);
  const ParamLayout& layout = model.layout();
  std::vector<float> p(std::size_t(layout.total)), g(p.size()), m(p.size(), 0.0f), v(p.size(), 0.0f);
  init_all(layout, t.seed, p.data());
  HashData data(plan.model.vocab);
  Trajectory out;
  std::vector<std::int32_t> batch, tokens, targets;
  for (int step = 0; step < steps; ++step) {
    data.global_batch(DataPosition{std::uint64_t(step * t.global_batch)}, t.global_batch, t.seq, batch);
    std::fill(g.begin(), g.end(), 0.0f);
    double loss = 0;
    const std::int64_t chunks = t.global_batch / t.micro_batch;
    for (std::int64_t c = 0; c < chunks; ++c) {
      tokens.clear(), targets.clear();
      for (std::int64_t j = c * t.micro_batch; j < (c + 1) * t.micro_batch; ++j)
        for (std::int64_t i = 0; i < t.seq; ++i)
          tokens.push_back(batch[std::size_t(j * (t.seq + 1) + i)]),
              targets.push_back(batch[std::size_t(j * (t.seq + 1) + i + 1)]);
      loss += model.forward(p.data(), tokens.data(), targets.data());
      model.backward(p.data(), g.data(), float(1.0 / double(chunks)));
    }
    out.losses.push_back(loss / double(chunks));
    double sq = 0;
    for (float x : g) sq += double(x) * x;
    const double norm = std::sqrt(sq);
    const double clip = o.grad_clip_norm > 0 ? std::min(1.0, o.grad_clip_norm / (norm + 1e-6)) : 1.0;
    // Warm-up lr·(k+1)/W, then cosine from lr to min_lr_ratio·lr over total − W steps (llm.c schedulers.h).
    const double lr = step < o.warmup_steps
                          ? o.lr * (step + 1) / o.warmup_steps
                          : o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 *
                                                         (1 + std::cos(M_PI * double(step - o.warmup_steps) /
                                                                       double(o.total_steps - o.warmup_steps))));
    const double bc1 = 1 - std::pow(o.beta1, step + 1), bc2 = 1 - std::pow(o.beta2, step + 1);
    for (std::size_t i = 0; i < p.size(); ++i) {  // torch.optim.AdamW
      const double gi = double(g[i]) * clip;
      m[i] = float(o.beta1 * m[i] + (1 - o.beta1) * gi);
      v[i] = float(o.beta2 * v[i] + (1 - o.beta2) * gi * gi);
      const double upd = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + o.eps);
      p[i] = float(p[i] * (1 - lr * o.weight_decay) - lr * upd);
    }
  }
  out.params = p;
  return out;
}

inline Trajectory trainer_training(const Plan& plan, int steps, TrainerOptions options = {}) {
  Trainer trainer(plan, std::make_shared<HashData>(plan.model.vocab), options);
  Trajectory out;
  for (int s = 0; s < steps; ++s) out.losses.push_back(trainer.step().loss);
  out.params = trainer.gather_full_params();
  return out;
}

// max |a − b| / max |b|: the largest difference relative to the largest reference value.
inline double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff = nan_max(diff, std::abs(double(a[i]) - b[i])), scale = nan_max(scale, std::abs(double(b[i])));
  return scale > 0 ? diff / scale : diff;
}

}  // namespace fsdpx::test
