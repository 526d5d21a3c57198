// executor/cuda/rank_sum.h — the reduction kernel of the in-process device communicator
// (device_thread_communicator.h): every element is an fp32 sum of the ranks' inputs taken in rank order
// 0, 1, ..., n-1 and rounded once, so every rank computes the same bits as the host ThreadCommunicator's
// rank-order fold (exactly, for f32). Leaves out tree/pairwise orders and vectorised loads.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

constexpr int kMaxRankSumInputs = 64;

// Device pointers to the n ranks' inputs, in rank order (passed to the kernel by value: 520 bytes).
struct RankInputs {
  const void* ptr[kMaxRankSumInputs] = {};
  int n = 0;
};

// out[i] = round(float(in_0[offset + i]) + float(in_1[offset + i]) + ... + float(in_{n-1}[offset + i]))
// for i in [0, count), added left to right in fp32; bf16 output rounds to nearest even. `out` may be
// in_j + offset for one j (in place): each element is read by the thread that writes it.
void sum_in_rank_order(float* out, const RankInputs& in, std::int64_t offset, std::int64_t count,
                       cudaStream_t stream);
void sum_in_rank_order(bf16* out, const RankInputs& in, std::int64_t offset, std::int64_t count,
                       cudaStream_t stream);

}  // namespace fsdpx::cuda
