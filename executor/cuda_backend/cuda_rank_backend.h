// executor/cuda_backend/cuda_rank_backend.h — the CUDA RankBackend: one rank's CudaModelT (bf16, or fp16
// for fp16 plans: T; fp32 gradients), its CudaUnits and its device communicators, with one CUDA stream
// per step-program stream (compute, all-gather, reduce-scatter, all-reduce) and one event per op:
// begin_op makes the op's stream wait for its dependencies on other streams, end_op records the op's event, and every
// step starts behind the previous optimizer update (so the next all-gathers read updated shards).
// The reduce-scatters use their own communicator split off dp_shard so they can overlap the
// all-gathers under NCCL (one communicator runs its collectives in order: NVIDIA/nccl src/enqueue.cc).
// Host waits: the losses and the gradient norm, once per step, and after every model kernel group when
// a kernel profiler is given. Pipelines as the CPU backend runs them (docs/cuda.md, "Pipeline
// parallelism"): the rank's stages' units, a CudaModelT per micro-batch in flight, T messages through
// staging memory on a two-rank communicator per (sending pipeline rank, payload) channel. LoRA as the CPU
// backend runs it (docs/lora.md): adapters whole on every rank (cuda_adapters.h), summed by `ar.lora`,
// stepped alone; the base units are gathered but get no gradients. Leaves out CUDA graphs, fusing
// adjacent sends and receives into one NCCL group, and tensor and context parallelism.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "executor/cuda/device_communicator.h"
#include "executor/cuda/gemm.h"
#include "executor/cuda_backend/cuda_adapters.h"
#include "executor/cuda_backend/cuda_model.h"
#include "executor/cuda_backend/cuda_unit.h"
#include "executor/runtime/micro_batch_pool.h"
#include "executor/runtime/rank_backend.h"
#include "executor/runtime/rank_units.h"
#include "executor/runtime/runtime_program.h"

namespace fsdpx::cuda {

template <class T>
class CudaRankBackendT final : public RankBackend {
 public:
  // `world`: this rank's communicator over every rank (global ranks); all work on CUDA device `device`.
  // `kernel_profiler` (may be null) receives the model's per-kernel GPU times (cuda_op_timer.h).
  CudaRankBackendT(const RuntimeProgram& rp, std::unique_ptr<DeviceCommunicator> world, int device,
                  OpProfiler* kernel_profiler = nullptr);
  ~CudaRankBackendT() override;

  int rank() const override { return world_->rank(); }
  void connect() override;
  void init_params(std::uint64_t seed) override;
  bool holds_unit(int unit) const override { return units_.holds(unit); }
  UnitShardState unit_state(int unit) const override;
  void load_unit_state(int unit, const UnitShardState& s) override;
  void copy_masters_to_replicas() override;

  void begin_op(int id, const Op& op) override;
  void end_op(int id, const Op& op) override;

  void gather(int unit, MeshGroup group, bool from_kept) override;
  void release(int unit, double kept_bytes) override;

  void set_micro_batch(int mb, const std::int32_t* tokens, const std::int32_t* targets) override;
  void forward(int segment, int mb) override;
  void begin_backward(int mb, double dloss) override { models_.at(mb).begin_backward(float(dloss)); }
  void backward(int segment, int unit, int mb) override;
  void backward_input(int segment, int mb) override;
  void backward_weight(int segment, int unit, int mb) override;
  void send(Payload payload, int segment, int mb, int peer, int tag) override;
  void recv(Payload payload, int segment, int mb, int peer, int tag) override;
  std::vector<double> take_losses() override;
  // tp = cp = 1 on CUDA (runtime_program.h): the model issues no tensor- or context-parallel collectives.
  std::vector<IssuedCollective> take_model_collectives() override { return {}; }

  void reduce_scatter(int unit, MeshGroup group) override;
  void all_reduce_reduced(int unit, MeshGroup group) override;
  void all_reduce_full(int unit, MeshGroup group) override;
  void finish_reduction(int unit) override;
  void all_reduce_tied(int unit) override;
  int first_non_finite_unit() override;
  bool unscale_grads(float inv_scale) override;

  double grad_sq_sum() override;
  void all_reduce_host(double* buf, int count, MeshGroup group) override;
  void adamw(const OptimizerSettings& o, const AdamWStep& s) override;
  void zero_grad_shards() override;

  void all_reduce_adapter_grads(MeshGroup group) override;
  double adapter_grad_sq_sum() override;
  AdapterState adapter_state() const override;
  void load_adapter_state(const AdapterState& s) override;

  void synchronize() override;
  void abort(const std::string& msg) override { world_->abort(msg); }
  const MemoryTracker& memory() const override { return mem_; }

 private:
  void use_device() const;
  DeviceCommunicator& comm(MeshGroup group);
  DeviceCommunicator& reshard_comm(int unit) {  // the unit's reshard group (FSDP2's post-forward mesh)
    return reshard_communicator(reshard_comms_, rp_.program.units[std::size_t(unit)].kept_shard_ranks);
  }
  cudaStream_t stream(StreamKind s) const { return streams_[std::size_t(s)]; }
  std::vector<float*> grad_ptrs(int unit) {  // all null under LoRA (a frozen base)
    return units_.unit_grads(rp_, unit, [this](CudaUnitT<T>& u, int k) { return u.module_grads(k, current_); });
  }
  void sync_streams() const;
  // Σ x² of `n` fp32 device values (accumulate: onto the previous sum_squares) read back to the host.
  void sum_squares_async(const float* x, std::int64_t n, bool accumulate);
  double read_sq_sum();
  std::unique_ptr<CudaModelT<T>> make_model();
  // Copies the message received for (mb, payload), if any, into the model (`dst` gives where) on the
  // compute stream; returns whether there was one.
  template <class Dst>
  bool deliver(int mb, Payload payload, Dst dst);
  // The communicator of a message to (sending) or from `peer` (global rank).
  DeviceCommunicator& channel(Payload payload, bool sending, int peer) const;

  const RuntimeProgram& rp_;
  int device_;
  OpProfiler* kernel_profiler_;
  std::unique_ptr<DeviceCommunicator> world_, shard_comm_, shard_rs_comm_, replica_comm_;
  std::unique_ptr<DeviceCommunicator> dp_all_comm_, pp_all_comm_, pp_ends_comm_;  // pp > 1
  std::vector<std::pair<int, std::unique_ptr<DeviceCommunicator>>> reshard_comms_;  // per reshard group size g
  // pp > 1, the channels of this rank: activations to the next pipeline rank and from the previous one,
  // their gradients to the previous and from the next (rank 0 of each channel sends, rank 1 receives).
  std::unique_ptr<DeviceCommunicator> act_send_, act_recv_, grad_send_, grad_recv_;
  int role_ = 0, mesh_rank_ = 0;
  std::array<cudaStream_t, kStreamCount> streams_{};
  std::vector<cudaEvent_t> op_done_;  // per op id of the step program
  cudaEvent_t step_start_ = nullptr;
  cudaStream_t current_ = nullptr;    // the stream of the op being issued
  std::string current_op_;            // and its name, for the watchdog
  MemoryTracker mem_;
  std::unique_ptr<GemmContext> gemm_;
  std::unique_ptr<const LoraLayout> lora_;   // LoRA plans only; before model_options_, which points to it
  std::unique_ptr<CudaAdaptersT<T>> adapters_;   // LoRA plans only
  CudaModelOptions model_options_;
  MicroBatchPool<CudaModelT<T>> models_;
  struct Inbound {
    T* staging = nullptr;     // stream-ordered, freed on the compute stream after the copy
    cudaEvent_t done = nullptr;  // recorded on the receive's stream after it
  };
  std::map<std::pair<int, int>, Inbound> inbox_;  // by (micro-batch, payload): received, not delivered
  RankUnits<CudaUnitT<T>> units_;  // the rank's stages' units and a tied table's copy
  DeviceBuffer<float> losses_;       // [grad_accum] mean loss per micro-batch of the step
  int losses_written_ = 0;
  DeviceBuffer<int> non_finite_;     // [units] flags since zero_grad_shards
  DeviceBuffer<int> found_inf_;      // [1] the unscale pass's inf/NaN flag
  DeviceBuffer<double> sq_sum_, sq_scratch_;
  DeviceBuffer<float> host_reduce_;  // all_reduce_host staging
};

// The backend of plan `rp` on CUDA device `device`: T = f16 for fp16 plans, bf16 otherwise.
std::unique_ptr<RankBackend> make_cuda_rank_backend(const RuntimeProgram& rp, std::unique_ptr<DeviceCommunicator> world,
                                                    int device, OpProfiler* kernel_profiler);

}  // namespace fsdpx::cuda
