// tests/executor/pipeline_fixtures.h — plans and runs shared by the pipeline-parallel Trainer tests:
// llama-tiny or gpt-tiny with 8 blocks (enough for 4 stages of blocks besides the embedding and the
// head), seq 32, one sequence per micro-batch, on the shipped text; and the 1-rank plan of the same
// model, data and seed; tp and cp beside the pipeline (tp with sequence parallelism).
#pragma once

#include <optional>
#include <string>

#include "core/config_paths.h"
#include "executor/data/text_dataset.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx::test {

// The layout of a test plan; pp = 1 with schedule none is the 1-rank run.
struct PipePlan {
  std::string model = "llama-tiny";
  int pp = 1, vpp = 1, dp_shard = 1, dp_replicate = 1;
  int tp = 1, cp = 1;  // tp > 1 runs sequence parallel
  bool tie = false;    // tie the head to the embedding (llama-tiny's is untied)
  PipelineSchedule schedule = PipelineSchedule::none;
  std::int64_t global_batch = 8;
  int steps = 30;
  double clip = 1.0;
  RecomputeMode recompute = RecomputeMode::none;
};

// llama-tiny (or gpt-tiny) with 8 blocks, seq 32, one sequence per micro-batch.
inline Plan pipe_plan(const PipePlan& s) {
  ModelSpec m = load_model(s.model);
  m.layers = 8;
  if (s.tie) m.tied_embeddings = true;
  ClusterSpec c = load_cluster("cpu");
  c.gpus_per_node = s.pp * s.dp_shard * s.dp_replicate * s.tp * s.cp;
  c.nodes = 1;
  Parallelism par;
  par.pp = s.pp;
  par.vpp = s.vpp;
  par.dp_shard = s.dp_shard;
  par.dp_replicate = s.dp_replicate;
  par.tp = s.tp, par.cp = s.cp;
  par.sequence_parallel = s.tp > 1;
  if (s.dp_replicate > 1) par.data_parallel = DataParallel::hsdp;
  par.pp_schedule = s.schedule;
  Plan p = default_plan(m, c, TrainingSettings{32, 1, s.global_batch, 7}, par, 1, s.recompute);
  p.optimizer.lr = 3e-3;
  p.optimizer.warmup_steps = 2;
  p.optimizer.total_steps = s.steps;
  p.optimizer.min_lr_ratio = 0.1;
  p.optimizer.weight_decay = 0.1;
  p.optimizer.grad_clip_norm = s.clip;
  validate_plan(p, "pipeline test plan");
  return p;
}

inline std::shared_ptr<DataSource> shipped_text(const Plan& plan) {
  return open_dataset(DataOptions{"", std::nullopt, plan.training.seed, plan.model.vocab});
}

// `steps` steps from the seeded initialisation: the losses and the final parameters.
inline Trajectory train(const Plan& plan, int steps) {
  Trainer trainer(plan, shipped_text(plan));
  Trajectory out;
  for (int k = 0; k < steps; ++k) out.losses.push_back(trainer.step().loss);
  out.params = trainer.gather_full_params();
  return out;
}

inline PipePlan one_rank(PipePlan s) {
  s.pp = s.vpp = s.dp_shard = s.dp_replicate = 1;
  s.schedule = PipelineSchedule::none;
  return s;
}

}  // namespace fsdpx::test
