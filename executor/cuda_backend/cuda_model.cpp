// executor/cuda_backend/cuda_model.cpp — the device half of the CUDA model: its buffers (only for the
// modules it runs; the split backward's keeps), RoPE tables and cp row maps uploaded once, the blocks'
// contexts (LoRA's adapters, the attention kernel), the ends' batch and loss slot, and the bytes each
// module keeps. The modules run through the shared driver (executor/model/model_driver.h) over
// cuda_model_policy.h, step for step as the CPU Transformer; profiled kernel groups carry the CPU
// model's names and modules.
#include "executor/cuda_backend/cuda_model.h"

#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/model/rope_table.h"
#include "executor/cuda_backend/cuda_model_policy.h"
#include "executor/model/context_positions.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/cuda_backend/cuda_moe_mlp.h"

namespace fsdpx::cuda {
namespace {

// The rank's tokens of a micro-batch: all of them, or with cp > 1 its share (batch and seq checked by
// the driver).
std::int64_t checked_tokens(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, int cp) {
  FSDP_CHECK(spec.is_mla() || (spec.head_dim % 32 == 0 && spec.head_dim >= 32 && spec.head_dim <= 128),
             fmt::format("CudaModel: flash attention needs head_dim in {{32, 64, 96, 128}}, not {}", spec.head_dim));
  FSDP_CHECK(spec.kv_heads > 0 && spec.heads % spec.kv_heads == 0, "CudaModel: heads must be a multiple of kv_heads");
  return batch * seq / cp;
}

// Blocking upload on a private stream: a plain cudaMemcpy from pageable memory may return before its DMA
// lands, and nothing would order it before kernels on the caller's (possibly non-blocking) streams.
template <class E>
DeviceBuffer<E> upload(const std::vector<E>& host) {
  DeviceBuffer<E> d(std::int64_t(host.size()));
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMemcpyAsync(d.get(), host.data(), std::size_t(d.bytes()), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  CUDA_CHECK(cudaStreamDestroy(s));
  return d;
}

// What the tensor- and context-parallel paths run for now (cuda_model.h CudaModelOptions::parallel); the
// runtime refuses the other plans first (core/backend_capabilities.cpp).
template <class T>
void check_model_parallel(const ModelSpec& spec, const CudaModelOptions& o, const BlockDims& d) {
  const ModelParallel& par = o.parallel;
  if (!par.any()) return;
  FSDP_CHECK(o.comm != nullptr, "CudaModel: tensor or context parallelism needs a CudaModelComm");
  FSDP_CHECK((!std::is_same_v<T, f16>), "CudaModel: tensor and context parallelism sum bf16 activations, not fp16");
  FSDP_CHECK(spec.bias == LinearBias::none && spec.arch == Arch::llama && !d.grouped_qkv() && !o.lora,
             "CudaModel: tp/cp run llama blocks without biases, with kv_heads >= tp, without LoRA");
  FSDP_CHECK(spec.vocab % par.tp == 0, "CudaModel: the vocabulary must split evenly over tp");
}

// Per row of the cp ranks' all-gathered K/V [cp, B, T] its row in sequence order [B, T_kv]
// (executor/model/context_parallel.cpp's reorder).
std::vector<std::int64_t> context_rows(std::int64_t batch, std::int64_t seq, int cp) {
  std::vector<std::int64_t> rows;
  for (int r = 0; r < cp; ++r) {
    const std::vector<std::int64_t> pos = context_positions(seq, cp, r);
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t p : pos) rows.push_back(b * seq + p);
  }
  return rows;
}

}  // namespace

template <class T>
CudaModelT<T>::CudaModelT(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, CudaModelOptions opts,
                          GemmContext& gemm)
    : Base("CudaModel", spec, batch, seq, std::move(opts)),
      gemm_(&gemm),
      batch_(checked_tokens(spec, batch, seq, opts_.parallel.cp), spec.vocab) {
  FSDP_CHECK(opts_.modules.empty() || std::int64_t(opts_.modules.size()) == this->layout().num_modules(),
             "CudaModel: need one flag per module");
  FSDP_CHECK(!opts_.lora || !opts_.split_backward, "CudaModel: LoRA runs without zero bubble's split backward");
  FSDP_CHECK(!opts_.fp8, "CudaModel: fp8 training runs on the CPU backend only");
  check_model_parallel<T>(spec, opts_, dims_);
  const ModelParallel& par = opts_.parallel;
  if (spec.arch == Arch::llama) {  // latent attention rotates its qk_rope_head_dim part (cuda_mla_attention.h)
    const std::int64_t width = spec.is_mla() ? spec.mla.qk_rope_head_dim : spec.head_dim;
    const RopeTable<float> rope = make_rope_table<float>(positions_, width, spec.rope_theta, spec.rope_scaling);
    rope_cos_ = upload(rope.cos), rope_sin_ = upload(rope.sin);
  }
  if (par.cp > 1) q_pos_ = upload(positions_), cp_rows_ = upload(context_rows(batch, seq, par.cp));
  allocate_activations();
}

// Buffers of the modules this model runs: resid_[k] is module k's output and module k+1's input.
template <class T>
void CudaModelT<T>::allocate_activations() {
  const std::int64_t n = dims_.n, nc = dims_.n_local * dims_.c, layers = spec_.layers;
  const int fn = this->layout().final_norm_index(), head = this->layout().head_index();
  const bool split = opts_.split_backward;
  const std::int64_t lora_u = lora_saved_elems(opts_.lora, n);
  resid_.resize(std::size_t(layers + 1));
  for (int k = 0; k <= int(layers); ++k)
    if (runs(k) || runs(k + 1)) resid_[std::size_t(k)] = DeviceBuffer<T>(nc);
  acts_.resize(std::size_t(layers));
  if (split) kept_.resize(std::size_t(layers));
  bool any_recompute = false, any_block = false;
  for (std::int64_t i = 0; i < layers; ++i) {
    if (!runs(int(i) + 1)) continue;
    any_block = true;
    if (drv_.recomputes(i)) any_recompute = true;
    if (!drv_.recomputes(i) || split) acts_[std::size_t(i)].allocate(dims_, lora_u);
    if (split) kept_[std::size_t(i)].allocate(dims_);
  }
  if (any_recompute) recompute_acts_.allocate(dims_, lora_u), recompute_out_ = DeviceBuffer<T>(nc);
  if (any_block) this->allocate_host_block_parts();
  if (any_block || runs(fn))
    scratch_.allocate(dims_, opts_.parallel.tp, spec_.bias != LinearBias::none, opts_.lora ? opts_.lora->rank : 0);
  if (runs(fn) || runs(head)) {
    lnf_ = DeviceBuffer<T>(n * dims_.c), dlnf_ = DeviceBuffer<T>(n * dims_.c);
    lnf_mean_ = DeviceBuffer<float>(dims_.layernorm ? n : 0), lnf_rstd_ = DeviceBuffer<float>(n);
  }
  if (runs(head)) {
    logits_ = DeviceBuffer<T>(n * this->v_local_);
    losses_ = DeviceBuffer<float>(n), loss_scratch_ = DeviceBuffer<float>(1);
    if (opts_.parallel.any()) ce_stats_ = DeviceBuffer<float>(opts_.parallel.tp * n * 3);
  }
  if (split && runs(fn)) lnf_keep_ = DeviceBuffer<float>(2 * dims_.c);
  dres_ = DeviceBuffer<T>(nc);
  if (opts_.parallel.sp() && runs(0)) emb_ = DeviceBuffer<T>(n * dims_.c);
  if (opts_.parallel.sp()) replicated_.allocate(this->layout());
}

template <class T>
bool CudaModelT<T>::runs(int module) const {
  return module >= 0 && module < this->layout().num_modules() &&
         (opts_.modules.empty() || opts_.modules[std::size_t(module)]);
}

// A block's activations for its backward: the shared recompute buffers unless a split backward keeps them.
template <class T>
CudaBlockActs<T>& CudaModelT<T>::backward_acts(std::int64_t block, GradPass) {
  return drv_.recomputes(block) && !opts_.split_backward ? recompute_acts_ : acts_[std::size_t(block)];
}

template <class T>
CudaBlockWeightGrads<T>* CudaModelT<T>::weight_inputs(std::int64_t block, GradPass pass) {
  FSDP_CHECK(pass == GradPass::all || opts_.split_backward,
             "CudaModel: an input pass needs CudaModelOptions::split_backward");
  return pass == GradPass::all ? nullptr : &kept_[std::size_t(block)];
}

// A block's context carries its part of the adapters (modules 1..L are blocks 0..L-1).
template <class T>
CudaBlockContext<T> CudaModelT<T>::context(cudaStream_t stream, int module) {
  return CudaBlockContext<T>{this->template context_base<CudaLoraBlock<T>>(module), rope_cos_.get(),
                             rope_sin_.get(), gemm_, stream, q_pos_.get(), cp_rows_.get(),
                             opts_.tensor_core_attention};
}

// The ends' buffers and batch (executor/model/ends_sequence.h).
template <class T>
typename CudaModelPolicy<T>::Ends CudaModelT<T>::ends(int m, GradPass pass) {
  FSDP_CHECK(m != this->layout().head_index() || loss_out_ != nullptr,
             "CudaModel: set_loss_output before the head's forward");
  FSDP_CHECK(pass == GradPass::all || opts_.split_backward,
             "CudaModel: an input pass needs CudaModelOptions::split_backward");
  typename CudaModelPolicy<T>::Ends e = this->ends_buffers();
  e.norm_keep = lnf_keep_.get();
  e.batch = CudaEndsBatch{&batch_, losses_.get(), loss_out_, loss_scratch_.get(), &moe_aux_};
  return e;
}

template <class T>
void CudaModelT<T>::set_batch(const std::int32_t* tokens, const std::int32_t* targets, cudaStream_t stream) {
  if (opts_.parallel.cp > 1)  // the rank's tokens at their positions, as the CPU Transformer picks them
    batch_.upload(this->rank_tokens(tokens).data(), this->rank_tokens(targets).data(), stream);
  else
    batch_.upload(tokens, targets, stream);
  this->start_batch();
}

template <class T>
void CudaModelT<T>::set_loss_output(float* loss_device) { loss_out_ = loss_device; }


template <class T>
std::int64_t CudaModelT<T>::own_saved_bytes(int m) const {
  return m == this->layout().head_index() ? losses_.bytes() : 0;
}

template <class T>
std::int64_t CudaModelT<T>::working_bytes() const {
  return rope_cos_.bytes() + rope_sin_.bytes() + q_pos_.bytes() + cp_rows_.bytes() + batch_.device_bytes() +
         emb_.bytes() + replicated_.bytes() + recompute_acts_.bytes() + recompute_out_.bytes() + scratch_.bytes() +
         loss_scratch_.bytes() + dres_.bytes() + dlnf_.bytes();
}

}  // namespace fsdpx::cuda

namespace fsdpx {
#define FSDPX_CUDA_MODEL_DEFINE(T)                                         \
  template class ModelDriver<cuda::CudaModelT<T>, cuda::CudaModelPolicy<T>>; \
  template class cuda::CudaModelT<T>;
FSDPX_CUDA_MODEL_INSTANTIATE(FSDPX_CUDA_MODEL_DEFINE)
#undef FSDPX_CUDA_MODEL_DEFINE
}  // namespace fsdpx
