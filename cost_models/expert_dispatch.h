// cost_models/expert_dispatch.h — one MoE block's routed load on the slowest expert-parallel rank and its
// token dispatch and combine all-to-alls: rows each rank sends and receives (tokens x top_k, as
// torchtitan's and Megatron-Core's all-to-all dispatchers send one row per token-expert pair), bytes per
// peer pair, and their time as the ep - 1 point-to-point sends NCCL runs for an all-to-all. Leaves out
// DeepEP's kernels, token dropping (dropless routing assumed) and fp8 dispatch.
#pragma once

#include <cstdint>

#include "core/cluster_spec.h"
#include "core/dtype.h"
#include "core/expert_parallel.h"
#include "core/model_spec.h"
#include "cost_models/communication.h"

namespace fsdpx {

// One MoE block, one micro-batch, one rank of a plan with this ep.
struct RoutedLoad {
  double tokens = 0;              // tokens entering the block on the rank: micro_batch x seq / cp
  double mean_rows = 0;           // token-expert pairs a rank's experts process on average: tokens x top_k
  double slowest_rows = 0;        // on the slowest ep rank: mean_rows x min(imbalance, ep) (ep 1: mean_rows)
  std::int64_t local_experts = 0;  // experts / ep
  double rows_per_expert = 0;     // slowest_rows / local_experts: the grouped GEMM's per-expert M
};

// With ep ranks each sending tokens x top_k rows, a rank receives tokens x top_k rows on average; the
// imbalance (core/expert_parallel.h) scales the slowest rank's share, capped at ep (every row on it).
// At ep 1 every rank runs its own tokens through every expert, so no rank waits for another.
RoutedLoad routed_load(const ModelSpec& m, std::int64_t micro_batch, std::int64_t seq, const Parallelism& p,
                       const MoeRouting& r);

// nccl-tests' S for one dispatch (or combine) all-to-all: the whole send buffer of one rank,
// tokens x top_k x hidden x dtype bytes (nccl-tests src/alltoall.cu: sendcount x nranks elements).
double dispatch_all_to_all_bytes(const ModelSpec& m, const RoutedLoad& l, DType dispatch);
// What one rank sends each peer: S / ep (equal splits on average).
double dispatch_bytes_per_peer(double all_to_all_bytes, int ep);

// Time of one dispatch or combine all-to-all on the slowest rank, whose receive side carries
// min(imbalance, ep) x the mean. PyTorch's all_to_all_single runs it as ncclGroupStart, one ncclSend
// and one ncclRecv per peer, ncclGroupEnd (torch/csrc/cuda/nccl.cpp all2all_single_equal_split and
// all2all_single_unequal_split; nccl-tests src/alltoall.cu the same), so the ep - 1 peer transfers run
// concurrently: those inside the node share the GPU's NVLink bandwidth, those across nodes its share of
// the node's NICs (cost_models/communication.h, Collective::all_to_all).
double dispatch_time_s(double all_to_all_bytes, double slowest_over_mean, const GroupShape& ep_group,
                       const ClusterSpec& cluster);

// The ep group as it lies on fsdpx's mesh (dp_replicate, dp_shard, cp, tp): ep consecutive dp_shard x cp
// coordinates, tp ranks apart, as torchtitan's _build_mesh_with_ep orders [dp_shard_mod_ep,
// dp_shard_in_ep, cp, tp] (parallel_dims.py, the ep mesh flattened from dp_shard_in_ep and cp); so
// ranks_per_node = gpus_per_node / tp, capped at ep.
GroupShape ep_group_shape(const Parallelism& p, const ClusterSpec& cluster);

}  // namespace fsdpx
