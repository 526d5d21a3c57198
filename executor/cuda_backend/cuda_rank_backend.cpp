// executor/cuda_backend/cuda_rank_backend.cpp — the CUDA backend of one rank (see cuda_rank_backend.h):
// the device half of the rank skeleton (rank_skeleton.h: each unit op on the current op's stream, the
// reduce-scatters' communicator and the message channels), stream ordering, and the kernels of the
// skeleton's gradient bookkeeping and optimizer; the model ops are in cuda_rank_backend_model.cpp.
#include "executor/cuda_backend/cuda_rank_backend.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/adamw.h"
#include "executor/cuda/cast.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/device.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/cuda_backend/grad_scaler_kernels.h"
#include "executor/model/initial_state.h"
#include "executor/model/lora_layout.h"
#include "executor/model/rank_fsdp_units.h"

namespace fsdpx::cuda {

namespace {
// Values all_reduce_host stages per device collective: the per-step calls carry 1-3 values; the state
// sums of multi-process runs (Trainer::sum_words) go through in pieces of this many.
constexpr int kHostReduceStageCount = 4096;
}  // namespace

template <class T>
CudaRankBackendT<T>::CudaRankBackendT(const RuntimeProgram& rp, std::unique_ptr<DeviceCommunicator> world, int device,
                                 OpProfiler* kernel_profiler)
    : Base(rp, std::move(world)), device_(device), kernel_profiler_(kernel_profiler),
      model_comm_(dtype_bytes(rp.settings.precision.param)),
      models_([this] { return make_model(); }) {
  use_device();
  configure_default_mem_pool(device_);  // the units' and messages' cudaMallocAsync memory stays mapped
  for (cudaStream_t& s : streams_) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  op_done_.resize(rp.program.roles[std::size_t(role_)].ops.size());
  for (cudaEvent_t& e : op_done_) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&step_start_, cudaEventDisableTiming));
  current_ = stream(StreamKind::compute);
  gemm_ = std::make_unique<GemmContext>();
  if (rp.settings.lora) {
    lora_ = std::make_unique<const LoraLayout>(make_lora_layout(rp.settings.model, *rp.settings.lora));
    adapters_ = std::make_unique<CudaAdaptersT<T>>(*lora_, &mem_);
  }
  model_options_ = model_options(rp, role_, Base::par_, &model_comm_, kernel_profiler, lora_.get());
  const auto reduce = rp.settings.precision.reduce == fsdpx::DType::bf16 ? fsdpx::DType::bf16 : fsdpx::DType::fp32;
  // Every unit call on the current op's stream; bytes counted in the plan's parameter dtype (cuda_unit.h).
  const CudaUnitDevice<T> unit_device{&current_, &current_op_, dtype_bytes(rp.settings.precision.param)};
  units_ = make_rank_units(rp, world_->rank(), role_, Base::par_, reduce, &mem_, unit_device);
  losses_ = DeviceBuffer<float>(std::max<std::int64_t>(1, rp.grad_accum));
  non_finite_ = DeviceBuffer<int>(std::int64_t(rp.flats.size()));
  CUDA_CHECK(cudaMemset(non_finite_.get(), 0, rp.flats.size() * sizeof(int)));
  found_inf_ = DeviceBuffer<int>(1);
  CUDA_CHECK(cudaMemset(found_inf_.get(), 0, sizeof(int)));
  sq_sum_ = DeviceBuffer<double>(1);
  sq_scratch_ = DeviceBuffer<double>(sum_squares_scratch_elems());
  host_reduce_ = DeviceBuffer<float>(kHostReduceStageCount);
  // cudaMemset runs on the legacy stream, which the non-blocking op streams do not wait for: the zeros
  // (non_finite_, the units' gradient accumulators) must land before the first op reads them.
  CUDA_CHECK(cudaDeviceSynchronize());
}

template <class T>
CudaRankBackendT<T>::~CudaRankBackendT() {
  use_device();
  for (auto& [key, in] : inbox_) {  // received, never delivered (a run that stopped early)
    cudaFreeAsync(in.staging, stream(StreamKind::compute));
    cudaEventDestroy(in.done);
  }
  for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
  units_.clear();
  for (cudaEvent_t e : op_done_) cudaEventDestroy(e);
  cudaEventDestroy(step_start_);
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
}

template <class T>
void CudaRankBackendT<T>::use_device() const { CUDA_CHECK(cudaSetDevice(device_)); }

// After the mesh groups (rank_skeleton.h): the reduce-scatters' own shard-group communicator and, under
// pipeline parallelism, the message channels. Channel r of a payload joins pipeline ranks r and r + 1
// (mod pp: interleaving wraps around) of a mesh point, its sender first; every other rank gets a group of
// its own, unused.
template <class T>
void CudaRankBackendT<T>::connect_device() {
  use_device();
  const MeshGroup shard = Base::shard_group();  // reduce-scatters beside all-gathers
  shard_rs_comm_ = Base::comm(shard).dup(fmt::format("{}.rs", group_kind_name(shard)));
  model_comm_.set_groups(Base::tp_comm_.get(), Base::cp_comm_.get());
  model_comm_.set_ep_group(Base::ep_comm_.get());
  const int pp = rp_.program.pp;
  for (int r = 0; pp > 1 && r < pp; ++r)
    for (bool activations : {true, false}) {
      const int next = (r + 1) % pp, sender = activations ? r : next;
      const bool member = role_ == r || role_ == next;
      const int color = member ? mesh_rank_ : rp_.program.mesh.size() + world_->rank();
      auto c = world_->split(color, role_ == sender ? 0 : 1, fmt::format("pp.{}.{}", activations ? "act" : "grad", r));
      if (!member) continue;
      auto& slot = activations ? (role_ == r ? act_send_ : act_recv_) : (role_ == next ? grad_send_ : grad_recv_);
      slot = std::move(c);
    }
}

// The shared initial states (executor/model/rank_fsdp_units.h, the CPU backend's values) through the
// loading hooks. On the rank's kernel pool (the trainer gives CUDA ranks one too): llama3.2-1b in seconds.
template <class T>
void CudaRankBackendT<T>::init_params(std::uint64_t seed) {
  load_initial_states(rp_, Base::par_, units_, seed,
                      [&](CudaUnitT<T>& u, const UnitShardState& s) { load_unit(u, s); });
  if (adapters_) load_adapter_state(initial_adapter_state(*lora_, seed));
}

template <class T>
void CudaRankBackendT<T>::sync_streams() const {
  use_device();
  for (cudaStream_t s : streams_) CUDA_CHECK(cudaStreamSynchronize(s));
}

template <class T>
UnitShardState CudaRankBackendT<T>::unit_state(int unit) const {
  sync_streams();
  return units_.state_of(unit).download();  // on the current stream, idle now
}

template <class T>
void CudaRankBackendT<T>::load_unit(CudaUnitT<T>& u, const UnitShardState& s) {
  sync_streams();
  u.upload(s);  // on the current stream, idle now
}

template <class T>
AdapterState CudaRankBackendT<T>::adapter_state() const {
  if (!adapters_) return {};
  sync_streams();
  return adapters_->download(stream(StreamKind::compute));
}

template <class T>
void CudaRankBackendT<T>::load_adapter_state(const AdapterState& s) {
  FSDP_CHECK(adapters_ != nullptr, "CudaRankBackend: adapter state for a plan without LoRA");
  sync_streams();
  adapters_->upload(s, stream(StreamKind::compute));
}

template <class T>
void CudaRankBackendT<T>::begin_op(int id, const Op& op) {
  if (id == 0) {  // the step starts behind the previous optimizer update on every stream
    use_device();
    CUDA_CHECK(cudaEventRecord(step_start_, stream(StreamKind::compute)));
    for (cudaStream_t s : streams_)
      if (s != stream(StreamKind::compute)) CUDA_CHECK(cudaStreamWaitEvent(s, step_start_, 0));
  }
  current_ = stream(op.stream);
  current_op_ = op.name;
  model_comm_.set_stream(current_, current_op_);  // the model's tp collectives run in its compute op
  const auto& ops = rp_.program.roles[std::size_t(role_)].ops;
  for (int dep : op.deps)
    if (ops[std::size_t(dep)].stream != op.stream) CUDA_CHECK(cudaStreamWaitEvent(current_, op_done_[std::size_t(dep)], 0));
}

template <class T>
void CudaRankBackendT<T>::end_op(int id, const Op&) { CUDA_CHECK(cudaEventRecord(op_done_[std::size_t(id)], current_)); }

template <class T>
int CudaRankBackendT<T>::first_non_finite_unit() {
  use_device();
  std::vector<int> flags(rp_.flats.size());
  read_back(flags.data(), non_finite_.get(), flags.size() * sizeof(int));
  const auto it = std::find(flags.begin(), flags.end(), 1);
  return it == flags.end() ? -1 : int(it - flags.begin());
}

template <class T>
void CudaRankBackendT<T>::read_back(void* host, const void* device, std::size_t n) {
  CUDA_CHECK(cudaMemcpyAsync(host, device, n, cudaMemcpyDeviceToHost, current_));
  CUDA_CHECK(cudaStreamSynchronize(current_));
  world_->throw_if_aborted();
}

template <class T>
void CudaRankBackendT<T>::zero_shard(float* g, std::int64_t n) {
  CUDA_CHECK(cudaMemsetAsync(g, 0, std::size_t(n) * sizeof(float), current_));
}

// The values an fp16 gradient holds (f16 plans; the float model of the emulated build computes in fp32).
template <class T>
void CudaRankBackendT<T>::round_to_fp16(float* g, std::int64_t n) {
  if constexpr (std::is_same_v<T, f16>) round_through_f16(g, n, current_);
}

template <class T>
void CudaRankBackendT<T>::unscale_shard(float* g, std::int64_t n, float inv_scale) {
  use_device();
  unscale_check_finite(g, n, inv_scale, found_inf_.get(), current_);
}

template <class T>
bool CudaRankBackendT<T>::take_found_inf() {
  int found = 0;
  read_back(&found, found_inf_.get(), sizeof(int));
  CUDA_CHECK(cudaMemsetAsync(found_inf_.get(), 0, sizeof(int), current_));
  return found != 0;
}

template <class T>
void CudaRankBackendT<T>::add_sum_squares(const float* g, std::int64_t n) {
  use_device();
  sum_squares(g, n, sq_scratch_.get(), sq_sum_.get(), sq_summing_, current_);
  sq_summing_ = true;
}

template <class T>
double CudaRankBackendT<T>::take_sum_squares() {
  if (!std::exchange(sq_summing_, false)) return 0.0;
  double sum = 0;
  read_back(&sum, sq_sum_.get(), sizeof(double));
  return sum;
}

// A non-finite value sets the unit's flag; an inv_scale of 1 leaves the values alone.
template <class T>
void CudaRankBackendT<T>::flag_non_finite(float* g, std::int64_t n, int unit) {
  unscale_check_finite(g, n, 1.0f, non_finite_.get() + unit, current_);
}

template <class T>
void CudaRankBackendT<T>::clear_non_finite() {
  CUDA_CHECK(cudaMemsetAsync(non_finite_.get(), 0, rp_.flats.size() * sizeof(int), current_));
}

// Values through the device communicator (NCCL has no host collectives), summed in fp32, in pieces of
// kHostReduceStageCount: the gradient norm's Σ g², the non-finite flag and the loss, which need no more than
// fp32 on bf16 and fp16 runs, and the 16-bit limbs of Trainer::sum_words, which fp32 adds exactly.
template <class T>
void CudaRankBackendT<T>::all_reduce_host(double* buf, int count, MeshGroup group) {
  FSDP_CHECK(count >= 0 && count <= kMaxHostReduceCount, "CudaRankBackend: host all-reduce too large");
  use_device();
  std::vector<float> host(std::size_t(std::min(count, kHostReduceStageCount)));
  for (int at = 0; at < count; at += kHostReduceStageCount) {
    const int n = std::min(kHostReduceStageCount, count - at);
    std::copy(buf + at, buf + at + n, host.begin());
    const auto bytes = std::size_t(n) * sizeof(float);
    CUDA_CHECK(cudaMemcpyAsync(host_reduce_.get(), host.data(), bytes, cudaMemcpyHostToDevice, current_));
    comm(group).all_reduce(host_reduce_.get(), host_reduce_.get(), n, DType::fp32, current_, current_op_);
    CUDA_CHECK(cudaMemcpyAsync(host.data(), host_reduce_.get(), bytes, cudaMemcpyDeviceToHost, current_));
    CUDA_CHECK(cudaStreamSynchronize(current_));
    world_->throw_if_aborted();
    std::copy(host.begin(), host.begin() + n, buf + at);
  }
}

template <class T>
void CudaRankBackendT<T>::adamw_adapters(const OptimizerSettings& o, const AdamWStep& s) {
  adapters_->adamw(adamw_args(o, s), current_);
}

template <class T>
void CudaRankBackendT<T>::synchronize() {
  use_device();
  for (cudaStream_t s : streams_) CUDA_CHECK(cudaStreamSynchronize(s));
  world_->throw_if_aborted();
}

template class CudaRankBackendT<bf16>;
template class CudaRankBackendT<f16>;
#if defined(FSDPX_CUDA_EMULATED)  // the float model of the emulated build (tests/cuda/emulated)
template class CudaRankBackendT<float>;
#endif

std::unique_ptr<RankBackend> make_cuda_rank_backend(const RuntimeProgram& rp, std::unique_ptr<DeviceCommunicator> world,
                                                    int device, OpProfiler* kernel_profiler) {
  if (rp.settings.precision.param == fsdpx::DType::fp16)
    return std::make_unique<CudaRankBackendT<f16>>(rp, std::move(world), device, kernel_profiler);
  return std::make_unique<CudaRankBackendT<bf16>>(rp, std::move(world), device, kernel_profiler);
}

}  // namespace fsdpx::cuda
