// executor/cuda_backend/cuda_model_comm.h — the CUDA model's tensor- and context-parallel collectives: the
// device twin of ModelComm (executor/model/model_parallel.h) with the same calls by ModelAxis, so that the
// shared tensor-parallel region (executor/model/tp_region.h) runs on either. Every call is enqueued on the
// stream of the op being issued (set_stream) over the device communicator of its group, and recorded with
// the step program's bytes (program/parallel_comms.cpp): activations in the plan's parameter dtype (the
// float model of the emulated build stands in for bf16 and counts 2 bytes), the cross-entropy statistics
// and gradients in fp32. Activations are summed in their own word (bf16), as Megatron-LM's bf16 runs do.
// Expert parallelism's dispatch and combine are variable-count all-to-alls of routed rows on the ep group
// (DeviceCommunicator::all_to_allv), recorded as the CPU's ModelComm records them (the larger of the
// bytes sent and received, in the activation dtype); the row counts before them are not recorded.
// The groups and the record are executor/model/model_comm_base.h's, shared with ModelComm. Leaves out
// profiling the collectives' times (a profiled CUDA run reports its kernels only).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/device_communicator.h"
#include "executor/model/model_comm_base.h"

namespace fsdpx::cuda {

class CudaModelComm final : public ModelCommBase<DeviceCommunicator> {
 public:
  // act_bytes: the program's bytes per activation element (dtype_bytes of the plan's param dtype).
  explicit CudaModelComm(double act_bytes) : ModelCommBase("CudaModelComm"), act_bytes_(act_bytes) {}
  // The stream and op name of the compute op now being issued.
  void set_stream(cudaStream_t stream, std::string op) { stream_ = stream, op_ = std::move(op); }

  // Activations [count] per rank, as ModelComm's (tp_region.h's f and g).
  template <class T>
  void all_gather(ModelAxis axis, const T* in, T* out, std::int64_t count) {
    DeviceCommunicator& c = group(axis);
    c.all_gather(in, out, count, word<T>(), stream_, op_);
    record(axis, Collective::all_gather, double(count) * c.size() * act_bytes_);
  }
  template <class T>
  void reduce_scatter(ModelAxis axis, const T* in, T* out, std::int64_t count) {
    DeviceCommunicator& c = group(axis);
    c.reduce_scatter(in, out, count, word<T>(), stream_, op_);
    record(axis, Collective::reduce_scatter, double(count) * c.size() * act_bytes_);
  }
  template <class T>
  void all_reduce(ModelAxis axis, T* buf, std::int64_t count) {
    group(axis).all_reduce(buf, buf, count, word<T>(), stream_, op_);
    record(axis, Collective::all_reduce, double(count) * act_bytes_);
  }
  template <class T>
  void copy(const T* in, T* out, std::int64_t count) const {
    CUDA_CHECK(cudaMemcpyAsync(out, in, std::size_t(count) * sizeof(T), cudaMemcpyDeviceToDevice, stream_));
  }
  // fp32 statistics [count] per rank (the vocabulary-parallel cross-entropy's).
  void all_gather_f32(ModelAxis axis, const float* in, float* out, std::int64_t count) {
    DeviceCommunicator& c = group(axis);
    c.all_gather(in, out, count, DType::fp32, stream_, op_);
    record(axis, Collective::all_gather, double(count) * c.size() * 4.0);
  }

  // fp32 gradients [count] summed over the group (the replicated tensors' under sequence parallelism).
  void all_reduce_f32(ModelAxis axis, float* buf, std::int64_t count) {
    group(axis).all_reduce(buf, buf, count, DType::fp32, stream_, op_);
    record(axis, Collective::all_reduce, double(count) * 4.0);
  }

  // The ep group's all-to-all of rows `width` elements wide (device buffers; counts in rows, rank order).
  template <class T>
  void all_to_allv_rows(const T* in, const std::vector<std::int64_t>& send_rows, T* out,
                        const std::vector<std::int64_t>& recv_rows, std::int64_t width) {
    std::vector<std::int64_t> send(send_rows), recv(recv_rows);
    const std::int64_t elems = rows_to_elems(send, recv, width);
    group(ModelAxis::ep).all_to_allv(in, send, out, recv, word<T>(), stream_, op_);
    record(ModelAxis::ep, Collective::all_to_all, double(elems) * act_bytes_);
  }
  // fp32 counts [ep·per_rank] -> [ep·per_rank] (the metadata before all_to_allv_rows; not recorded).
  void exchange_counts_f32(const float* in, float* out, std::int64_t per_rank) {
    DeviceCommunicator& c = group(ModelAxis::ep);
    const std::vector<std::int64_t> counts(std::size_t(c.size()), per_rank);
    c.all_to_allv(in, counts, out, counts, DType::fp32, stream_, op_);
  }
  cudaStream_t stream() const { return stream_; }

 private:
  // Summed activations travel in their own 16-bit word (bf16) or, for the float model, fp32.
  template <class T>
  static DType word() {
    return sizeof(T) == 4 ? DType::fp32 : DType::bf16;
  }
  double act_bytes_;
  cudaStream_t stream_ = nullptr;
  std::string op_;
};

}  // namespace fsdpx::cuda
