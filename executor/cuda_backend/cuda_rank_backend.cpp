// executor/cuda_backend/cuda_rank_backend.cpp — the CUDA backend of one rank (see cuda_rank_backend.h).
#include "executor/cuda_backend/cuda_rank_backend.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/cuda/adamw.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/cuda_backend/grad_scaler_kernels.h"
#include "executor/model/init.h"
#include "executor/runtime/module_pointers.h"

namespace fsdpx::cuda {

namespace {

constexpr int kHostReduceElems = kMaxHostReduceCount;

}  // namespace

CudaRankBackend::CudaRankBackend(const RuntimeProgram& rp, std::unique_ptr<DeviceCommunicator> world, int device,
                                 OpProfiler* kernel_profiler)
    : rp_(rp), device_(device), world_(std::move(world)) {
  use_device();
  const RankShard at = rank_shard(rp, world_->rank());
  shard_index_ = at.shard_index;
  replica_index_ = at.replica_index;
  for (cudaStream_t& s : streams_) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  op_done_.resize(rp.program.roles[0].ops.size());
  for (cudaEvent_t& e : op_done_) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&step_start_, cudaEventDisableTiming));
  current_ = stream(StreamKind::compute);
  gemm_ = std::make_unique<GemmContext>();
  model_ = std::make_unique<CudaModel>(rp.plan.model, rp.plan.training.micro_batch, rp.plan.training.seq,
                                       CudaModelOptions{rp.plan.recompute, kernel_profiler}, *gemm_);
  const DType reduce = rp.plan.precision.reduce == fsdpx::DType::bf16 ? DType::bf16 : DType::f32;
  for (std::size_t u = 0; u < rp.flats.size(); ++u)
    units_.push_back(std::make_unique<CudaUnit>(rp.flats[u], at.unit_shard, replicated_params(rp, int(u)), reduce, &mem_));
  losses_ = DeviceBuffer<float>(std::max<std::int64_t>(1, rp.grad_accum));
  non_finite_ = DeviceBuffer<int>(std::int64_t(units_.size()));
  CUDA_CHECK(cudaMemset(non_finite_.get(), 0, units_.size() * sizeof(int)));
  found_inf_ = DeviceBuffer<int>(1);
  sq_sum_ = DeviceBuffer<double>(1);
  sq_scratch_ = DeviceBuffer<double>(sum_squares_scratch_elems());
  host_reduce_ = DeviceBuffer<float>(kHostReduceElems);
  mem_.alloc(MemCategory::transient, double(model_->working_bytes()));
}

CudaRankBackend::~CudaRankBackend() {
  use_device();
  for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
  units_.clear();
  for (cudaEvent_t e : op_done_) cudaEventDestroy(e);
  cudaEventDestroy(step_start_);
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
}

void CudaRankBackend::use_device() const { CUDA_CHECK(cudaSetDevice(device_)); }

void CudaRankBackend::connect() {
  use_device();
  shard_comm_ = world_->split(replica_index_, shard_index_, "dp_shard");
  shard_rs_comm_ = shard_comm_->dup("dp_shard.rs");  // reduce-scatters beside all-gathers
  replica_comm_ = world_->split(shard_index_, replica_index_, "dp_replicate");
}

DeviceCommunicator& CudaRankBackend::comm(MeshGroup group) {
  return group_communicator(group, GroupCommunicators<DeviceCommunicator>{world_.get(), shard_comm_.get(),
                                                                          replica_comm_.get()});
}

void CudaRankBackend::init_params(std::uint64_t seed) {
  use_device();
  for (const auto& u : units_) {
    UnitShardState s;
    const std::int64_t n = u->flat().shard_numel;
    s.unit_numel = u->flat().numel;
    s.shard_offset = u->shard_offset();
    s.params.assign(std::size_t(n), 0.0f);
    s.exp_avg.assign(std::size_t(n), 0.0f);
    s.exp_avg_sq.assign(std::size_t(n), 0.0f);
    init_unit_range(rp_.layout, u->flat(), seed, s.shard_offset, s.shard_offset + n, s.params.data());
    u->upload(s, stream(StreamKind::compute));
  }
}

UnitShardState CudaRankBackend::unit_state(int unit) const {
  use_device();
  for (cudaStream_t s : streams_) CUDA_CHECK(cudaStreamSynchronize(s));
  return units_[std::size_t(unit)]->download(stream(StreamKind::compute));
}

void CudaRankBackend::load_unit_state(int unit, const UnitShardState& s) {
  use_device();
  for (cudaStream_t st : streams_) CUDA_CHECK(cudaStreamSynchronize(st));
  units_[std::size_t(unit)]->upload(s, stream(StreamKind::compute));
}

void CudaRankBackend::copy_masters_to_replicas() {
  use_device();
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (master_is_replica(rp_, int(u))) units_[u]->copy_master_to_replica(current_);
}

void CudaRankBackend::begin_op(int id, const Op& op) {
  if (id == 0) {  // the step starts behind the previous optimizer update on every stream
    use_device();
    CUDA_CHECK(cudaEventRecord(step_start_, stream(StreamKind::compute)));
    for (cudaStream_t s : streams_)
      if (s != stream(StreamKind::compute)) CUDA_CHECK(cudaStreamWaitEvent(s, step_start_, 0));
  }
  current_ = stream(op.stream);
  current_op_ = op.name;
  const auto& ops = rp_.program.roles[0].ops;
  for (int dep : op.deps)
    if (ops[std::size_t(dep)].stream != op.stream) CUDA_CHECK(cudaStreamWaitEvent(current_, op_done_[std::size_t(dep)], 0));
}

void CudaRankBackend::end_op(int id, const Op&) { CUDA_CHECK(cudaEventRecord(op_done_[std::size_t(id)], current_)); }

void CudaRankBackend::gather(int unit, MeshGroup group, bool drop_kept) {
  CudaUnit& u = *units_[std::size_t(unit)];
  if (drop_kept) u.drop_kept_copy();
  u.gather(comm(group), current_, current_op_);
}

void CudaRankBackend::release(int unit, double kept_bytes) { units_[std::size_t(unit)]->release(kept_bytes, current_); }

void CudaRankBackend::set_micro_batch(int, const std::int32_t* tokens, const std::int32_t* targets) {
  use_device();
  model_->set_batch(tokens, targets, current_);
}

void CudaRankBackend::forward(int segment, int) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  const int last = seg.first_module + seg.module_count - 1;
  if (last == rp_.layout.head_index()) {
    FSDP_CHECK(losses_written_ < losses_.size(), "CudaRankBackend: more micro-batches than grad_accum");
    model_->set_loss_output(losses_.get() + losses_written_);
  }
  const std::vector<const bf16*> p = live_module_params(units_, rp_.layout.num_modules());
  for (int m = seg.first_module; m <= last; ++m) {
    model_->forward_module(m, p, current_);
    mem_.alloc(MemCategory::activations, double(model_->saved_bytes(m)));
  }
  if (last == rp_.layout.head_index()) ++losses_written_;
}

void CudaRankBackend::backward(int segment, int unit, int) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  const std::vector<const bf16*> p = live_module_params(units_, rp_.layout.num_modules());
  CudaUnit& u = *units_[std::size_t(unit)];
  const std::vector<float*> g = unit_module_grads<float*>(u.flat(), rp_.layout.num_modules(),
                                                          [&](int k) { return u.module_grads(k, current_); });
  for (int m = seg.first_module + seg.module_count - 1; m >= seg.first_module; --m) {
    model_->backward_module(m, p, g, current_);
    mem_.free(MemCategory::activations, double(model_->saved_bytes(m)));
  }
}

// Pipeline parallelism: make_runtime_program refuses pp > 1 for CUDA, so a program never asks for these.
void CudaRankBackend::backward_input(int, int) { FSDP_CHECK(false, "CudaRankBackend: no pipeline parallelism"); }
void CudaRankBackend::backward_weight(int, int, int) { FSDP_CHECK(false, "CudaRankBackend: no pipeline parallelism"); }
void CudaRankBackend::send(Payload, int, int, int, int) { FSDP_CHECK(false, "CudaRankBackend: no pipeline parallelism"); }
void CudaRankBackend::recv(Payload, int, int, int, int) { FSDP_CHECK(false, "CudaRankBackend: no pipeline parallelism"); }
void CudaRankBackend::all_reduce_tied(int) { FSDP_CHECK(false, "CudaRankBackend: no pipeline parallelism"); }

std::vector<double> CudaRankBackend::take_losses() {
  use_device();
  std::vector<float> host(static_cast<std::size_t>(losses_written_));
  CUDA_CHECK(cudaStreamSynchronize(stream(StreamKind::compute)));
  world_->throw_if_aborted();  // an aborted collective leaves garbage behind
  if (!host.empty())
    CUDA_CHECK(cudaMemcpy(host.data(), losses_.get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  losses_written_ = 0;
  return std::vector<double>(host.begin(), host.end());
}

void CudaRankBackend::reduce_scatter(int unit, MeshGroup group) {
  DeviceCommunicator& c = group == MeshGroup::dp_shard ? *shard_rs_comm_ : comm(group);
  units_[std::size_t(unit)]->reduce_scatter(c, current_, current_op_);
}

void CudaRankBackend::all_reduce_reduced(int unit, MeshGroup group) {
  units_[std::size_t(unit)]->all_reduce_reduced(comm(group), current_, current_op_);
}

void CudaRankBackend::all_reduce_full(int unit, MeshGroup group) {
  units_[std::size_t(unit)]->all_reduce_full(comm(group), current_, current_op_);
}

void CudaRankBackend::finish_reduction(int unit) {
  units_[std::size_t(unit)]->finish_reduction(non_finite_.get() + unit, current_);
}

int CudaRankBackend::first_non_finite_unit() {
  use_device();
  std::vector<int> flags(units_.size());
  CUDA_CHECK(cudaStreamSynchronize(current_));
  CUDA_CHECK(cudaMemcpy(flags.data(), non_finite_.get(), flags.size() * sizeof(int), cudaMemcpyDeviceToHost));
  const auto it = std::find(flags.begin(), flags.end(), 1);
  return it == flags.end() ? -1 : int(it - flags.begin());
}

// fp16 loss scaling: every unit's accumulated shard unscaled in place, one flag for all, read back.
bool CudaRankBackend::unscale_grads(float inv_scale) {
  use_device();
  CUDA_CHECK(cudaMemsetAsync(found_inf_.get(), 0, sizeof(int), current_));
  for (const auto& u : units_)
    unscale_check_finite(u->grad_shard(), u->flat().shard_numel, inv_scale, found_inf_.get(), current_);
  int found = 0;
  CUDA_CHECK(cudaMemcpyAsync(&found, found_inf_.get(), sizeof(int), cudaMemcpyDeviceToHost, current_));
  CUDA_CHECK(cudaStreamSynchronize(current_));
  world_->throw_if_aborted();
  return found != 0;
}

double CudaRankBackend::grad_sq_sum() {
  use_device();
  for (std::size_t u = 0; u < units_.size(); ++u)
    sum_squares(units_[u]->grad_shard(), units_[u]->flat().shard_numel, sq_scratch_.get(), sq_sum_.get(), u > 0,
                current_);
  double sum = 0;
  CUDA_CHECK(cudaMemcpyAsync(&sum, sq_sum_.get(), sizeof(double), cudaMemcpyDeviceToHost, current_));
  CUDA_CHECK(cudaStreamSynchronize(current_));
  world_->throw_if_aborted();
  return units_.empty() ? 0.0 : sum;
}

// A handful of values through the device communicator (NCCL has no host collectives), summed in fp32:
// the gradient norm's Σ g², the non-finite flag and the loss, which need no more than fp32 on bf16 runs.
void CudaRankBackend::all_reduce_host(double* buf, int count, MeshGroup group) {
  FSDP_CHECK(count <= kHostReduceElems, "CudaRankBackend: host all-reduce too large");
  use_device();
  float host[kHostReduceElems];
  std::copy(buf, buf + count, host);
  const auto bytes = std::size_t(count) * sizeof(float);
  CUDA_CHECK(cudaMemcpyAsync(host_reduce_.get(), host, bytes, cudaMemcpyHostToDevice, current_));
  comm(group).all_reduce(host_reduce_.get(), host_reduce_.get(), count, DType::f32, current_, current_op_);
  CUDA_CHECK(cudaMemcpyAsync(host, host_reduce_.get(), bytes, cudaMemcpyDeviceToHost, current_));
  CUDA_CHECK(cudaStreamSynchronize(current_));
  world_->throw_if_aborted();
  std::copy(host, host + count, buf);
}

void CudaRankBackend::adamw(const OptimizerSettings& o, const AdamWStep& s) {
  const AdamWArgs a{float(s.lr), float(o.beta1), float(o.beta2), float(o.eps), float(o.weight_decay), s.t,
                    float(s.grad_scale)};
  for (const auto& u : units_)
    adamw_update(a, u->master(), u->exp_avg(), u->exp_avg_sq(), u->grad_shard(), u->master_bf16(),
                 u->flat().shard_numel, current_);
}

void CudaRankBackend::zero_grad_shards() {
  for (const auto& u : units_) u->zero_grad_shard(current_);
  CUDA_CHECK(cudaMemsetAsync(non_finite_.get(), 0, units_.size() * sizeof(int), current_));
}

void CudaRankBackend::synchronize() {
  use_device();
  for (cudaStream_t s : streams_) CUDA_CHECK(cudaStreamSynchronize(s));
  world_->throw_if_aborted();
}

}  // namespace fsdpx::cuda
