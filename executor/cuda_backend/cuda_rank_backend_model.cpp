// executor/cuda_backend/cuda_rank_backend_model.cpp — the device half of the CUDA rank backend's model
// ops (see cuda_rank_backend.h; the passes themselves are model_skeleton.h's): per micro-batch in flight a
// CudaModel from the pool, what starts a pass (a received message delivered, the loss's slot), the
// pipeline's sends and receives of 16-bit (T) activations and activation gradients
// through staging memory, and the losses. The staging buffers ([N, C] T per message in flight) are not
// counted in the memory tracker.
#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_rank_backend.h"

namespace fsdpx::cuda {

// Every model of the pool allocates its activations and scratch once; the tracker counts the scratch
// (working bytes) per model as transient, the activations per segment as they are saved (segment_bytes:
// counts_working_per_pass is false).
template <class T>
std::unique_ptr<CudaModelT<T>> CudaRankBackendT<T>::make_model() {
  use_device();
  auto m = std::make_unique<CudaModelT<T>>(rp_.settings.model, rp_.settings.training.micro_batch, rp_.settings.training.seq,
                                       model_options_, *gemm_);
  mem_.alloc(MemCategory::transient, double(m->working_bytes()));
  return m;
}

template <class T>
template <class Dst>
bool CudaRankBackendT<T>::deliver(int mb, Payload payload, Dst dst) {
  const auto it = inbox_.find({mb, int(payload)});
  if (it == inbox_.end()) return false;
  const Inbound in = it->second;
  inbox_.erase(it);
  T* to = dst();
  CUDA_CHECK(cudaStreamWaitEvent(current_, in.done, 0));
  CUDA_CHECK(cudaEventDestroy(in.done));  // released once the wait's record completes
  const std::int64_t n = pipeline_message_numel(rp_, Base::par_);
  CUDA_CHECK(cudaMemcpyAsync(to, in.staging, std::size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, current_));
  CUDA_CHECK(cudaFreeAsync(in.staging, current_));
  return true;
}

// On the compute stream, where the model is used, also when the runtime calls it for a receive.
template <class T>
void CudaRankBackendT<T>::set_micro_batch(int mb, const std::int32_t* tokens, const std::int32_t* targets) {
  use_device();
  models_.at(mb).set_batch(tokens, targets, stream(StreamKind::compute));
}

// The received activations (the forward) or their gradient (the backward) go into the model on the
// current stream; the head's loss goes to the step's next slot.
template <class T>
void CudaRankBackendT<T>::enter_forward(Model& model, const Segment& seg, int mb, bool head) {
  deliver(mb, Payload::activations, [&] { return model.input_buffer(seg.first_module); });
  if (!head) return;
  FSDP_CHECK(losses_written_ < losses_.size(), "CudaRankBackend: more micro-batches than grad_accum");
  model.set_loss_output(losses_.get() + losses_written_);
}

template <class T>
void CudaRankBackendT<T>::enter_backward(Model& model, const Segment& seg, int mb) {
  const int last = seg.first_module + seg.module_count - 1;
  deliver(mb, Payload::activation_grads, [&] { return model.output_grad_buffer(last); });
}

// Messages pair in issue order on their channel (NCCL has no tags; the lowering issues a channel's sends
// and receives in the same order, tests/executor/test_pipeline_message_order.cpp), so `tag` is not
// needed; `peer` is the channel's other rank, checked.
template <class T>
DeviceCommunicator& CudaRankBackendT<T>::channel(Payload payload, bool sending, int peer) const {
  const int pp = rp_.program.pp;
  const bool activations = payload == Payload::activations;
  const bool to_next = activations == sending;  // activations go to the next pipeline rank, gradients back
  const int peer_role = (role_ + (to_next ? 1 : pp - 1)) % pp;
  FSDP_CHECK(peer == global_rank(rp_, peer_role, mesh_rank_),
             fmt::format("CudaRankBackend: a message with rank {}, not with the neighbour on its channel", peer));
  const auto& c = activations ? (sending ? act_send_ : act_recv_) : (sending ? grad_send_ : grad_recv_);
  FSDP_CHECK(c != nullptr, "CudaRankBackend: no point-to-point channel (pp = 1)");
  return *c;
}

// The message is copied on the compute stream, right behind the op that made it, into stream-ordered
// staging memory that the send reads and frees on its own stream.
template <class T>
void CudaRankBackendT<T>::post_send(const T* data, Payload payload, int peer, int) {
  const std::int64_t n = pipeline_message_numel(rp_, Base::par_);
  const cudaStream_t compute = stream(StreamKind::compute);
  void* staging = nullptr;
  CUDA_CHECK(cudaMallocAsync(&staging, std::size_t(n) * sizeof(T), compute));
  CUDA_CHECK(cudaMemcpyAsync(staging, data, std::size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, compute));
  cudaEvent_t staged = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&staged, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(staged, compute));
  CUDA_CHECK(cudaStreamWaitEvent(current_, staged, 0));
  CUDA_CHECK(cudaEventDestroy(staged));
  channel(payload, true, peer).send_recv({P2PCall{true, staging, n, 1}}, copy_dtype<T>(), current_, current_op_);
  CUDA_CHECK(cudaFreeAsync(staging, current_));
}

// The message lands in stream-ordered staging memory on the receive's stream; the op that reads it
// copies it into the micro-batch's model (deliver).
template <class T>
void CudaRankBackendT<T>::recv(Payload payload, int, int mb, int peer, int) {
  const std::int64_t n = pipeline_message_numel(rp_, Base::par_);
  Inbound in;
  CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&in.staging), std::size_t(n) * sizeof(T), current_));
  channel(payload, false, peer).send_recv({P2PCall{false, in.staging, n, 0}}, copy_dtype<T>(), current_, current_op_);
  CUDA_CHECK(cudaEventCreateWithFlags(&in.done, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(in.done, current_));
  const bool fresh = inbox_.emplace(std::pair{mb, int(payload)}, in).second;
  FSDP_CHECK(fresh, fmt::format("CudaRankBackend: a second message for micro-batch {} before the first was read", mb));
}

template <class T>
std::vector<double> CudaRankBackendT<T>::take_losses() {
  use_device();
  std::vector<float> host(static_cast<std::size_t>(losses_written_));
  CUDA_CHECK(cudaStreamSynchronize(stream(StreamKind::compute)));
  world_->throw_if_aborted();  // an aborted collective leaves garbage behind
  if (!host.empty())
    CUDA_CHECK(cudaMemcpy(host.data(), losses_.get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  losses_written_ = 0;
  return std::vector<double>(host.begin(), host.end());
}

// The members defined here (cuda_rank_backend.cpp instantiates the class with the others).
#define FSDPX_INSTANTIATE(T)                                                                                     \
  template std::unique_ptr<CudaModelT<T>> CudaRankBackendT<T>::make_model();                                    \
  template void CudaRankBackendT<T>::set_micro_batch(int, const std::int32_t*, const std::int32_t*);            \
  template void CudaRankBackendT<T>::enter_forward(CudaModelT<T>&, const Segment&, int, bool);                  \
  template void CudaRankBackendT<T>::enter_backward(CudaModelT<T>&, const Segment&, int);                       \
  template DeviceCommunicator& CudaRankBackendT<T>::channel(Payload, bool, int) const;                          \
  template void CudaRankBackendT<T>::post_send(const T*, Payload, int, int);                                    \
  template void CudaRankBackendT<T>::recv(Payload, int, int, int, int);                                         \
  template std::vector<double> CudaRankBackendT<T>::take_losses();
FSDPX_CUDA_MODEL_TYPES(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
