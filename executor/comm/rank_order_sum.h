// executor/comm/rank_order_sum.h — the reduction of both host communicators (thread_communicator.h and
// tcp_communicator.h): out[i] = srcs[0][offset + i] + srcs[1][offset + i] + ... in rank order 0..n-1, so
// every rank and every run gets the same bits (floating-point addition is not associative: the order is
// fixed). Leaves out chunking and vectorisation: the order is the point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "executor/comm/communicator.h"

namespace fsdpx {

inline std::size_t elem_bytes(ElemType t) { return t == ElemType::f32 ? sizeof(float) : sizeof(double); }

template <class T>
void sum_in_rank_order(const std::vector<const void*>& srcs, std::int64_t offset, std::int64_t count, T* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    T acc = static_cast<const T*>(srcs[0])[offset + i];
    for (std::size_t j = 1; j < srcs.size(); ++j) acc += static_cast<const T*>(srcs[j])[offset + i];
    out[i] = acc;
  }
}

// out [count] = the rank-order sum of srcs[j] [offset, offset + count) in the element type t. In place
// (out inside a source) is safe: each element is read from every source before it is written.
inline void sum_in_rank_order(ElemType t, const std::vector<const void*>& srcs, std::int64_t offset,
                              std::int64_t count, void* out) {
  if (t == ElemType::f32)
    sum_in_rank_order(srcs, offset, count, static_cast<float*>(out));
  else
    sum_in_rank_order(srcs, offset, count, static_cast<double*>(out));
}

}  // namespace fsdpx
