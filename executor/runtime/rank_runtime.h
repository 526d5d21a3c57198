// executor/runtime/rank_runtime.h — one rank of the CPU backend: its model (activations), its FSDP units,
// its communicators (world = dp_all, and the dp_shard and dp_replicate groups split from it by mesh
// coordinates) and the interpreter that runs the step program's ops in issue order. The CPU backend is
// synchronous: streams, prefetch depths and the in-flight cap change when ops would run on a GPU, not
// what they compute, so the issue order (a valid order of the dependency graph) gives the same result.
// Leaves out overlap and the CUDA backend.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "executor/comm/communicator.h"
#include "executor/model/transformer.h"
#include "executor/runtime/fsdp_unit.h"
#include "executor/runtime/memory_tracker.h"
#include "executor/runtime/runtime_program.h"
#include "executor/runtime/trainer.h"

namespace fsdpx {

struct RankStepResult {
  double loss_sum = 0;   // sum of this rank's micro-batch losses
  double grad_norm = 0;  // global, before clipping
  double lr = 0;
  bool skipped = false;
};

class RankRuntime {
 public:
  RankRuntime(const RuntimeProgram& rp, std::unique_ptr<Communicator> world, const TrainerOptions& options,
              OpProfiler* kernel_profiler);
  // Collective over all ranks: splits the dp_shard and dp_replicate communicators.
  void connect();
  // Initialises this rank's shards from the seed (identical whatever the world size).
  void init_params(std::uint64_t seed);

  // One step (0-based `step`): fetches the global batch from `data` (serialised by `data_mu`), runs
  // every op, applies the optimizer.
  RankStepResult run_step(std::int64_t step, const DataPosition& pos, DataSource& data, std::mutex& data_mu);

  int rank() const { return world_->rank(); }
  int shard_index() const { return shard_index_; }
  int replica_index() const { return replica_index_; }
  std::vector<FsdpUnit>& units() { return units_; }
  const std::vector<FsdpUnit>& units() const { return units_; }
  const MemoryTracker& memory() const { return mem_; }
  const std::map<std::string, double>& op_time_s() const { return op_time_s_; }
  void abort(const std::string& msg) { world_->abort(msg); }
  void copy_masters_to_replicas();  // DDP, after init or a state load

 private:
  void run_op(const Op& op, int id);
  Communicator& comm_for(int group);
  void set_micro_batch(int mb);
  std::vector<const float*> param_ptrs() const;
  void forward(const Op& op);
  void backward(const Op& op);
  void finish_reduction(int unit);
  void reduce_norm();
  void optimizer_step();

  const RuntimeProgram& rp_;
  std::unique_ptr<Communicator> world_, shard_comm_, replica_comm_;
  TrainerOptions options_;
  MemoryTracker mem_;
  Transformer<float> model_;
  std::vector<FsdpUnit> units_;
  int dp_rank_ = 0, shard_index_ = 0, replica_index_ = 0;
  // Per step:
  std::int64_t step_ = 0;
  std::vector<std::int32_t> batch_;  // [global_batch, seq + 1]
  std::vector<std::int32_t> tokens_, targets_;  // [micro_batch, seq]
  RankStepResult result_;
  bool non_finite_ = false, norm_done_ = false;
  std::map<std::string, double> op_time_s_;
};

}  // namespace fsdpx
