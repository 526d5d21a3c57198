// executor/cpu_backend/cpu_rank_backend.h — the CPU reference RankBackend: the fp32 model of
// executor/model with its hand-written backward (one model per micro-batch in flight,
// micro_batch_models.h), one FsdpUnit (model/fsdp_unit.h over host_unit_device.h) per plan unit of the rank's pipeline stages (fp32 masters,
// moments, accumulators and unsharded buffers on the host) and host communicators (the world's and the
// groups split from it: dp_shard, dp_replicate, under tensor or context parallelism the model's tp and
// cp groups and the data-parallel groups spanning cp, under pipeline parallelism the stage's dp_all and
// across pipeline ranks the groups of one mesh point). With a tied head across stages the last stage
// keeps a copy of the embedding's unit, laid out alike, whose gradient is summed with the first stage's
// (all_reduce_tied) so both take the same optimizer steps (Megatron-LM's embedding group). Synchronous:
// every method has finished when it returns (but a send, which finish_sends awaits), so begin_op/end_op
// and synchronize do nothing. Leaves out
// low precision: the CPU computes and communicates in fp32 (an fp16 plan rounds the units' unsharded
// parameters and gradients to fp16 values, host_unit_device.h).
#pragma once

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "executor/comm/communicator.h"
#include "executor/model/fsdp_unit.h"
#include "executor/model/op_profiler.h"
#include "executor/cpu_backend/host_unit_device.h"
#include "executor/cpu_backend/micro_batch_models.h"
#include "executor/runtime/model_skeleton.h"

namespace fsdpx {

using FsdpUnit = FsdpUnitT<HostUnitDevice>;

// The rank skeleton (rank_skeleton.h: groups, units, their all-gathers and reductions; model_skeleton.h:
// the segments' passes and sends) over host communicators, FsdpUnits and fp32 Transformers; the rest below.
class CpuRankBackend final : public ModelSkeleton<FsdpUnit, Communicator, Transformer<float>, float> {
  using Model = Transformer<float>;

 public:
  // `world`: this rank's communicator over all ranks; `kernel_profiler` may be null.
  CpuRankBackend(const RuntimeProgram& rp, std::unique_ptr<Communicator> world, OpProfiler* kernel_profiler);

  void init_params(std::uint64_t seed) override;
  // The last stage reads the shape of a tied table's unit from its copy (load_state).
  UnitShardState unit_state(int unit) const override { return units_.state_of(unit).download(); }

  void begin_op(int, const Op&) override {}
  void end_op(int, const Op&) override {}

  void set_micro_batch(int mb, const std::int32_t* tokens, const std::int32_t* targets) override {
    models_.at(mb).set_batch(tokens, targets);
  }
  void recv(Payload payload, int segment, int mb, int peer, int tag) override;
  void finish_sends() override { world_->wait_sends(); }
  std::vector<double> take_losses() override;
  std::vector<IssuedCollective> take_model_collectives() override { return model_comm_.take_issued(); }

  int first_non_finite_unit() override { return first_non_finite_unit_; }
  void all_reduce_host(double* buf, int count, MeshGroup group) override { comm(group).all_reduce(buf, count); }
  AdapterState adapter_state() const override { return adapters_; }
  void load_adapter_state(const AdapterState& s) override;

  void synchronize() override {}

 private:
  std::unique_ptr<Communicator> split_world(int color, int key, const std::string&) override {
    return world_->split(color, key);
  }
  void connect_device() override {
    model_comm_.set_groups(tp_comm_.get(), cp_comm_.get());
    model_comm_.set_ep_group(ep_comm_.get());
  }
  void load_unit(FsdpUnit& u, const UnitShardState& s) override { u.upload(s); }
  void finish_unit_reduction(FsdpUnit& u, int unit) override {
    int non_finite = 0;
    u.finish_reduction(&non_finite);
    if (non_finite) note_non_finite(unit);
  }
  void adamw_adapters(const OptimizerSettings& o, const AdamWStep& s) override;
  float* adapter_grads() override { return lora_ ? adapter_grads_.data() : nullptr; }
  std::int64_t adapter_numel() const override { return std::int64_t(adapter_grads_.size()); }
  void all_reduce_shard(Communicator& c, float* g, std::int64_t n) override { c.all_reduce(g, n); }
  void zero_shard(float* g, std::int64_t n) override { std::fill(g, g + n, 0.0f); }
  void round_to_fp16(float* g, std::int64_t n) override;
  void unscale_shard(float* g, std::int64_t n, float inv_scale) override;
  bool take_found_inf() override { return std::exchange(found_inf_, false); }
  void add_sum_squares(const float* g, std::int64_t n) override;
  double take_sum_squares() override { return std::exchange(sq_sum_, 0.0); }
  void flag_non_finite(float* g, std::int64_t n, int unit) override;
  void clear_non_finite() override { first_non_finite_unit_ = -1; }
  void note_non_finite(int unit) {
    if (first_non_finite_unit_ < 0) first_non_finite_unit_ = unit;
  }
  // The model half (model_skeleton.h): host passes.
  MicroBatchPool<Model>& models() override { return models_; }
  HostStream pass_stream() const override { return {}; }
  void keep_loss(Model& model) override { losses_.push_back(double(model.loss())); }
  const float* adapter_params() override { return adapters_.params.data(); }
  void post_send(const float* data, Payload, int peer, int tag) override {
    world_->post_send(data, std::int64_t(message_.size()), peer, tag);
  }

  ModelComm model_comm_;  // before models_, which keep a pointer
  std::unique_ptr<const LoraLayout> lora_;  // LoRA plans only; before models_, which keep a pointer
  AdapterState adapters_;
  std::vector<float> adapter_grads_;
  MicroBatchModels models_;
  std::vector<float> message_;                     // [micro_batch·seq, hidden] a received tensor
  std::vector<double> losses_;         // per micro-batch since take_losses
  int first_non_finite_unit_ = -1;     // since zero_grad_shards
  bool found_inf_ = false;             // since take_found_inf
  double sq_sum_ = 0;                  // since take_sum_squares
};

}  // namespace fsdpx
