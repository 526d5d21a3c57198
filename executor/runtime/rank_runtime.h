// executor/runtime/rank_runtime.h — the op interpreter of one rank: it walks the step program's ops in
// issue order and asks its RankBackend (rank_backend.h: CPU reference or CUDA) to run each one; it
// owns what does not depend on the device: slicing the global batch into this rank's micro-batches,
// the loss and gradient-norm bookkeeping, the non-finite policy, the learning-rate schedule, clipping
// and per-op profiling. A synchronous backend runs the issue order (a valid order of the dependency
// graph); an asynchronous one enqueues each op behind its dependencies. Under pipeline parallelism the
// rank runs its pipeline rank's role: sends, receives and the split backward go to the backend, the
// loss comes from the last stage and the norm is summed over the stage's ranks, then across stages. Under
// fp16 loss scaling it scales the loss gradient, runs the unscale op, skips a step whose gradients held an
// inf or NaN on any rank (the flag rides the norm's all-reduce) and updates the scaler (loss_scaler.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "executor/runtime/op_timeline.h"
#include "executor/runtime/loss_scaler.h"
#include "executor/runtime/rank_backend.h"
#include "executor/runtime/runtime_program.h"
#include "executor/runtime/train_state.h"

namespace fsdpx {

enum class NonFinitePolicy { stop, skip_step };

struct TrainerOptions {
  NonFinitePolicy on_non_finite = NonFinitePolicy::stop;
  bool profile = false;  // collect per-op wall times
  // Record each op's wall-clock interval and the live bytes after it (RankRuntime::timeline()), for the
  // last `trace_steps` steps (0: every step).
  bool trace = false;
  int trace_steps = 0;
  bool cuda = false;     // the backends run on CUDA devices: the plan is checked for the CUDA runtime
  // CPU kernel threads per rank (--threads); 0: the thread budget decides (executor/cpu/thread_budget.h).
  int threads = 0;
  int processes_on_host = 1;  // processes sharing this host's cores (the launcher's local world size)
};

struct RankStepResult {
  double loss_sum = 0;   // sum of the micro-batch losses over all data-parallel ranks (of the last stage)
  double grad_norm = 0;  // global, before clipping
  double lr = 0;
  bool skipped = false;
  double loss_scale = 0;  // fp16 loss scaling: the scale this step's loss was multiplied by; 0 without
};

class RankRuntime {
 public:
  RankRuntime(const RuntimeProgram& rp, std::unique_ptr<RankBackend> backend, const TrainerOptions& options);
  // Collective over all ranks: splits the dp_shard and dp_replicate groups.
  void connect() { backend_->connect(); }
  // Initialises this rank's shards from the seed (identical whatever the world size).
  void init_params(std::uint64_t seed);

  // One step (0-based `step`): fetches the global batch from `data` (serialised by `data_mu`), runs
  // every op, applies the optimizer.
  RankStepResult run_step(std::int64_t step, const DataPosition& pos, DataSource& data, std::mutex& data_mu);

  int rank() const { return rank_; }  // global rank
  const ModelParallel& model_parallel() const { return par_; }
  int shard_index() const { return shard_index_; }
  RankBackend& backend() { return *backend_; }
  const RankBackend& backend() const { return *backend_; }
  const MemoryTracker& memory() const { return backend_->memory(); }
  // Live bytes as the program's memory effects say, applied in issue order (the backend's tracker
  // measures the device's own buffers instead).
  const MemoryTracker& program_memory() const { return program_memory_; }
  const std::map<std::string, double>& op_time_s() const { return op_time_s_; }
  const RankTimeline& timeline() const { return timeline_; }  // empty unless TrainerOptions::trace
  // fp16 loss scaling (the plan's loss_scale): the scaler's state, the same on every rank; empty without.
  const std::optional<LossScalerState>& loss_scaler() const { return scaler_; }
  void set_loss_scaler(const LossScalerState& s);
  void abort(const std::string& msg) { backend_->abort(msg); }

 private:
  void run_op(const Op& op);
  void sample_memory(std::int64_t at_ns);
  void trim_timeline();
  void all_reduce(const Op& op);
  void release(const Op& op);
  MeshGroup group_of(int group) const;
  void set_micro_batch(int mb);
  void forward(const Op& op);
  void backward(const Op& op);
  void point_to_point(const Op& op);
  void check_model_collectives(const Op& op);
  void check_losses();
  void stop_on_non_finite_gradient() const;  // under the stop policy, when a unit's gradient is not finite
  void reduce_norm(GroupKind over);
  void unscale();
  void optimizer_step();

  const RuntimeProgram& rp_;
  std::unique_ptr<RankBackend> backend_;
  TrainerOptions options_;
  int rank_ = 0, role_ = 0, mesh_rank_ = 0;  // global rank; its pipeline rank and mesh point
  int dp_rank_ = 0, shard_index_ = 0, replica_index_ = 0;  // dp_rank_: data_parallel_index
  ModelParallel par_;
  // Per step:
  std::int64_t step_ = 0;
  std::vector<std::int32_t> batch_;  // [global_batch, seq + 1]
  std::vector<std::int32_t> tokens_, targets_;  // [micro_batch, seq]
  RankStepResult result_;
  bool non_finite_ = false;
  int non_finite_unit_ = -1;  // this rank's first unit with a non-finite gradient this step
  bool norm_stage_done_ = false, norm_done_ = false;  // summed over the stage's dp_all, then across stages
  double norm_buf_[3] = {0, 0, 0};                   // Σ g², non-finite flag, loss sum
  std::optional<LossScalerState> scaler_;            // with the plan's loss_scale
  bool unscaled_ = false, found_inf_ = false;        // this step's unscale op ran; what it found on this rank
  std::map<std::string, double> op_time_s_;
  RankTimeline timeline_;
  MemoryTracker program_memory_;
};

}  // namespace fsdpx
