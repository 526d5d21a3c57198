// executor/session/trainer.h — the contract of the executor runtime: real FSDP training that follows a
// plan by running the step program of program/lower.h op by op, on all ranks of one process (the
// CPU backend: ranks are threads, ThreadCommunicator). State that survives a step (sharded parameters,
// Adam moments, step, data position, RNG) is exposed as TrainerState so checkpoints can save it,
// reshard it and restore it. The device side of each rank is a RankBackend (CPU reference by default).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/cpu/thread_budget.h"
#include "executor/runtime/rank_backend.h"
#include "executor/runtime/rank_runtime.h"
#include "executor/runtime/train_state.h"

namespace fsdpx {

struct StepMetrics {
  std::int64_t step = 0;  // 1-based index of the step just done
  double loss = 0;        // mean over the global batch
  double grad_norm = 0;   // before clipping
  double lr = 0;
  double time_s = 0;      // wall time of the step
  double tokens_per_s = 0;
  bool skipped = false;   // non-finite values, skipped by option or by the loss scaler
  double loss_scale = 0;  // fp16 loss scaling: the scale of this step (before its update); 0 without
};

// Peak bytes per category on the worst rank, with the simulator's categories (step_program.h).
using MemoryPeakBytes = std::map<std::string, double>;

// Per-op wall times under the step program's op names ("fwd.s3.mb0", "ag.u2.mb0.fwd"...), summed
// over the steps run, per rank 0; per-kernel times under the cost model's kernel names; and the
// tensor- and context-parallel collectives by group, kind and size.
struct OpProfile {
  std::map<std::string, double> op_time_s;
  std::map<std::string, double> kernel_time_s;
  std::map<std::string, int> kernel_calls;
  // Tensor- and context-parallel collectives inside compute ops ("tp.all_gather.16384B").
  std::map<std::string, double> collective_time_s;
  std::map<std::string, int> collective_calls;
  int steps = 0;
};

class Trainer {
 public:
  // Builds the step program with lower(plan), initialises parameters from plan.training.seed (identical
  // whatever the world size) and starts one thread per rank. Throws ConfigError for plans it cannot run.
  Trainer(const Plan& plan, std::shared_ptr<DataSource> data, TrainerOptions options = {},
          const RankBackendFactory& make_backends = {});
  // The same from the session's program (make_runtime_program, lowered once; TrainerOptions::cuda must
  // name the device it was made for).
  Trainer(RuntimeProgram program, std::shared_ptr<DataSource> data, TrainerOptions options = {},
          const RankBackendFactory& make_backends = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  StepMetrics step();  // one optimizer step on every rank; rethrows a rank's error ("rank r: ...")

  TrainerState state() const;          // a copy of the sharded state, with each unit's module list
  // The shard owners of replica 0 (ranks 0..S-1) that run in this process, with module lists: what this
  // process writes to a checkpoint. Equal to state() when every owner runs here; no ranks when none does.
  // Under tp, cp, pp or ep the shards are the full model's (a rank's slice spans several): with ranks in
  // other processes every process must call it at once (a sum over the processes gathers the slices).
  TrainerState local_state() const;
  // Zero-filled shards, in this plan's units and layout, of the owners this process's ranks load from:
  // the layout to reshard a checkpoint into before load_state.
  TrainerState load_layout() const;
  // `s` resharded by the caller to this plan's dp_shard and units; it holds at least the shard owners of
  // this process's ranks (matched by rank); module lists, when given, must match.
  void load_state(const TrainerState& s);
  // Element-wise sum over the processes of the job (this process adds `words` once, whatever its number
  // of ranks): a collective that every process calls with as many words. Exact when each 16-bit limb of a
  // word is non-zero on fewer than 256 processes (a backend may reduce host values in fp32).
  std::vector<std::uint64_t> sum_over_processes(const std::vector<std::uint64_t>& words);
  bool hosts_rank0() const;  // this process runs global rank 0 (it leads checkpoint saves and loads)
  MemoryPeakBytes peak_memory() const;  // measured: the backends' own buffers
  // Wall seconds the constructor's ranks took to connect and load their initial parameters (the seeded
  // draw and its upload: model/initial_state.h), after the backends were built.
  double init_params_s() const;
  // What the step program's memory effects say, applied in issue order on each rank.
  MemoryPeakBytes program_peak_memory() const;
  OpProfile profile() const;
  // With TrainerOptions::trace: the measured op intervals and memory of this process's ranks, in rank order.
  std::vector<RankTimeline> timelines() const;
  // The full unsharded fp32 parameters in module order (module_names), for tests and exports.
  std::vector<float> gather_full_params() const;
  const RuntimeProgram& program() const;  // the step program and run settings every rank interprets
  // Kernel threads per rank thread and why (executor/cpu/thread_budget.h), decided at construction.
  const cpu::ThreadBudget& thread_budget() const;

  // The global rank of the calling thread while it runs a rank's part of step() (data sources may use
  // it for logging or fault injection); -1 on any other thread.
  static int current_rank();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fsdpx
