// executor/cuda_backend/cuda_unit.h — the GPU's device policy of an FSDP unit (executor/model/fsdp_unit.h,
// the one unit both backends run): stream-ordered device arrays (cudaMallocAsync, cudaFreeAsync on the
// stream of the op that ends them), the device communicators, a 16-bit copy (T = bf16, or f16 for fp16
// plans; float in the emulated build) of the master shard as the all-gather input, gradients reduced in
// fp32 or a bf16 copy (FSDP2's MixedPrecisionPolicy.reduce_dtype), fp16 gradients rounded through fp16
// first. Every call runs on the backend's current op's stream, named in watchdog messages. In-place
// conventions as NCCL's (NCCL user guide, "In-place Operations"); AdamW writes the 16-bit copy with the
// master. Leaves out rate limiting (the step program bounds live units).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#include "executor/cuda/adamw.h"
#include "executor/cuda/cast.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/device_communicator.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/model/fsdp_unit.h"

namespace fsdpx::cuda {

// The communicator word of T buffers that are only copied (all-gather, pipeline messages): 2-byte words
// for bf16 and f16 (nothing is summed), fp32 for the float model of the emulated build (tests/cuda/emulated).
template <class T>
constexpr DType copy_dtype() {
  return sizeof(T) == 4 ? DType::fp32 : DType::bf16;
}

// An owned device array from cudaMallocAsync, move-only; the policy frees it on a stream (take), the
// destructor, which runs after the backend synchronised its streams, with a plain cudaFree.
template <class E>
class StreamArray {
 public:
  StreamArray() = default;
  explicit StreamArray(E* p) : p_(p) {}
  ~StreamArray() { reset(); }
  StreamArray(StreamArray&& o) noexcept : p_(o.take()) {}
  StreamArray& operator=(StreamArray&& o) noexcept {
    if (this != &o) reset(), p_ = o.take();
    return *this;
  }
  E* data() const { return p_; }
  E* take() { return std::exchange(p_, nullptr); }

 private:
  void reset() {
    if (p_) CUDA_CHECK_NOEXCEPT(cudaFree(take()));
  }
  E* p_ = nullptr;
};

// An event created at its first record, destroyed with its owner.
class StreamEvent {
 public:
  StreamEvent() = default;
  ~StreamEvent() {
    if (e_) CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e_));
  }
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  void record(cudaStream_t s) {
    if (!e_) CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(e_, s));
  }
  void wait(cudaStream_t s) const {
    if (e_) CUDA_CHECK(cudaStreamWaitEvent(s, e_, 0));
  }

 private:
  cudaEvent_t e_ = nullptr;
};

// The AdamW kernel's arguments of one optimizer step (the units' and the adapters').
inline AdamWArgs adamw_args(const OptimizerSettings& o, const AdamWStep& s) {
  return {float(s.lr), float(o.beta1), float(o.beta2), float(o.eps), float(o.weight_decay), s.t, float(s.grad_scale)};
}

template <class T>
struct CudaUnitDevice {
  using Param = T;
  using Comm = DeviceCommunicator;
  using Bf16 = bf16;
  template <class E>
  using Array = StreamArray<E>;
  static constexpr bool kParamCopy = true;   // the 16-bit shard is the all-gather input
  static constexpr bool kReduceBf16 = true;  // gradients reduce in fp32 or a bf16 copy
  static constexpr const char* kName = "CudaUnit";
  using Event = StreamEvent;  // orders a buffer written on one op's stream before a read on another's

  const cudaStream_t* stream = nullptr;  // the backend's current op's stream
  const std::string* op = nullptr;       // and the op's name
  // Bytes counted per parameter element: the plan's parameter dtype (the program's kept-copy bytes),
  // sizeof(T) on a GPU; the emulated build's float model counts a bf16 plan's 2, as CudaModelComm does.
  double param_bytes = double(sizeof(T));

  template <class E>
  Array<E> alloc(std::int64_t n) const {  // at least one element: no zero-size cudaMallocAsync
    void* p = nullptr;
    CUDA_CHECK(cudaMallocAsync(&p, std::size_t(std::max<std::int64_t>(1, n)) * sizeof(E), *stream));
    return Array<E>(static_cast<E*>(p));
  }
  template <class E>
  void free(Array<E>& a) const {
    if (E* p = a.take()) CUDA_CHECK(cudaFreeAsync(p, *stream));
  }
  void record(Event& e) const { e.record(*stream); }
  void wait(const Event& e) const { e.wait(*stream); }
  void zero(float* p, std::int64_t n) const { CUDA_CHECK(cudaMemsetAsync(p, 0, std::size_t(n) * sizeof(float), *stream)); }
  template <class E>
  void copy(E* dst, const E* src, std::int64_t n) const {
    if (n > 0) CUDA_CHECK(cudaMemcpyAsync(dst, src, std::size_t(n) * sizeof(E), cudaMemcpyDeviceToDevice, *stream));
  }

  void all_gather(Comm& c, const T* in, T* out, std::int64_t n) const {
    c.all_gather(in, out, n, copy_dtype<T>(), *stream, *op);
  }
  template <class E>
  void reduce_scatter(Comm& c, const E* in, E* out, std::int64_t n) const {
    c.reduce_scatter(in, out, n, word<E>(), *stream, *op);
  }
  template <class E>
  void all_reduce(Comm& c, E* buf, std::int64_t n) const { c.all_reduce(buf, buf, n, word<E>(), *stream, *op); }
  void round_fp16(float* p, std::int64_t n) const {  // fp16 plans: the values of an fp16 gradient
    if constexpr (std::is_same_v<T, f16>) round_through_f16(p, n, *stream);
  }
  void cast_bf16(bf16* out, const float* in, std::int64_t n) const { cast_f32_to_bf16(out, in, n, *stream); }
  void widen_bf16(float* out, const bf16* in, std::int64_t n) const { cast_bf16_to_f32(out, in, n, false, *stream); }
  void accumulate_check_finite(float* acc, const float* add, std::int64_t n, int* non_finite) const {
    cuda::accumulate_check_finite(acc, add, n, non_finite, *stream);
  }
  void adamw(const OptimizerSettings& o, const AdamWStep& s, float* master, float* exp_avg, float* exp_avg_sq,
             const float* grad, T* copy, std::int64_t n) const {
    adamw_update(adamw_args(o, s), master, exp_avg, exp_avg_sq, grad, copy, n, *stream);
  }
  // Host <-> device state, synchronous on the stream: masters and moments; the T copy is cast from the master.
  void upload(const UnitShardState& s, float* master, float* exp_avg, float* exp_avg_sq, T* copy, std::int64_t n) const;
  void download(const float* master, const float* exp_avg, const float* exp_avg_sq, std::int64_t n,
                UnitShardState& s) const;

 private:
  template <class E>
  static constexpr DType word() {
    static_assert(std::is_same_v<E, float> || std::is_same_v<E, bf16>, "gradients reduce in fp32 or bf16");
    return std::is_same_v<E, float> ? DType::fp32 : DType::bf16;
  }
};

template <class T>
using CudaUnitT = FsdpUnitT<CudaUnitDevice<T>>;
using CudaUnit = CudaUnitT<bf16>;

}  // namespace fsdpx::cuda
