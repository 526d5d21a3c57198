// executor/cuda_backend/cuda_model_ends.cpp — the device model's embedding and LM head with its loss (see
// cuda_model.h): the fused lookup and classifier, or under tensor or context parallelism the
// vocabulary-parallel ones (executor/cuda/vocab_parallel.h) around the shared tp region's f and g, step
// for step executor/model/transformer.cpp. The rest of CudaModelT is cuda_model.cpp; each file
// instantiates the members it defines.
#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/cross_entropy.h"
#include "executor/cuda/embedding.h"
#include "executor/cuda/vocab_parallel.h"
#include "executor/cuda_backend/cuda_model.h"
#include "executor/cuda_backend/cuda_op_timer.h"

namespace fsdpx::cuda {

template <class T>
void CudaModelT<T>::embed_forward(std::span<const T* const> params, cudaStream_t stream) {
  const CudaScopedOp t(opts_.profiler, "embed", ParamLayout::embedding_index(), stream);
  if (opts_.parallel.any()) {  // the vocabulary-parallel lookup, summed over tp by g (vocab_parallel.h)
    T* partial = opts_.parallel.sp() ? emb_.get() : resid_[0].get();  // [N, C]
    vocab_embedding_forward(partial, batch_.tokens(), drv_.tensor(params, 0, "tok.weight"), v_first_, v_local_,
                            dims_.n, dims_.c, stream);
    return region().exit(partial, resid_[0].get());
  }
  embedding_forward(resid_[0].get(), batch_.tokens(), drv_.tensor(params, 0, "tok.weight"),
                    drv_.tensor(params, 0, "pos.weight"), dims_.b, dims_.t, dims_.c, stream);
}

template <class T>
void CudaModelT<T>::embed_backward(std::span<float* const> grads, cudaStream_t stream) {
  const CudaScopedOp t(opts_.profiler, "embed_dw", ParamLayout::embedding_index(), stream);
  if (opts_.parallel.any())
    return vocab_embedding_backward(drv_.tensor(grads, 0, "tok.weight"),
                                    region().exit_backward(static_cast<const T*>(dres_.get()), emb_.get()),
                                    batch_.tokens(), v_first_, v_local_, dims_.n, dims_.c, stream);
  embedding_backward(drv_.tensor(grads, 0, "tok.weight"), drv_.tensor(grads, 0, "pos.weight"), dres_.get(),
                     batch_.bucket_rows(), batch_.bucket_offsets(), batch_.bucket_positions(), batch_.unique_rows(),
                     dims_.b, dims_.t, dims_.c, stream);
}

template <class T>
void CudaModelT<T>::head_forward(std::span<const T* const> params, cudaStream_t stream) {
  const int m = layout().head_index();
  FSDP_CHECK(loss_out_ != nullptr, "CudaModel: set_loss_output before the head's forward");
  const T* w = spec_.tied_embeddings ? drv_.tensor(params, 0, "tok.weight") : drv_.tensor(params, m, "head.weight");
  const std::int64_t n = dims_.n, v = v_local_;
  region().enter(lnf_.get());  // f before the vocabulary-parallel head (gathers the tokens under SP)
  {
    const CudaScopedOp t(opts_.profiler, "lm_head", m, stream);
    matmul_forward(*gemm_, logits_.get(), GemmOut::operand, lnf_.get(), w, nullptr, n, dims_.c, v, false, stream);
  }
  const CudaScopedOp t(opts_.profiler, "loss", m, stream);
  if (opts_.parallel.any()) return vocab_parallel_loss(stream);
  fused_classifier(logits_.get(), losses_.get(), loss_out_, batch_.targets(), n, v, v, 1.0f, false, stream);
}

template <class T>
void CudaModelT<T>::head_backward(std::span<const T* const> params, std::span<float* const> grads,
                              cudaStream_t stream) {
  const int m = layout().head_index();
  const bool tied = spec_.tied_embeddings;
  const T* w = tied ? drv_.tensor(params, 0, "tok.weight") : drv_.tensor(params, m, "head.weight");
  const std::int64_t n = dims_.n, v = v_local_;
  // logits -> dlogits = (softmax − onehot)·dloss/N in place; the mean loss goes to our scratch so that the
  // caller's loss output is not written after the forward.
  {
    const CudaScopedOp t(opts_.profiler, "loss_bwd", m, stream);
    if (opts_.parallel.any())  // with cp > 1 the loss is the rank's share of the micro-batch's mean
      vocab_ce_backward(logits_.get(), ce_stats_.get(), batch_.targets(), opts_.parallel.tp, n, v, v_first_,
                        dloss_ / float(dims_.b * seq_), stream);
    else
      fused_classifier(logits_.get(), losses_.get(), loss_scratch_.get(), batch_.targets(), n, v, v, dloss_, true,
                       stream);
  }
  {
    const CudaScopedOp t(opts_.profiler, "lm_head_dx", m, stream);
    matmul_backward_dx(*gemm_, dlnf_.get(), GemmOut::operand, logits_.get(), w, n, dims_.c, v, false, stream);
  }
  region().enter_backward(dlnf_.get());  // f's backward before the vocabulary-parallel head
  // else the dlogits stay in logits_ for the weight pass; a frozen head (LoRA) has no weight gradient
  if (!grads.empty() && !opts_.lora) weight_pass(m, grads, stream);
}

// The mean cross-entropy over the whole vocabulary from every tp rank's statistics of its slice
// (vocab_parallel.h): one fp32 all-gather of [N, 3] per rank, combined in rank order.
template <class T>
void CudaModelT<T>::vocab_parallel_loss(cudaStream_t stream) {
  const std::int64_t n = dims_.n;
  float* mine = ce_stats_.get() + std::int64_t(opts_.parallel.tp_rank) * n * 3;
  vocab_ce_stats(mine, logits_.get(), batch_.targets(), n, v_local_, v_first_, stream);
  if (opts_.parallel.tp > 1) opts_.comm->all_gather_f32(ModelAxis::tp, mine, ce_stats_.get(), n * 3);
  vocab_ce_loss(loss_out_, ce_stats_.get(), opts_.parallel.tp, n, float(dims_.b * seq_), stream);
}

FSDPX_CUDA_MODEL_INSTANTIATE

}  // namespace fsdpx::cuda
