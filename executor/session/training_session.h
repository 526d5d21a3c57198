// executor/session/training_session.h — one training run as the executor carries it out: the Trainer on
// the placed ranks (executor/runtime/rank_placement.h), the data source (recorded when asked), initial weights or the
// newest good checkpoint, the step loop with its checkpoint cadence, and what follows the loop (peak
// memory, the parameters hash, weight and batch files). What it did is kept in a RunRecord; printing it
// is the caller's (tools/cmd_run.cpp). With one process per rank every process saves and loads its part
// of each checkpoint (executor/checkpoint/checkpoint.h). Leaves out weight files of multi-process runs:
// no process holds every shard, so the caller refuses those options there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/data/token_file.h"
#include "executor/runtime/rank_placement.h"
#include "executor/session/trainer.h"

namespace fsdpx {

class BatchRecorder;

struct SessionOptions {
  std::string plan_file;   // names the plan in error messages
  std::int64_t steps = 0;  // train until this step; 0: the plan's optimizer.total_steps
  std::string data;        // token file or text; empty: the shipped text
  std::optional<TokenDType> data_dtype;
  std::string checkpoint_dir;  // empty: no checkpoints
  std::int64_t checkpoint_every = 0;  // and always at the last step
  bool resume = false;                // from the newest good checkpoint in checkpoint_dir
  std::string init_weights, save_init_weights, save_weights;  // safetensors files; empty: none
  std::string save_init_adapters;  // LoRA: the initial adapters, named per projection (full_weights.h); empty: none
  std::string dump_batches;  // safetensors file of the batches used; empty: none
  bool profile = false;      // per-op and per-kernel wall times (Trainer::profile)
  bool trace = false;        // per-op intervals and live memory of the last trace_steps steps (Trainer::timelines)
  int trace_steps = 0;       // 0: every step
  int threads = 0;           // CPU kernel threads per rank; 0: the thread budget decides
  // Told why a newer checkpoint was rejected (as resume goes on to an older one); may be empty.
  std::function<void(const std::string&)> on_rejected_checkpoint;
};

// What a run did, for the caller to print.
struct RunRecord {
  std::string backend = "cpu";
  std::string data;             // DataSource::describe()
  std::int64_t start_step = 0;  // 0, or the step of the checkpoint resumed from
  std::int64_t target_steps = 0;
  std::string resumed_from;  // checkpoint directory; empty when starting fresh
  std::vector<StepMetrics> steps;
  std::vector<std::string> checkpoints;  // directories written
  MemoryPeakBytes peak_memory;
  std::string params_hash;  // of the full fp32 parameters (params_hash.h), hex; empty when not gathered (finish():
                            // above 2^28 parameters in one process, 2^24 over processes, without --save-weights)
  double elapsed_s = 0;
  // Wall seconds before the first step (elapsed_s counts from it): the session's construction (data, backends, initial parameters,
  // loaded weights or checkpoint, initial files written), and of it the ranks' initial parameters
  // (Trainer::init_params_s; issue 29: 16 s of a llama3.2-1b run's start-up on a GPU).
  double startup_s = 0;
  double init_params_s = 0;
};

// The run's program: the plan checked for the runtime of `device` and lowered, once per run (the
// session's ranks and the tools that write its trace read this one). Throws ConfigError
// "<plan_file>: /path: ..." when the runtime cannot run the plan; meant to run before any process, GPU
// or rendezvous is set up (every launched rank would say the same).
RuntimeProgram make_session_program(const Plan& plan, const std::string& plan_file, ExecutorDevice device);

// Throws WriteError when checkpoint_dir or an output file of `o` cannot be written, so that it is said
// before any process starts or any step runs (checkpoint_dir is created when missing).
void check_session_outputs(const SessionOptions& o);

class TrainingSession {
 public:
  // Opens the data, builds the Trainer on placement's ranks, then loads init_weights or resumes, and
  // writes save_init_weights and save_init_adapters. ConfigError naming the plan file, a weight file or the
  // checkpoint root.
  // `program`: make_session_program's for this plan and placement.device.
  TrainingSession(const Plan& plan, RuntimeProgram program, SessionOptions options, const RankPlacement& placement);
  ~TrainingSession();

  const RunRecord& record() const { return record_; }
  const Trainer& trainer() const { return *trainer_; }

  // Steps until the target step, saving a checkpoint every checkpoint_every steps and at the last one;
  // calls on_step after each step with the wall time since train() began.
  void train(const std::function<void(const StepMetrics&, double elapsed_s)>& on_step);
  // After train(): peak memory, the parameters hash and save_weights (one process per rank: gathered from
  // the processes, process_weights.h; tp = cp = pp = 1 only), and dump_batches.
  void finish();

 private:
  void resume();
  CheckpointGroup checkpoint_group();

  SessionOptions options_;
  std::string fingerprint_;
  bool whole_state_ = true;
  std::string job_id_;  // RankPlacement::job_id
  std::shared_ptr<BatchRecorder> recorder_;
  std::unique_ptr<Trainer> trainer_;
  RunRecord record_;
};

}  // namespace fsdpx
