// executor/cuda/device_communicator.cpp — the argument checks shared by every DeviceCommunicator, so the
// NCCL and thread implementations reject the same programmer errors the same way (FSDP_CHECK).
#include "executor/cuda/device_communicator.h"

#include "core/errors.h"
#include "executor/cuda/cuda_check.h"

namespace fsdpx::cuda {

void DeviceCommunicator::send_recv(const std::vector<P2PCall>& calls, DType t, cudaStream_t stream, std::string_view op) {
  throw_if_aborted();
  FSDP_CHECK(is_comm_word(t), "send_recv: messages move fp32 or bf16 words");
  for (const P2PCall& c : calls) {
    FSDP_CHECK(c.count >= 0, "send_recv: count must be non-negative");
    FSDP_CHECK(c.peer >= 0 && c.peer < size(), "send_recv: peer out of range");
    FSDP_CHECK(c.count == 0 || c.buf != nullptr, "send_recv: null device buffer");
  }
  enqueue_p2p(calls, t, stream, op);
}

void DeviceCommunicator::all_to_allv(const void* in, const std::vector<std::int64_t>& send_counts, void* out,
                                     const std::vector<std::int64_t>& recv_counts, DType t, cudaStream_t stream,
                                     std::string_view op) {
  const auto n = std::size_t(size()), me = std::size_t(rank());
  FSDP_CHECK(send_counts.size() == n && recv_counts.size() == n, "all_to_allv: one send and one receive count per rank");
  FSDP_CHECK(send_counts[me] == recv_counts[me], "all_to_allv: own chunk size mismatch");
  const std::size_t word = word_bytes(t);
  std::vector<P2PCall> calls;
  std::int64_t send_at = 0, recv_at = 0;  // elements
  for (std::size_t p = 0; p < n; ++p) {
    auto* src = static_cast<char*>(const_cast<void*>(in)) + std::size_t(send_at) * word;
    auto* dst = static_cast<char*>(out) + std::size_t(recv_at) * word;
    if (p == me && send_counts[p] > 0)
      CUDA_CHECK(cudaMemcpyAsync(dst, src, std::size_t(send_counts[p]) * word, cudaMemcpyDeviceToDevice, stream));
    if (p != me && send_counts[p] > 0) calls.push_back({true, src, send_counts[p], int(p)});
    if (p != me && recv_counts[p] > 0) calls.push_back({false, dst, recv_counts[p], int(p)});
    send_at += send_counts[p], recv_at += recv_counts[p];
  }
  if (!calls.empty()) send_recv(calls, t, stream, op);
}

void DeviceCommunicator::submit(const CollectiveCall& c) {
  throw_if_aborted();
  FSDP_CHECK(c.kind == Collective::all_gather || c.kind == Collective::reduce_scatter ||
                 c.kind == Collective::all_reduce || c.kind == Collective::broadcast,
             std::string(collective_name(c.kind)) + ": not a collective of the device communicators");
  FSDP_CHECK(c.count >= 0, std::string(collective_name(c.kind)) + ": count must be non-negative");
  FSDP_CHECK(is_comm_word(c.type), std::string(collective_name(c.kind)) + ": collectives move fp32 or bf16 words");
  if (c.kind == Collective::broadcast)
    FSDP_CHECK(c.root >= 0 && c.root < size(), "broadcast: root out of range");
  if (c.count > 0) {
    const bool needs_in = c.kind != Collective::broadcast || c.root == rank();
    FSDP_CHECK(c.out != nullptr && (c.in != nullptr || !needs_in),
               std::string(collective_name(c.kind)) + ": null device buffer");
  }
  enqueue(c);
}

}  // namespace fsdpx::cuda
