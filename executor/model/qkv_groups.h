// executor/model/qkv_groups.h — tensor parallelism with fewer KV heads than tp ranks, as Megatron-LM
// runs it (megatron/core/transformer/attention.py: the num_query_groups < world_size branches of
// Attention.__init__ and SelfAttention.get_query_key_value_tensors): the fused qkv rows, ordered by
// query group ([group g: its query heads, K head g, V head g]), are split evenly, so a rank's GEMM
// output is part of a group; the outputs are all-gathered over tp and each rank keeps its group's K
// and V (replicated on the tp/kv_heads ranks of the group) and its own heads/tp query heads. The
// backward reduce-scatters the gradient, summing the K and V gradients of the ranks sharing a group.
// Leaves out kv_heads that neither divide nor are a multiple of tp (rejected by the layout).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/model_parallel.h"

namespace fsdpx {

// For each column of the rank's attention input [Q_local heads, K, V] (Q_local = heads/tp heads, one
// KV head), its column in the group-ordered full qkv output [N, Q + 2·KV].
std::vector<std::int64_t> query_group_columns(const ModelSpec& m, const ModelParallel& par);

// part [N, rows] (this rank's GEMM output, rows = (Q + 2·KV) / tp) -> all [tp, N, rows] (gathered) ->
// out [N, columns.size()] (the rank's attention input).
template <class Real>
void gather_query_group(ModelComm& comm, const std::vector<std::int64_t>& columns, const Real* part, Real* all,
                        Real* out, std::int64_t n, std::int64_t rows);

// dout [N, columns.size()] -> dall [tp, N, rows] (scattered, zeros elsewhere) -> dpart [N, rows], the
// sum over the tp ranks of their gradients of this rank's GEMM output.
template <class Real>
void gather_query_group_backward(ModelComm& comm, const std::vector<std::int64_t>& columns, const Real* dout,
                                 Real* dall, Real* dpart, std::int64_t n, std::int64_t rows, int tp);

}  // namespace fsdpx
