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
// stepped alone; the base units are gathered but get no gradients. Tensor parallelism as the CPU
// backend runs it (without sequence parallelism for now): the model's collectives go over the skeleton's
// tp group on the compute op's stream (cuda_model_comm.h). Expert parallelism as the CPU backend runs it:
// units in two parts (executor/model/fsdp_unit.h), the MoE blocks' token exchange on the ep group. The units
// are the CPU's FsdpUnitT over the GPU policy (cuda_unit.h), which issues on the current op's stream.
// Leaves out CUDA graphs, fusing adjacent sends and receives into one NCCL group, sequence and context
// parallelism.
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
#include "executor/runtime/model_skeleton.h"

namespace fsdpx::cuda {

// The rank skeleton (rank_skeleton.h: groups, units, their all-gathers and reductions; model_skeleton.h:
// the segments' passes and sends) over device communicators, CudaUnitTs and CudaModelTs, each unit op and
// model pass enqueued on the current op's stream; the rest below.
template <class T>
class CudaRankBackendT final : public ModelSkeleton<CudaUnitT<T>, DeviceCommunicator, CudaModelT<T>, T> {
  using Base = ModelSkeleton<CudaUnitT<T>, DeviceCommunicator, CudaModelT<T>, T>;
  using Base::rp_, Base::world_, Base::pp_ends_comm_, Base::role_, Base::mesh_rank_, Base::mem_,
      Base::units_, Base::comm, Base::holds_unit;
  using Model = CudaModelT<T>;

 public:
  // `world`: this rank's communicator over every rank (global ranks); all work on CUDA device `device`.
  // `kernel_profiler` (may be null) receives the model's per-kernel GPU times (cuda_op_timer.h).
  CudaRankBackendT(const RuntimeProgram& rp, std::unique_ptr<DeviceCommunicator> world, int device,
                  OpProfiler* kernel_profiler = nullptr);
  ~CudaRankBackendT() override;

  void init_params(std::uint64_t seed) override;
  UnitShardState unit_state(int unit) const override;

  void begin_op(int id, const Op& op) override;
  void end_op(int id, const Op& op) override;

  void set_micro_batch(int mb, const std::int32_t* tokens, const std::int32_t* targets) override;
  void recv(Payload payload, int segment, int mb, int peer, int tag) override;
  std::vector<double> take_losses() override;
  std::vector<IssuedCollective> take_model_collectives() override { return model_comm_.take_issued(); }

  int first_non_finite_unit() override;
  void all_reduce_host(double* buf, int count, MeshGroup group) override;
  AdapterState adapter_state() const override;
  void load_adapter_state(const AdapterState& s) override;

  void synchronize() override;

 private:
  std::unique_ptr<DeviceCommunicator> split_world(int color, int key, const std::string& name) override {
    use_device();
    return world_->split(color, key, name);
  }
  void connect_device() override;
  void load_unit(CudaUnitT<T>& u, const UnitShardState& s) override;
  DeviceCommunicator& reduction_comm(UnitReduction r, MeshGroup group) override {  // reduce-scatters beside all-gathers
    return r == UnitReduction::scatter && group == Base::shard_group() ? *shard_rs_comm_ : comm(group);
  }
  // The device kernels of the skeleton's gradient bookkeeping, on the current op's stream.
  void finish_unit_reduction(CudaUnitT<T>& u, int unit) override { u.finish_reduction(non_finite_.get() + unit); }
  void adamw_adapters(const OptimizerSettings& o, const AdamWStep& s) override;
  float* adapter_grads() override { return adapters_ ? adapters_->grads() : nullptr; }
  std::int64_t adapter_numel() const override { return adapters_ ? adapters_->numel() : 0; }
  void all_reduce_shard(DeviceCommunicator& c, float* g, std::int64_t n) override {
    c.all_reduce(g, g, n, DType::fp32, current_, current_op_);
  }
  void zero_shard(float* g, std::int64_t n) override;
  void round_to_fp16(float* g, std::int64_t n) override;
  void unscale_shard(float* g, std::int64_t n, float inv_scale) override;
  bool take_found_inf() override;
  void add_sum_squares(const float* g, std::int64_t n) override;
  double take_sum_squares() override;
  void flag_non_finite(float* g, std::int64_t n, int unit) override;
  void clear_non_finite() override;
  void use_device() const;
  cudaStream_t stream(StreamKind s) const { return streams_[std::size_t(s)]; }
  // The model half (model_skeleton.h): every pass on the current op's stream; the tracker counts a
  // model's scratch when the pool makes it (make_model), so a segment's backward works in no more.
  MicroBatchPool<Model>& models() override { return models_; }
  bool counts_working_per_pass() const override { return false; }
  cudaStream_t pass_stream() const override { return current_; }
  void enter_forward(Model& model, const Segment& seg, int mb, bool head) override;
  void enter_backward(Model& model, const Segment& seg, int mb) override;
  void keep_loss(Model&) override { ++losses_written_; }
  const T* adapter_params() override { return adapters_->params16(); }
  void post_send(const T* data, Payload payload, int peer, int tag) override;
  void sync_streams() const;
  // Waits for the current stream and reads `n` bytes of device memory (a peer's abort throws).
  void read_back(void* host, const void* device, std::size_t n);
  std::unique_ptr<CudaModelT<T>> make_model();
  // Copies the message received for (mb, payload), if any, into the model (`dst` gives where) on the
  // compute stream; returns whether there was one.
  template <class Dst>
  bool deliver(int mb, Payload payload, Dst dst);
  // The communicator of a message to (sending) or from `peer` (global rank).
  DeviceCommunicator& channel(Payload payload, bool sending, int peer) const;

  int device_;
  OpProfiler* kernel_profiler_;
  std::unique_ptr<DeviceCommunicator> shard_rs_comm_;  // the shard group's reduce-scatters
  // pp > 1, the channels of this rank: activations to the next pipeline rank and from the previous one,
  // their gradients to the previous and from the next (rank 0 of each channel sends, rank 1 receives).
  std::unique_ptr<DeviceCommunicator> act_send_, act_recv_, grad_send_, grad_recv_;
  std::array<cudaStream_t, kStreamCount> streams_{};
  std::vector<cudaEvent_t> op_done_;  // per op id of the step program
  cudaEvent_t step_start_ = nullptr;
  cudaStream_t current_ = nullptr;    // the stream of the op being issued (the units' policy reads it)
  std::string current_op_;            // and its name, for the watchdog
  std::unique_ptr<GemmContext> gemm_;
  CudaModelComm model_comm_;  // the models' tp collectives (tp > 1); before models_, which keep a pointer
  std::unique_ptr<const LoraLayout> lora_;   // LoRA plans only; before model_options_, which points to it
  std::unique_ptr<CudaAdaptersT<T>> adapters_;   // LoRA plans only
  CudaModelOptions model_options_;
  MicroBatchPool<CudaModelT<T>> models_;
  struct Inbound {
    T* staging = nullptr;     // stream-ordered, freed on the compute stream after the copy
    cudaEvent_t done = nullptr;  // recorded on the receive's stream after it
  };
  std::map<std::pair<int, int>, Inbound> inbox_;  // by (micro-batch, payload): received, not delivered
  DeviceBuffer<float> losses_;       // [grad_accum] mean loss per micro-batch of the step
  int losses_written_ = 0;
  DeviceBuffer<int> non_finite_;     // [units] flags since zero_grad_shards
  DeviceBuffer<int> found_inf_;      // [1] the unscale pass's inf/NaN flag
  DeviceBuffer<double> sq_sum_, sq_scratch_;
  bool sq_summing_ = false;          // add_sum_squares ran since take_sum_squares
  DeviceBuffer<float> host_reduce_;  // all_reduce_host staging
};

// The backend of plan `rp` on CUDA device `device`: T = f16 for fp16 plans, bf16 otherwise.
std::unique_ptr<RankBackend> make_cuda_rank_backend(const RuntimeProgram& rp, std::unique_ptr<DeviceCommunicator> world,
                                                    int device, OpProfiler* kernel_profiler);

}  // namespace fsdpx::cuda
