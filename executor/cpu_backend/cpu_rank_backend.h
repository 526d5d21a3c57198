// executor/cpu_backend/cpu_rank_backend.h — the CPU reference RankBackend: the fp32 model of executor/model with
// its hand-written backward, one FsdpUnit per plan unit (fp32 masters, moments, accumulators and
// unsharded buffers on the host) and host communicators (the world's and the groups split from it:
// dp_shard, dp_replicate and, under tensor or context parallelism, the model's tp and cp groups and
// the data-parallel groups spanning cp). Synchronous: every method has finished when it returns, so
// begin_op/end_op and synchronize do nothing. Leaves out low precision: the CPU computes and
// communicates in fp32.
#pragma once

#include <memory>
#include <vector>

#include "executor/comm/communicator.h"
#include "executor/model/buffer_bytes.h"
#include "executor/model/op_profiler.h"
#include "executor/model/transformer.h"
#include "executor/cpu_backend/fsdp_unit.h"
#include "executor/runtime/rank_backend.h"
#include "executor/runtime/runtime_program.h"

namespace fsdpx {

class CpuRankBackend final : public RankBackend {
 public:
  // `world`: this rank's communicator over all data-parallel ranks; `kernel_profiler` may be null.
  CpuRankBackend(const RuntimeProgram& rp, std::unique_ptr<Communicator> world, OpProfiler* kernel_profiler);

  int rank() const override { return world_->rank(); }
  void connect() override;
  void init_params(std::uint64_t seed) override;
  UnitShardState unit_state(int unit) const override { return units_[std::size_t(unit)].state(); }
  void load_unit_state(int unit, const UnitShardState& s) override { units_[std::size_t(unit)].state() = s; }
  void copy_masters_to_replicas() override;

  void begin_op(int, const Op&) override {}
  void end_op(int, const Op&) override {}

  void gather(int unit, MeshGroup group, bool drop_kept) override;
  void release(int unit, double kept_bytes) override { units_[std::size_t(unit)].release_params(kept_bytes); }

  void set_micro_batch(const std::int32_t* tokens, const std::int32_t* targets) override;
  void forward(int segment) override;
  void begin_backward(double dloss) override { model_.begin_backward(float(dloss)); }
  void backward(int segment, int unit) override;
  std::vector<double> take_losses() override;
  std::vector<IssuedCollective> take_model_collectives() override { return model_comm_.take_issued(); }

  void reduce_scatter(int unit, MeshGroup group) override;
  void all_reduce_reduced(int unit, MeshGroup group) override;
  void all_reduce_full(int unit, MeshGroup group) override;
  void finish_reduction(int unit) override;
  int first_non_finite_unit() override { return first_non_finite_unit_; }

  double grad_sq_sum() override;
  void all_reduce_host(double* buf, int count, MeshGroup group) override { comm(group).all_reduce(buf, count); }
  void adamw(const OptimizerSettings& o, const AdamWStep& s) override;
  void zero_grad_shards() override;

  void synchronize() override {}
  void abort(const std::string& msg) override { world_->abort(msg); }
  const MemoryTracker& memory() const override { return mem_; }

 private:
  Communicator& comm(MeshGroup group);

  const RuntimeProgram& rp_;
  std::unique_ptr<Communicator> world_, shard_comm_, replica_comm_;
  std::unique_ptr<Communicator> tp_comm_, cp_comm_, dp_all_comm_, replica_cp_comm_, dp_cp_comm_;  // tp or cp > 1
  ModelParallel par_;
  ModelComm model_comm_;  // before model_, which keeps a pointer
  MemoryTracker mem_;
  Transformer<float> model_;
  std::vector<FsdpUnit> units_;
  // Per unit: the [begin, end) ranges of this rank's shard holding tensors every tp rank holds whole
  // (their gradients count once in the norm: on tp rank 0).
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> replicated_ranges_;
  std::vector<SegmentBufferBytes> segment_bytes_;  // the model's buffers per segment of the program
  int shard_index_ = 0, replica_index_ = 0;
  std::vector<double> losses_;         // per micro-batch since take_losses
  int first_non_finite_unit_ = -1;     // since zero_grad_shards
};

}  // namespace fsdpx
